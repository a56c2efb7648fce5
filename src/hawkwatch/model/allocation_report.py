"""The live-allocation report as plain data: what ``hawkwatch allocations`` shows and exports.

Built by ``hawkwatch.analysis.allocations.build_allocation_report`` from a ``LiveAllocations``
snapshot (iOS artifacts or Python tracing alike); laid out by ``hawkwatch.report.allocations``.
Frames are innermost first; ``caller`` is the first frame in one of the app's own images.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from hawkwatch.model.allocations import AllocationFrame

KIB: Final = 1024
MIB: Final = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ReportRules:
    """Which categories and stacks a report lists (``detectors.md`` §5).

    Matrix: a category is listed when ``≥ category_min_bytes`` or among the ``category_top``
    largest; within it a stack when ``≥ stack_min_bytes`` or among the ``stack_top`` largest.
    MTHawkeye: a stack holding ``≥ malloc_threshold_bytes`` of malloc memory (``≥
    vm_threshold_bytes`` of VM) is flagged ``over_threshold``. ``top`` caps the overall lists.
    """

    category_min_bytes: int = MIB
    category_top: int = 15
    stack_min_bytes: int = 128 * KIB
    stack_top: int = 10
    malloc_threshold_bytes: int = 512_000
    vm_threshold_bytes: int = MIB
    top: int = 10


@dataclass(frozen=True, slots=True)
class StackEntry:
    """One stack's live allocations (within a category, or over all categories)."""

    stack_id: int
    bytes: int
    count: int
    frames: tuple[AllocationFrame, ...]
    caller: AllocationFrame | None = None
    over_threshold: bool = False
    category: str = ""


@dataclass(frozen=True, slots=True)
class CategoryEntry:
    """One category: totals, how many stacks it has, and the stacks the rules list."""

    name: str
    bytes: int
    count: int
    stack_count: int
    stacks: tuple[StackEntry, ...]


@dataclass(frozen=True, slots=True)
class GrowthEntry:
    """A stack whose live memory changed since the baseline snapshot."""

    stack_id: int
    category: str
    bytes_delta: int
    count_delta: int
    bytes: int
    count: int
    frames: tuple[AllocationFrame, ...]


@dataclass(frozen=True, slots=True)
class AllocationReport:
    """Live memory at one moment: totals, categories, top stacks, growth since a baseline."""

    source: str
    total_live_bytes: int
    live_count: int
    categories: tuple[CategoryEntry, ...]
    top_by_bytes: tuple[StackEntry, ...]
    top_by_count: tuple[StackEntry, ...]
    category_count: int
    stack_count: int
    position: int | None = None
    time_s: float | None = None
    growth: tuple[GrowthEntry, ...] = ()
    baseline_position: int | None = None
    symbolicated_frames: int = 0
    native_frames: int = 0
    metadata: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
