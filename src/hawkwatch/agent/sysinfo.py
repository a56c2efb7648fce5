"""Reading the process's memory, CPU and threads cheaply, the same way on every sample.

On Linux one read of ``/proc/self/status`` gives resident size, footprint and threads, and the
memory limit is found once at start (cgroup v2, cgroup v1, ``RLIMIT_AS``, or the machine's
``MemAvailable``). Elsewhere psutil answers, and on macOS the footprint comes from
``proc_pid_rusage`` (``ri_phys_footprint``, what iOS tools call ``phys_footprint``).
See ``docs/collections.md`` for what each value means.
"""

from __future__ import annotations

import os
import resource
import sys
from collections.abc import Callable

from hawkwatch.agent import cgroups
from hawkwatch.agent.cgroups import Mount, read_text, resolve
from hawkwatch.model.values import Value
from hawkwatch.store.files import path_join

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Final, Protocol
else:
    from hawkwatch._runtime_typing import Protocol

MB: Final = 1024 * 1024
_UNLIMITED_V1: Final = 1 << 60  # cgroup v1 reports "no limit" as a number near 2**63


class ResourceSample(Value):
    """One reading; memory in bytes, ``None`` when the platform cannot say."""

    __slots__ = ("available_bytes", "cpu_seconds", "footprint_bytes", "resident_bytes", "threads")

    def __init__(
        self,
        resident_bytes: int,
        footprint_bytes: int | None,
        available_bytes: int | None,
        threads: int,
        cpu_seconds: float,
    ) -> None:
        self.resident_bytes = resident_bytes
        self.footprint_bytes = footprint_bytes
        self.available_bytes = available_bytes
        self.threads = threads
        self.cpu_seconds = cpu_seconds


class ResourceReader(Protocol):
    footprint_source: str
    available_source: str

    def read(self) -> ResourceSample: ...


def reader_for_this_process() -> ResourceReader:
    """The cheapest reader this platform supports."""
    if sys.platform.startswith("linux") and os.path.exists("/proc/self/status"):
        return LinuxReader()
    return PsutilReader()


class LinuxReader:
    """``/proc/self/status`` per sample; the limit's source found once."""

    footprint_source = "RssAnon + VmSwap (/proc/self/status)"

    def __init__(self) -> None:
        self._limit = find_memory_limit()
        self.available_source = self._limit.source

    def read(self) -> ResourceSample:
        fields = _status_fields()
        times = os.times()
        resident = fields.get("VmRSS", 0)
        footprint = fields.get("RssAnon", 0) + fields.get("VmSwap", 0)
        return ResourceSample(
            resident_bytes=resident,
            footprint_bytes=footprint,
            available_bytes=self._limit.available(fields.get("VmSize", 0)),
            threads=fields.get("Threads", 0),
            cpu_seconds=times.user + times.system,
        )


class PsutilReader:
    """psutil for everything; on macOS the footprint from ``proc_pid_rusage``."""

    def __init__(self) -> None:
        import psutil  # not needed on Linux, where /proc is read directly

        self._psutil = psutil
        self._process = psutil.Process()
        self._footprint = _mac_footprint_reader() if sys.platform == "darwin" else None
        self.footprint_source = (
            "ri_phys_footprint (proc_pid_rusage)" if self._footprint else "psutil uss + swap"
        )
        self._limit = find_memory_limit()
        self.available_source = self._limit.source

    def read(self) -> ResourceSample:
        with self._process.oneshot():
            memory = self._process.memory_info()
            threads = self._process.num_threads()
            cpu = self._process.cpu_times()
            footprint = self._footprint() if self._footprint else None
            if footprint is None:
                try:
                    full = self._process.memory_full_info()
                    footprint = int(full.uss + getattr(full, "swap", 0))
                except (self._psutil.Error, OSError):
                    footprint = None
        return ResourceSample(
            resident_bytes=int(memory.rss),
            footprint_bytes=footprint,
            available_bytes=self._limit.available(int(memory.vms)),
            threads=threads,
            cpu_seconds=cpu.user + cpu.system,
        )


class MemoryLimit(Value):
    """Where "available memory" comes from, and how to compute it (cgroup folders as ``str``)."""

    __slots__ = ("cgroup_dirs", "cgroup_version", "rlimit_bytes", "source")

    def __init__(
        self,
        source: str,
        cgroup_dirs: tuple[str, ...] = (),
        cgroup_version: int = 0,
        rlimit_bytes: int | None = None,
    ) -> None:
        self.source = source
        self.cgroup_dirs = cgroup_dirs
        self.cgroup_version = cgroup_version
        self.rlimit_bytes = rlimit_bytes

    def available(self, address_space_bytes: int) -> int | None:
        if self.cgroup_version == 2:
            return _cgroup_v2_available(self.cgroup_dirs)
        if self.cgroup_version == 1:
            limit = _read_int(path_join(self.cgroup_dirs[0], "memory.limit_in_bytes"))
            usage = _read_int(path_join(self.cgroup_dirs[0], "memory.usage_in_bytes"))
            return None if limit is None or usage is None else max(limit - usage, 0)
        if self.rlimit_bytes is not None:
            return max(self.rlimit_bytes - address_space_bytes, 0)
        return _machine_available()


