"""What the OS says about a process: when it started, whether it is still the same process."""

from __future__ import annotations

import time

import psutil


def process_start_time(pid: int | None = None) -> float:
    """When a process started (Unix s); now if the OS will not say (hidden /proc, gone)."""
    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.Error, OSError):
        return time.time()


def is_same_process_alive(pid: int, start_time: float) -> bool:
    """True when ``pid`` runs and started at ``start_time`` (so it is not a reused pid)."""
    try:
        return abs(float(psutil.Process(pid).create_time()) - start_time) < 1.0
    except (psutil.Error, OSError):
        return False
