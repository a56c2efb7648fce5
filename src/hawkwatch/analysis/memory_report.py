"""The memory report from a session's records, and its top live stacks as the shared
live-allocation model (for flame graphs in bytes).

Leak suspects and growing types are re-evaluated by the agent at every snapshot; the report
shows the newest batch, which saw the most snapshots.
"""

from __future__ import annotations

from collections.abc import Iterable

from hawkwatch.model import collections as c
from hawkwatch.model.allocations import AllocationFrame, Group, LiveAllocations
from hawkwatch.model.memory_report import (
    CycleReport,
    MemoryReport,
    RepeatedCycle,
    TracingWindow,
)
from hawkwatch.model.record import Record
from hawkwatch.model.records import (
    GcCycles,
    GrowingType,
    LeakSuspect,
    MemoryGrowth,
    MemorySnapshot,
    MemoryTrace,
    ResidentMemory,
    decode_all,
)
from hawkwatch.model.stack import PyFrame, UniquingTable

MB = 1024 * 1024
COLLECTIONS = frozenset(
    {
        c.MEMORY_GROWTH,
        c.MEMORY_TRACE,
        c.MEMORY_SNAPSHOT,
        c.MEMORY_LEAK,
        c.MEMORY_TYPES,
        c.MEMORY_CYCLES,
    }
)


def build_memory_report(records: Iterable[Record]) -> MemoryReport:
    """Growth findings, the newest leak and type batches, tracing windows and the RSS range."""
    decoded = decode_all(r for r in records if r.collection in COLLECTIONS | {c.MEMORY_RESIDENT})
    leaks = decoded.of(LeakSuspect)
    newest_leak = max((leak.time for leak in leaks), default=None)
    types = decoded.of(GrowingType)
    newest_types = max((t.time for t in types), default=None)
    snapshots = sorted(decoded.of(MemorySnapshot), key=lambda s: s.time)
    rss = [sample.value * MB for sample in decoded.of(ResidentMemory)]
    return MemoryReport(
        growth=tuple(sorted(decoded.of(MemoryGrowth), key=lambda g: g.time)),
        leaks=tuple(
            sorted((leak for leak in leaks if leak.time == newest_leak), key=lambda x: x.rank)
        ),
        growing_types=tuple(
            sorted((t for t in types if t.time == newest_types), key=lambda t: -t.count_growth)
        ),
        top_stacks=snapshots[-1].stacks if snapshots else (),
        snapshot=snapshots[-1] if snapshots else None,
        windows=_windows(decoded.of(MemoryTrace)),
        snapshots=len(snapshots),
        rss_first_bytes=rss[0] if rss else None,
        rss_last_bytes=rss[-1] if rss else None,
        rss_peak_bytes=max(rss) if rss else None,
        notes=tuple(
            f"{t.backend} did not run: {t.reason}"
            for t in decoded.of(MemoryTrace)
            if t.state == "failed"
        ),
        cycles=build_cycle_report(decoded.of(GcCycles)),
    )


#: A type freed in at least this share of the sampled collections (and in ``MIN_SAMPLES``) is
#: made in cycles again and again, not once.
REPEATED_SHARE = 0.5
MIN_SAMPLES = 3


def build_cycle_report(windows: list[GcCycles]) -> CycleReport | None:
    """The session's ``memory-cycles`` windows summed; repeated cycle types with their cost."""
    if not windows:
        return None
    ordered = sorted(windows, key=lambda w: w.time)
    span = sum(w.window_s for w in ordered)
    collected = sum(w.collected for w in ordered)
    gc_s = sum(w.gc_s for w in ordered)
    sampled = sum(w.sampled for w in ordered)
    sampled_collected = sum(w.sampled_collected for w in ordered)
    objects: dict[str, int] = {}
    samples: dict[str, int] = {}
    for window in ordered:
        for kind in window.types:
            objects[kind.type] = objects.get(kind.type, 0) + kind.objects
            samples[kind.type] = samples.get(kind.type, 0) + kind.samples
    repeated = []
    for name, seen in samples.items():
        if seen < MIN_SAMPLES or seen < REPEATED_SHARE * sampled:
            continue
        share = objects[name] / sampled_collected if sampled_collected else 0.0
        repeated.append(
            RepeatedCycle(
                name,
                seen,
                round(objects[name] / seen, 1),
                round(share * collected / span, 1) if span > 0 else 0.0,
                round(share * gc_s, 6),
            )
        )
    repeated.sort(key=lambda r: (-r.per_s, r.type))
    last = ordered[-1]
    return CycleReport(
        window_s=round(span, 3),
        collections=sum(w.collections for w in ordered),
        with_garbage=sum(w.with_garbage for w in ordered),
        collected=collected,
        gc_s=round(gc_s, 6),
        sampled=sampled,
        repeated=tuple(repeated),
        uncollectable=last.uncollectable,
        uncollectable_total=last.uncollectable_total,
    )


def _windows(traces: list[MemoryTrace]) -> tuple[TracingWindow, ...]:
    """Started/stopped records paired in time order."""
    windows: list[TracingWindow] = []
    open_one: MemoryTrace | None = None
    for trace in sorted(traces, key=lambda t: t.time):
        if trace.state == "started":
            if open_one is not None:
                windows.append(_unfinished(open_one))
            open_one = trace
        elif trace.state == "stopped":
            begin = open_one if open_one is not None else trace
            windows.append(
                TracingWindow(
                    begin.time,
                    begin.reason if open_one is not None else "",
                    trace.time,
                    trace.reason,
                    trace.snapshots,
                    trace.cost_s,
                    trace.tracemalloc_bytes,
                    trace.owned,
                    trace.backend,
                    trace.capture,
                    trace.capture_bytes,
                    trace.native,
                )
            )
            open_one = None
    if open_one is not None:
        windows.append(_unfinished(open_one))
    return tuple(windows)


def _unfinished(started: MemoryTrace) -> TracingWindow:
    """A window whose stop was never recorded (the process was killed, or is still running)."""
    return TracingWindow(
        started.time,
        started.reason,
        owned=started.owned,
        backend=started.backend,
        capture=started.capture,
        native=started.native,
    )


def top_stacks_live(report: MemoryReport) -> LiveAllocations:
    """The newest snapshot's listed stacks as live allocations (one table), for exports."""
    table: UniquingTable[AllocationFrame] = UniquingTable()
    groups = []
    for stack in report.top_stacks:
        frames = [PyFrame(f.function, f.file, f.line) for f in stack.frames]
        groups.append(Group(table.add(frames), "python", stack.bytes, stack.count))
    snapshot = report.snapshot
    return LiveAllocations(
        "tracemalloc",
        table,
        tuple(groups),
        position=snapshot.index if snapshot is not None else None,
        time_s=snapshot.time if snapshot is not None else None,
    )
