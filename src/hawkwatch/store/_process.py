"""What the OS says about a process: when it started, whether it is still the same process."""

from __future__ import annotations

import os
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Final

MAX_PID: Final = 2**31
"""Pids are C ints; a larger number (a damaged ``session.json``) names no process."""


def process_start_time(pid: int | None = None) -> float:
    """When a process started (Unix s); now if the OS will not say (hidden /proc, gone).

    On Linux this is exact to a clock tick (10 ms): psutil adds the start tick to the boot time,
    which the kernel reports in whole seconds, so its answer can be up to a second off.
    """
    precise = _linux_start_time(pid)
    if precise is not None:
        return precise
    import psutil  # imported on demand: ~20 ms that Linux start-up does not need

    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.Error, OSError):
        return time.time()


def _linux_start_time(pid: int | None) -> float | None:
    try:
        with open(f"/proc/{pid or 'self'}/stat", "rb") as f:
            stat = f.read()
        # Field 22 (starttime, in clock ticks since boot) counts from after the ")" of the name.
        start_ticks = int(stat[stat.rindex(b")") + 2 :].split()[19])
        ticks_per_second = os.sysconf("SC_CLK_TCK")
        since_boot = time.clock_gettime(time.CLOCK_BOOTTIME)
        now = time.time()
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    return now - (since_boot - start_ticks / ticks_per_second)


def is_same_process_alive(pid: int, start_time: float) -> bool:
    """True when ``pid`` runs and started at ``start_time`` (so it is not a reused pid)."""
    if os.path.isdir("/proc/self"):  # Linux: /proc answers both, without importing psutil
        started = _linux_start_time(pid)
        return started is not None and abs(started - start_time) < 1.0
    import psutil

    if isinstance(pid, bool) or not 0 < pid < MAX_PID:  # read from a file: may be anything
        return False
    try:
        if not psutil.pid_exists(pid):
            return False
    except (OverflowError, ValueError, psutil.Error, OSError):
        return False
    return abs(process_start_time(pid) - start_time) < 1.0
