"""The built-in monitors, one module each, and which of them a config enables.

A monitor's module is imported only when the config switches it on (the profiler, off by
default, costs nothing at start-up); ``hawkwatch.agent.plugins.StallMonitor`` and the like still
work, imported on first access.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from hawkwatch.agent.monitor import Monitor
from hawkwatch.config import Config

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from hawkwatch.agent.plugins.cpu_highload import CpuHighLoadMonitor
    from hawkwatch.agent.plugins.crash import CrashMonitor
    from hawkwatch.agent.plugins.gc_pause import GcPauseMonitor
    from hawkwatch.agent.plugins.imports import ImportTimeMonitor
    from hawkwatch.agent.plugins.io_canary import IoMonitor
    from hawkwatch.agent.plugins.launch import LaunchMonitor
    from hawkwatch.agent.plugins.memory import MemoryMonitor
    from hawkwatch.agent.plugins.network import NetworkMonitor
    from hawkwatch.agent.plugins.profiler import ProfilerMonitor
    from hawkwatch.agent.plugins.resources import ResourcesMonitor
    from hawkwatch.agent.plugins.stall import StallMonitor
    from hawkwatch.agent.plugins.upload import UploadMonitor

__all__ = [
    "CpuHighLoadMonitor",
    "CrashMonitor",
    "GcPauseMonitor",
    "ImportTimeMonitor",
    "IoMonitor",
    "LaunchMonitor",
    "MemoryMonitor",
    "NetworkMonitor",
    "ProfilerMonitor",
    "ResourcesMonitor",
    "StallMonitor",
    "UploadMonitor",
    "default_monitors",
]

# class name -> (module, config section), in start order
_MONITORS = {
    "CrashMonitor": ("crash", "crash"),  # first: its hooks should see crashes in the others' start
    "LaunchMonitor": ("launch", "launch"),
    "ImportTimeMonitor": ("imports", "imports"),
    "GcPauseMonitor": ("gc_pause", "gc"),
    "ResourcesMonitor": ("resources", "resources"),
    "StallMonitor": ("stall", "stall"),
    "CpuHighLoadMonitor": ("cpu_highload", "cpu"),
    "MemoryMonitor": ("memory", "memory"),
    "NetworkMonitor": ("network", "network"),
    "ProfilerMonitor": ("profiler", "profiler"),
    "UploadMonitor": ("upload", "upload"),
    "IoMonitor": ("io_canary", "io"),
}


def default_monitors(config: Config) -> list[Callable[[], Monitor]]:
    """Factories of the built-in monitors that ``config`` switches on, in start order."""
    chosen: list[Callable[[], Monitor]] = []
    for class_name, (_module, section) in _MONITORS.items():
        if _enabled(config, section):
            chosen.append(_monitor_class(class_name))
    return chosen


def _enabled(config: Config, section: str) -> bool:
    if section == "upload":  # on when it has somewhere to send
        return bool(config.upload.url and config.upload.key)
    return bool(getattr(config, section).enabled)


def _monitor_class(class_name: str) -> Any:
    module = f"{__name__}.{_MONITORS[class_name][0]}"
    __import__(module)  # importlib.import_module, without importing importlib at start
    return getattr(sys.modules[module], class_name)


def __getattr__(name: str) -> Any:
    if name in _MONITORS:
        return _monitor_class(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
