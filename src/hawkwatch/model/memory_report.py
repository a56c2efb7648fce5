"""The memory report of a Python session as plain data: growth findings, leak suspects, growing
types with referrer paths, the top live stacks and what tracing cost.

Built by ``hawkwatch.analysis.memory_report`` from a session's typed records; laid out by
``hawkwatch.report.memory`` (``hawkwatch memory``) and the session report's memory section.
"""

from __future__ import annotations

from dataclasses import dataclass

from hawkwatch.model.records.memory import (
    CycleType,
    GrowingType,
    LeakSuspect,
    MemoryGrowth,
    MemorySnapshot,
    StackBytes,
)


@dataclass(frozen=True, slots=True)
class TracingWindow:
    """One tracing window: when, why, and its cost (``None`` while still open at the end).

    With memray (``backend``), ``capture`` names its file in the session folder."""

    start: float
    reason: str
    end: float | None = None
    end_reason: str | None = None
    snapshots: int = 0
    cost_s: float = 0.0
    tracemalloc_bytes: int = 0
    owned: bool = True
    backend: str = "tracemalloc"
    capture: str = ""
    capture_bytes: int = 0
    native: bool = False


@dataclass(frozen=True, slots=True)
class RepeatedCycle:
    """Objects of one type freed by the cyclic collector in most sampled collections: cycles the
    app makes again and again. ``per_s`` and ``gc_s`` are estimates: this type's share of the
    sampled garbage applied to all collections' objects and time."""

    type: str
    samples: int
    objects_per_sample: float
    per_s: float
    gc_s: float


@dataclass(frozen=True, slots=True)
class CycleReport:
    """What the cyclic collector did over the session (``memory-cycles`` windows)."""

    window_s: float
    collections: int
    with_garbage: int
    collected: int
    gc_s: float
    sampled: int
    repeated: tuple[RepeatedCycle, ...] = ()
    uncollectable: tuple[CycleType, ...] = ()
    uncollectable_total: int = 0

    @property
    def collections_per_s(self) -> float:
        """Collections that freed something, per second."""
        return self.with_garbage / self.window_s if self.window_s > 0 else 0.0

    @property
    def has_findings(self) -> bool:
        return bool(self.repeated or self.uncollectable_total)


@dataclass(frozen=True, slots=True)
class MemoryReport:
    """Everything the memory monitor found in one session (newest leak batch and type batch)."""

    growth: tuple[MemoryGrowth, ...]
    leaks: tuple[LeakSuspect, ...]
    growing_types: tuple[GrowingType, ...]
    top_stacks: tuple[StackBytes, ...]
    snapshot: MemorySnapshot | None
    windows: tuple[TracingWindow, ...]
    snapshots: int
    rss_first_bytes: float | None = None
    rss_last_bytes: float | None = None
    rss_peak_bytes: float | None = None
    notes: tuple[str, ...] = ()
    cycles: CycleReport | None = None

    @property
    def is_empty(self) -> bool:
        findings = self.cycles is not None and self.cycles.has_findings
        return not (self.growth or self.leaks or self.growing_types or self.windows or findings)
