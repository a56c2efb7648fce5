"""The built-in monitors, one module each, and which of them a config enables.

A monitor's module is imported only when the config switches it on (the profiler, off by
default, costs nothing at start-up); ``hawkwatch.agent.plugins.StallMonitor`` and the like still
work, imported on first access.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hawkwatch.agent.monitor import Monitor
from hawkwatch.config import Config

if TYPE_CHECKING:
    from hawkwatch.agent.plugins.cpu_highload import CpuHighLoadMonitor
    from hawkwatch.agent.plugins.gc_pause import GcPauseMonitor
    from hawkwatch.agent.plugins.imports import ImportTimeMonitor
    from hawkwatch.agent.plugins.launch import LaunchMonitor
    from hawkwatch.agent.plugins.profiler import ProfilerMonitor
    from hawkwatch.agent.plugins.resources import ResourcesMonitor
    from hawkwatch.agent.plugins.stall import StallMonitor

__all__ = [
    "CpuHighLoadMonitor",
    "GcPauseMonitor",
    "ImportTimeMonitor",
    "LaunchMonitor",
    "ProfilerMonitor",
    "ResourcesMonitor",
    "StallMonitor",
    "default_monitors",
]

# class name -> (module, config section), in start order
_MONITORS = {
    "LaunchMonitor": ("launch", "launch"),
    "ImportTimeMonitor": ("imports", "imports"),
    "GcPauseMonitor": ("gc_pause", "gc"),
    "ResourcesMonitor": ("resources", "resources"),
    "StallMonitor": ("stall", "stall"),
    "CpuHighLoadMonitor": ("cpu_highload", "cpu"),
    "ProfilerMonitor": ("profiler", "profiler"),
}


def default_monitors(config: Config) -> list[Callable[[], Monitor]]:
    """Factories of the built-in monitors that ``config`` switches on, in start order."""
    chosen: list[Callable[[], Monitor]] = []
    for class_name, (_module, section) in _MONITORS.items():
        if getattr(config, section).enabled:
            chosen.append(_monitor_class(class_name))
    return chosen


def _monitor_class(class_name: str) -> Any:
    module = importlib.import_module(f"{__name__}.{_MONITORS[class_name][0]}")
    return getattr(module, class_name)


def __getattr__(name: str) -> Any:
    if name in _MONITORS:
        return _monitor_class(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
