"""The built-in monitors, one module each, and which of them a config enables."""

from __future__ import annotations

from collections.abc import Callable

from hawkwatch.agent.monitor import Monitor
from hawkwatch.agent.plugins.cpu_highload import CpuHighLoadMonitor
from hawkwatch.agent.plugins.crash import CrashMonitor
from hawkwatch.agent.plugins.gc_pause import GcPauseMonitor
from hawkwatch.agent.plugins.imports import ImportTimeMonitor
from hawkwatch.agent.plugins.io_canary import IoMonitor
from hawkwatch.agent.plugins.launch import LaunchMonitor
from hawkwatch.agent.plugins.network import NetworkMonitor
from hawkwatch.agent.plugins.profiler import ProfilerMonitor
from hawkwatch.agent.plugins.resources import ResourcesMonitor
from hawkwatch.agent.plugins.stall import StallMonitor
from hawkwatch.agent.plugins.upload import UploadMonitor
from hawkwatch.config import Config

__all__ = [
    "CpuHighLoadMonitor",
    "CrashMonitor",
    "GcPauseMonitor",
    "ImportTimeMonitor",
    "IoMonitor",
    "LaunchMonitor",
    "NetworkMonitor",
    "ProfilerMonitor",
    "ResourcesMonitor",
    "StallMonitor",
    "UploadMonitor",
    "default_monitors",
]


def default_monitors(config: Config) -> list[Callable[[], Monitor]]:
    """Factories of the built-in monitors that ``config`` switches on, in start order."""
    chosen: list[Callable[[], Monitor]] = []
    if config.crash.enabled:  # first: its hooks should see crashes in the others' start
        chosen.append(CrashMonitor)
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
    if config.network.enabled:
        chosen.append(NetworkMonitor)
    if config.profiler.enabled:
        chosen.append(ProfilerMonitor)
    if config.upload.url and config.upload.key:
        chosen.append(UploadMonitor)
    if config.io.enabled:
        chosen.append(IoMonitor)
    return chosen
