"""CPU time of each thread of this process, and which Python thread each one is.

The Python counterpart of MTHawkeye's Mach-thread → NSThread mapping: the OS reports CPU per
native thread id; ``threading.get_native_id`` ties it to a Python thread (name, ident, stack).

* Linux: the thread's CPU-time clock, ``clock_gettime`` of the clock id the kernel derives from
  the thread id (``(~tid << 3) | 6``, what glibc's ``pthread_getcpuclockid`` returns): exact to
  the nanosecond, and ``time.clock_gettime`` never releases the GIL, so the profiler's sample stays
  one uninterrupted GIL hold (a file read would hand the GIL to another thread and wait up to the
  5 ms switch interval to get it back). An id of a thread that ended is just an error (EINVAL).
  Fallbacks: ``/proc/self/task/<tid>/schedstat`` (nanoseconds on CPU), else ``utime + stime``
  from ``/proc/self/task/<tid>/stat`` (clock ticks, usually 10 ms).
* Elsewhere: ``psutil.Process().threads()`` (user + system seconds).

Listing the threads reads ``/proc/self/task``. Threads that ended between listing and reading
are left out, never an error.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Final

_TASKS: Final = "/proc/self/task"


class ThreadCpu:
    """One thread's CPU seconds so far; ``thread`` is None for threads Python did not start."""

    __slots__ = ("cpu_s", "native_id", "thread")

    def __init__(self, native_id: int, cpu_s: float, thread: threading.Thread | None) -> None:
        self.native_id = native_id
        self.cpu_s = cpu_s
        self.thread = thread

    def __repr__(self) -> str:
        return f"ThreadCpu({self.native_id!r}, {self.cpu_s!r}, {self.thread!r})"

    @property
    def name(self) -> str:
        return self.thread.name if self.thread is not None else f"native-{self.native_id}"

    @property
    def ident(self) -> int | None:
        return self.thread.ident if self.thread is not None else None


def _read(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 1024)
    finally:
        os.close(fd)


def _schedstat_seconds(tid: int) -> float:
    return int(_read(f"{_TASKS}/{tid}/schedstat").split()[0]) / 1e9


_TICK_S: Final = 1.0 / (os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100)


def _stat_seconds(tid: int) -> float:
    data = _read(f"{_TASKS}/{tid}/stat")
    fields = data[data.rindex(b")") + 2 :].split()  # the name may hold spaces and parentheses
    return (int(fields[11]) + int(fields[12])) * _TICK_S  # utime, stime: fields 14 and 15


def _clock_seconds(tid: int) -> float:
    if not 0 < tid < 1 << 28:  # the clock id must fit a C int
        raise ValueError(f"thread id {tid} out of range")
    return time.clock_gettime((~tid << 3) | 6)  # MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)


def _clock_works(me: int) -> bool:
    try:
        return abs(_clock_seconds(me) - time.thread_time()) < 0.01
    except (OSError, OverflowError, AttributeError):
        return False


def _pick_linux_reader() -> Callable[[int], float] | None:
    if not sys.platform.startswith("linux") or not os.path.isdir(_TASKS):
        return None
    me = threading.get_native_id()
    if _clock_works(me):
        return _clock_seconds
    try:
        _schedstat_seconds(me)
        return _schedstat_seconds
    except (OSError, ValueError, IndexError):
        pass
    try:
        _stat_seconds(me)
        return _stat_seconds
    except (OSError, ValueError, IndexError):
        return None


class ThreadCpuReader:
    """Reads every thread's CPU time; ``source`` names where the numbers come from."""

    def __init__(self) -> None:
        self._linux = _pick_linux_reader()
        self._fds: dict[int, int] = {}  # native id -> open schedstat file, for cpu_seconds_fast
        names: dict[Callable[[int], float], str] = {
            _clock_seconds: "clock",
            _schedstat_seconds: "schedstat",
            _stat_seconds: "stat",
        }
        if self._linux is not None:
            self.source = names[self._linux]
        else:
            self.source = "psutil" if _has_psutil() else "none"

    def cpu_seconds(self, native_id: int) -> float | None:
        """CPU seconds of one thread, or None when it is gone or cannot be read."""
        if self._linux is not None:
            try:
                return self._linux(native_id)
            except (OSError, ValueError, IndexError, OverflowError):
                return None
        return self.read_all().get(native_id)

    def cpu_seconds_fast(self, native_id: int) -> float | None:
        """Like ``cpu_seconds``; with the ``schedstat`` fallback it keeps the file open.

        ``pread`` at offset 0 regenerates a ``/proc`` file, so one open per thread replaces an
        open/read/close per sample. Call ``forget`` for threads that ended and ``close`` when
        done.
        """
        if self._linux is not _schedstat_seconds:
            return self.cpu_seconds(native_id)
        fd = self._fds.get(native_id)
        try:
            if fd is None:
                fd = self._fds[native_id] = os.open(f"{_TASKS}/{native_id}/schedstat", os.O_RDONLY)
            return int(os.pread(fd, 128, 0).split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            self.forget(native_id)
            return None

    def forget(self, native_id: int) -> None:
        fd = self._fds.pop(native_id, None)
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass

    def forget_all_but(self, alive: set[int]) -> None:
        for native_id in [n for n in self._fds if n not in alive]:
            self.forget(native_id)

    def close(self) -> None:
        self.forget_all_but(set())

    def read_all(self) -> dict[int, float]:
        """CPU seconds by native thread id, for every thread of the process."""
        if self._linux is not None:
            found: dict[int, float] = {}
            try:
                tids = os.listdir(_TASKS)
            except OSError:
                return found
            for name in tids:
                try:
                    found[int(name)] = self._linux(int(name))
                except (OSError, ValueError, IndexError, OverflowError):
                    continue
            return found
        return _psutil_threads()

    def snapshot(self) -> list[ThreadCpu]:
        """Every thread with its CPU seconds and, where there is one, its Python thread."""
        from hawkwatch.agent.stacks import native_ids  # stacks: not at the agent's start

        python = native_ids()
        return [ThreadCpu(tid, cpu, python.get(tid)) for tid, cpu in self.read_all().items()]


def _has_psutil() -> bool:
    try:
        import psutil  # noqa: F401
    except ImportError:
        return False
    return True


def _psutil_threads() -> dict[int, float]:
    try:
        import psutil

        return {t.id: t.user_time + t.system_time for t in psutil.Process().threads()}
    except Exception:  # psutil missing, or the platform refuses per-thread times
        return {}
