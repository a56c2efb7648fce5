"""Memory in Python apps: growth findings, tracing windows, snapshots, leak suspects, growing types.

Written by the memory monitor (``agent/plugins/memory.py``); read by ``analysis/memory.py``.
Frames are ``{"function", "file", "line"}`` objects, innermost first (ARCHITECTURE.md).
"""

from __future__ import annotations

from typing import ClassVar, Final

import msgspec

from hawkwatch.model import collections as c
from hawkwatch.model.records._codec import Count, Finite, JsonRecord, NonNegative, time_key


class MemFrame(msgspec.Struct, frozen=True, omit_defaults=True):
    """One frame of an allocation stack: Python, or native (``native``: memray's C frames,
    ``file`` then the C source when debug info has it)."""

    function: str
    file: str
    line: Count
    native: bool = False


class MemoryGrowth(JsonRecord, frozen=True):
    """A steady rise of the footprint over ``window_s`` (robust slope, ``detectors.md`` §5).

    ``slope_bytes_per_s`` is the Theil–Sen slope of the window's samples; ``growth_bytes`` is
    that slope times the window, ``growth_percent`` relative to the fitted start.
    """

    collection: ClassVar[str] = c.MEMORY_GROWTH

    time: Finite
    window_s: NonNegative
    start_bytes: NonNegative
    end_bytes: NonNegative
    growth_bytes: Finite
    growth_percent: Finite
    slope_bytes_per_s: Finite
    samples: Count
    source: str = "rss"

    def record_key(self) -> str:
        return time_key(self.time)


class MemoryTrace(JsonRecord, frozen=True):
    """A tracing window opened or closed: why, and what it cost so far.

    ``cost_s`` is the CPU time the monitor spent on snapshots and object counts (with memray:
    on reading the capture); ``tracemalloc_bytes`` the memory tracemalloc itself used (its peak
    while the window ran). ``backend`` is ``tracemalloc`` or ``memray``; memray's capture file
    (``capture``, in the session folder) is ``capture_bytes`` long, with native stacks when
    ``native``.
    """

    collection: ClassVar[str] = c.MEMORY_TRACE

    time: Finite
    state: str  # "started" or "stopped"
    reason: str  # "growth", "always", "quiet", "stop", "app-tracing"
    snapshots: Count = 0
    cost_s: NonNegative = 0.0
    tracemalloc_bytes: Count = 0
    nframes: Count = 0
    owned: bool = True
    backend: str = "tracemalloc"
    capture: str = ""
    capture_bytes: Count = 0
    native: bool = False

    def record_key(self) -> str:
        return time_key(self.time)


class StackBytes(msgspec.Struct, frozen=True):
    """One stack's live allocations in a snapshot."""

    frames: tuple[MemFrame, ...]
    bytes: Count
    count: Count


class MemorySnapshot(JsonRecord, frozen=True):
    """What tracemalloc saw live at one moment: totals and the stacks Matrix's rules list."""

    collection: ClassVar[str] = c.MEMORY_SNAPSHOT

    time: Finite
    index: Count
    total_bytes: Count
    count: Count
    stack_count: Count
    stacks: tuple[StackBytes, ...] = ()

    def record_key(self) -> str:
        return time_key(self.time)


class LeakSuspect(JsonRecord, frozen=True):
    """A stack whose live bytes grew in most consecutive snapshots; key ``<time>_<rank>``.

    ``grown`` of ``steps`` snapshot-to-snapshot steps gained bytes; ``growth_bytes`` is the gain
    from the first to the last snapshot, ``rate_bytes_per_s`` that gain over their time span.
    """

    collection: ClassVar[str] = c.MEMORY_LEAK

    time: Finite
    rank: Count
    frames: tuple[MemFrame, ...]
    growth_bytes: int
    live_bytes: Count
    count: Count
    grown: Count
    steps: Count
    rate_bytes_per_s: Finite

    def record_key(self) -> str:
        return f"{time_key(self.time)}_{self.rank}"


class GrowingType(JsonRecord, frozen=True):
    """A type whose live instances keep increasing, with a referrer path from a root.

    ``referrer_path`` runs from the root (``module app``, ``class app.Cache``, ``thread Main``)
    to the instance; empty with ``path_note`` saying why when no root was reached in budget.
    """

    collection: ClassVar[str] = c.MEMORY_TYPES

    time: Finite
    type: str
    count: Count
    count_growth: int
    referrer_path: tuple[str, ...] = ()
    path_note: str = ""

    def record_key(self) -> str:
        # any string can name a type (``type(",", (), {})``): keep the key storable
        name = "".join("_" if ch in ",\r\n\x00" or not ch.isprintable() else ch for ch in self.type)
        return f"{time_key(self.time)}_{name or '_'}"


class CycleType(msgspec.Struct, frozen=True):
    """Objects of one type found in the garbage of sampled collections."""

    type: str
    objects: Count  # in all sampled collections of the window
    samples: Count  # sampled collections that freed at least one


class GcCycles(JsonRecord, frozen=True):
    """What the cyclic garbage collector freed over ``window_s``, and what it could not.

    Every collection is counted (``collections``, ``with_garbage`` of them freed something,
    ``collected`` objects, ``gc_s`` spent); ``sampled`` young-generation collections had their
    garbage counted by type (``types``). ``uncollectable`` is what sits in ``gc.garbage``.
    """

    collection: ClassVar[str] = c.MEMORY_CYCLES

    time: Finite
    window_s: NonNegative
    collections: Count
    with_garbage: Count
    collected: Count
    gc_s: NonNegative
    sampled: Count
    sampled_collected: Count = 0
    types: tuple[CycleType, ...] = ()
    uncollectable: tuple[CycleType, ...] = ()
    uncollectable_total: Count = 0

    def record_key(self) -> str:
        return time_key(self.time)


MEMORY_TYPES: Final[tuple[type[JsonRecord], ...]] = (
    MemoryGrowth,
    MemoryTrace,
    MemorySnapshot,
    LeakSuspect,
    GrowingType,
    GcCycles,
)