def find_memory_limit(
    proc_cgroup: str | os.PathLike[str] = "/proc/self/cgroup",
    mountinfo: str | os.PathLike[str] = "/proc/self/mountinfo",
) -> MemoryLimit:
    """The tightest memory limit source that applies to this process (see module doc)."""
    memberships = cgroups.memberships(proc_cgroup)
    mounts = cgroups.mounts(mountinfo)
    if "" in memberships and "cgroup2" in mounts:
        dirs = _v2_limited_dirs(mounts["cgroup2"], memberships[""])
        if dirs:
            return MemoryLimit("cgroup v2 memory.max - memory.current", dirs, 2)
    if "memory" in memberships and "memory" in mounts:
        folder = resolve(mounts["memory"], memberships["memory"])
        limit = _read_int(path_join(folder, "memory.limit_in_bytes")) if folder else None
        if folder and limit is not None and limit < _UNLIMITED_V1:
            return MemoryLimit("cgroup v1 memory.limit_in_bytes - usage", (folder,), 1)
    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        return MemoryLimit("RLIMIT_AS - address space in use", rlimit_bytes=soft)
    return MemoryLimit(
        "MemAvailable (/proc/meminfo)"
        if sys.platform.startswith("linux")
        else "psutil virtual_memory().available"
    )


def _v2_limited_dirs(mount: Mount, cgroup_path: str) -> tuple[str, ...]:
    folder = resolve(mount, cgroup_path)
    limited: list[str] = []
    while folder is not None:
        try:
            text = read_text(path_join(folder, "memory.max")).strip()
        except OSError:
            text = "max"
        if text != "max":
            limited.append(folder)
        parent = os.path.dirname(folder) or "."  # Path.parent of a path_text
        if folder in (mount.point, parent):
            break
        folder = parent
    return tuple(limited)


def _cgroup_v2_available(dirs: tuple[str, ...]) -> int | None:
    best: int | None = None
    for folder in dirs:
        limit = _read_int(path_join(folder, "memory.max"))
        usage = _read_int(path_join(folder, "memory.current"))
        if limit is None or usage is None:
            continue
        room = max(limit - usage, 0)
        best = room if best is None else min(best, room)
    return best


def _machine_available() -> int | None:
    if sys.platform.startswith("linux"):
        try:
            with open("/proc/meminfo", "rb") as f:
                for line in f:
                    if line.startswith(b"MemAvailable:"):
                        return int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            return None
    import psutil

    try:
        return int(psutil.virtual_memory().available)
    except (psutil.Error, OSError):
        return None


def _status_fields() -> dict[str, int]:
    """The numeric fields of ``/proc/self/status`` (kB fields converted to bytes)."""
    fields: dict[str, int] = {}
    with open("/proc/self/status", "rb") as f:
        data = f.read()
    for line in data.split(b"\n"):
        name, _, rest = line.partition(b":")
        parts = rest.split()
        if not parts or not parts[0].isdigit():
            continue
        number = int(parts[0])
        if len(parts) > 1 and parts[1] == b"kB":
            number *= 1024
        fields[name.decode()] = number
    return fields


def _read_int(path: str) -> int | None:
    try:
        return int(read_text(path).strip())
    except (OSError, ValueError):
        return None


def _mac_footprint_reader() -> Callable[[], int | None] | None:
    """A callable returning ``ri_phys_footprint`` in bytes, or None if libproc is missing."""
    import ctypes
    import ctypes.util

    library = ctypes.util.find_library("proc") or ctypes.util.find_library("System")
    if not library:
        return None
    try:
        libproc = ctypes.CDLL(library)
        proc_pid_rusage = libproc.proc_pid_rusage
    except (OSError, AttributeError):
        return None
    proc_pid_rusage.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
    proc_pid_rusage.restype = ctypes.c_int
    rusage_info_v2 = 2
    footprint_offset = 72  # uuid[16] + 7 uint64 fields precede ri_phys_footprint
    buffer = ctypes.create_string_buffer(512)  # larger than any rusage_info version
    pid = os.getpid()

    def read() -> int | None:
        if proc_pid_rusage(pid, rusage_info_v2, buffer) != 0:
            return None
        return int.from_bytes(buffer.raw[footprint_offset : footprint_offset + 8], "little")

    return read
