"""The built-in monitors, one module each, and which of them a config enables."""

from __future__ import annotations

from collections.abc import Callable

from hawkwatch.agent.monitor import Monitor
from hawkwatch.agent.plugins.cpu_highload import CpuHighLoadMonitor
from hawkwatch.agent.plugins.gc_pause import GcPauseMonitor
from hawkwatch.agent.plugins.imports import ImportTimeMonitor
from hawkwatch.agent.plugins.launch import LaunchMonitor
from hawkwatch.agent.plugins.memory import MemoryMonitor
from hawkwatch.agent.plugins.profiler import ProfilerMonitor
from hawkwatch.agent.plugins.resources import ResourcesMonitor
from hawkwatch.agent.plugins.stall import StallMonitor
from hawkwatch.config import Config

__all__ = [
    "CpuHighLoadMonitor",
    "GcPauseMonitor",
    "ImportTimeMonitor",
    "LaunchMonitor",
    "MemoryMonitor",
    "ProfilerMonitor",
    "ResourcesMonitor",
    "StallMonitor",
    "default_monitors",
]


def default_monitors(config: Config) -> list[Callable[[], Monitor]]:
    """Factories of the built-in monitors that ``config`` switches on, in start order."""
    chosen: list[Callable[[], Monitor]] = []
    if config.launch.enabled:
        chosen.append(LaunchMonitor)
    if config.imports.enabled:
        chosen.append(ImportTimeMonitor)
    if config.gc.enabled:
        chosen.append(GcPauseMonitor)
    if config.resources.enabled:
        chosen.append(ResourcesMonitor)
    if config.stall.enabled:
        chosen.append(StallMonitor)
    if config.cpu.enabled:
        chosen.append(CpuHighLoadMonitor)
    if config.memory.enabled:
        chosen.append(MemoryMonitor)
    if config.profiler.enabled:
        chosen.append(ProfilerMonitor)
    return chosen
