"""Allocation tracing with memray (``memory.backend=memray``) into the shared allocation model.

memray records every allocation into a capture file in the session folder, native ones too
(C extensions, ``malloc`` through ctypes: memory tracemalloc never sees), with native stacks
(``native_traces``) and pymalloc's small objects (``trace_python_allocators``). The file can be
read only once tracking has ended, so leak suspects are found when the process stops: memray's
temporal records (per stack, when allocations were made and freed, in terms of its periodic
memory snapshots) give the live bytes of every stack at a dozen moments spread over the run,
which are compared exactly like tracemalloc's snapshots.

memray is an extra (``pip install 'hawkwatch[memory]'``), imported only when this backend is
chosen: never by the default agent.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hawkwatch.agent.plugins.memory_trace import FunctionNames
from hawkwatch.analysis.memory_growth import LEAK_MIN_SHARE, SteadyGrowth, steady_growth
from hawkwatch.analysis.memory_timeline import Lifetime, live_at, sample_points
from hawkwatch.model.allocations import (
    AllocationFrame,
    Group,
    LiveAllocations,
    NativeFrame,
    merge_groups,
)
from hawkwatch.model.stack import PyFrame, UniquingTable

_PACKAGE = str(Path(__file__).resolve().parents[2]) + "/"
_AGENT = _PACKAGE + "agent/"
CAPTURE_NAME = "memray.bin"
CATEGORY = "memray"
#: Native frames kept below a stack's innermost Python frame: the allocation's own C path
#: (numpy's data allocator, ctypes' call into malloc). The interpreter's frames between Python
#: frames are dropped: they are the same for every stack.
NATIVE_KEEP = 8


class MemrayUnavailable(RuntimeError):
    """memray cannot record in this process (not installed, another tracker active)."""


@dataclass(frozen=True, slots=True)
class MemrayResult:
    """What one capture showed: live allocations at each sampled moment, and the suspects."""

    snapshots: tuple[LiveAllocations, ...]
    suspects: tuple[SteadyGrowth[int], ...]
    native: bool
    total_allocations: int
    capture_bytes: int


class MemrayRecorder:
    """memray's ``Tracker`` from ``start`` to ``stop``; ``read`` then finds the leak suspects."""

    def __init__(self, folder: Path, *, native: bool = True) -> None:
        self.path = folder / CAPTURE_NAME
        self.native = native
        self._tracker: Any = None
        self._memray: Any = None
        self.names = FunctionNames()

    def start(self) -> None:
        """Start recording; ``MemrayUnavailable`` with the reason when memray cannot."""
        try:
            memray = importlib.import_module("memray")
        except ImportError as exc:
            raise MemrayUnavailable(f"memray is not installed ({exc})") from exc
        self._memray = memray
        if self.path.exists():
            self.path.unlink()
        for native in dict.fromkeys((self.native, False)):  # native stacks where they work
            try:
                tracker = memray.Tracker(
                    str(self.path),
                    native_traces=native,
                    trace_python_allocators=True,  # small objects too: leaks are often those
                    follow_fork=False,
                )
                tracker.__enter__()
            except (RuntimeError, OSError, ValueError) as exc:
                if self.path.exists():
                    self.path.unlink()
                error: Exception = exc
                continue
            self._tracker, self.native = tracker, native
            return
        raise MemrayUnavailable(f"memray could not start ({error})")

    @property
    def active(self) -> bool:
        return self._tracker is not None

    def stop(self) -> None:
        tracker, self._tracker = self._tracker, None
        if tracker is not None:
            tracker.__exit__(None, None, None)

    def abandon(self) -> None:
        """In a forked child: memray does not follow the fork; forget the parent's tracker."""
        self._tracker = None

    def read(self, points: int, min_bytes: int = 1024, min_fraction: float = 0.75) -> MemrayResult:
        """The capture as live allocations at ``points`` moments, and its leak suspects."""
        reader = self._memray.FileReader(str(self.path))
        try:
            return self._read(reader, points, min_bytes, min_fraction)
        finally:
            reader.close()

    def _read(self, reader: Any, points: int, min_bytes: int, min_fraction: float) -> MemrayResult:
        meta = reader.metadata
        native = bool(meta.has_native_traces)
        snapshot_times = [snap.time / 1000 for snap in reader.get_memory_snapshots()]
        end_time = meta.end_time.timestamp()
        moments = sample_points(snapshot_times, end_time, points)
        table: UniquingTable[AllocationFrame] = UniquingTable()
        per_point: list[list[Group]] = [[] for _ in moments]
        for record in reader.get_temporal_allocation_records(merge_threads=True):
            frames = self.convert(record, native)
            if frames is None:
                continue
            stack_id = table.add(frames)
            lives = (
                Lifetime(
                    i.allocated_before_snapshot,
                    i.deallocated_before_snapshot,
                    i.n_allocations,
                    i.n_bytes,
                )
                for i in record.intervals
            )
            for index, (size, count) in enumerate(live_at(lives, moments)):
                if size or count:
                    per_point[index].append(Group(stack_id, CATEGORY, size, count))
        snapshots = tuple(
            LiveAllocations(
                "memray-native" if native else "memray",
                table,
                merge_groups(groups),
                position=index + 1,
                time_s=snapshot_times[moment] if moment < len(snapshot_times) else end_time,
                metadata={"pid": str(meta.pid), "peak_memory": str(meta.peak_memory)},
            )
            for index, (moment, groups) in enumerate(zip(moments, per_point, strict=True))
        )
        series = [{g.stack_id: g.bytes for g in live.groups} for live in snapshots]
        suspects = steady_growth(
            series, min_growth=min_bytes, min_fraction=min_fraction, min_share=LEAK_MIN_SHARE
        )
        return MemrayResult(
            snapshots,
            tuple(suspects),
            native,
            int(meta.total_allocations),
            _size(self.path),
        )

    def convert(self, record: Any, native: bool) -> list[AllocationFrame] | None:
        """A record's stack in the model's terms, innermost first: the native frames of the
        allocation itself, then the Python frames (named from their source); ``None`` for
        hawkwatch's own allocations."""
        python = record.stack_trace()
        if _own(python):
            return None
        pyframes = [
            PyFrame(_qualified_name(self.names, func, file, line), file, line)
            for func, file, line in python
        ]
        if not native:
            return list(pyframes)
        hybrid = record.hybrid_stack_trace()
        own_python = set(python)
        c_frames: list[AllocationFrame] = []
        for func, file, line in hybrid:
            if (func, file, line) in own_python:
                break
            c_frames.append(NativeFrame(0, "", str(func), str(file), int(line or 0)))
        return c_frames[:NATIVE_KEEP] + list(pyframes)


def _qualified_name(names: FunctionNames, func: str, file: str, line: int) -> str:
    """memray's function name, qualified (``Payload.__init__``) when the source says so."""
    found = names.name(file, line)
    return found if found.rsplit(".", 1)[-1] == func else func


def _own(python: Sequence[tuple[str, str, int]]) -> bool:
    """Allocated by hawkwatch's threads or code: not the app's memory (as for tracemalloc)."""
    if not python:
        return False
    if python[0][1].startswith(_PACKAGE):
        return True
    return any(file.startswith(_AGENT) for _func, file, _line in python)


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
