"""The memory report of a Python session as plain data: growth findings, leak suspects, growing
types with referrer paths, the top live stacks and what tracing cost.

Built by ``hawkwatch.analysis.memory_report`` from a session's typed records; laid out by
``hawkwatch.report.memory`` (``hawkwatch memory``) and the session report's memory section.
"""

from __future__ import annotations

from dataclasses import dataclass

from hawkwatch.model.records.memory import (
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

    @property
    def is_empty(self) -> bool:
        return not (self.growth or self.leaks or self.growing_types or self.windows)
