"""The report's drawable views: timeline, flame graph, network waterfall (pure, bounded).

``build_session_report`` calls these with what it decoded; they only reshape and cap, so the
report JSON stays small (``model.session_views`` says the bounds). Offsets are seconds since the
session start; a session without a known start has no timeline.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from hawkwatch.analysis import series as _series
from hawkwatch.analysis.network import failed
from hawkwatch.analysis.stall_report import blocking_stack
from hawkwatch.model.profile import CallNode, CallTree, Frame, frame_label
from hawkwatch.model.records import Anr, AnrStall, NetworkTransaction, merge_parts
from hawkwatch.model.report import CrashRow, EventRow, GcPauseRow, SpanRow
from hawkwatch.model.session_views import (
    MAX_MARKS,
    MAX_SERIES_POINTS,
    MAX_STACK_FRAMES,
    CrashMark,
    EventMark,
    FlameGraph,
    NetworkWaterfall,
    PauseMark,
    RequestBar,
    SeriesPoints,
    SpanMark,
    StallMark,
    Timeline,
)
from hawkwatch.model.stack import Stack


class _Mark(Protocol):
    @property
    def offset_s(self) -> float: ...


_M = TypeVar("_M", bound=_Mark)

#: Nodes holding less than this share of the samples are left out of the flame graph.
FLAME_MIN_SHARE = 0.001
#: And never more nodes than this (the smallest go first).
FLAME_MAX_NODES = 5000


def build_timeline(
    *,
    start: float,
    end: float,
    series: Sequence[tuple[str, str, str, Sequence[_series.Sample]]],
    anr: Sequence[tuple[str, Anr]],
    pauses: Sequence[GcPauseRow],
    spans: Sequence[SpanRow],
    events: Sequence[EventRow],
    crashes: Sequence[CrashRow],
    exit_time: float | None,
) -> Timeline:
    """Everything on one time axis; ``series`` are (collection, label, unit, samples)."""
    stalls = _stall_marks(merge_parts(anr), start)
    pause_marks = [PauseMark(_at(p.time, start), p.duration_ms, p.generation) for p in pauses]
    span_marks = [
        SpanMark(s.name, _at(s.start_time, start), s.duration_ms, s.thread, s.error)
        for s in sorted(spans, key=lambda s: s.start_time)
    ]
    return Timeline(
        duration_s=round(max(end - start, 0.0), 6),
        series=tuple(
            _points(collection, label, unit, samples, start)
            for collection, label, unit, samples in series
            if samples
        ),
        stalls=_longest(stalls, lambda m: m.duration_ms),
        stalls_total=len(stalls),
        gc_pauses=_longest(pause_marks, lambda m: m.duration_ms),
        gc_pauses_total=len(pause_marks),
        spans=_longest(span_marks, lambda m: m.duration_ms),
        spans_total=len(span_marks),
        events=tuple(EventMark(e.name, _at(e.time, start), e.extra) for e in events[:MAX_MARKS]),
        events_total=len(events),
        crashes=tuple(
            CrashMark(c.title or f"{c.type}: {c.message}", _at(c.time, start), c.fatal)
            for c in crashes[:MAX_MARKS]
        ),
        exit_offset_s=None if exit_time is None else _at(exit_time, start),
    )


def build_flame(tree: CallTree, source: str = "") -> FlameGraph | None:
    """The tree as a flat pre-order node list, pruned below ``FLAME_MIN_SHARE``; None if empty."""
    total = tree.total
    if total <= 0:
        return None
    threshold = max(total * FLAME_MIN_SHARE, 1e-9)
    kept = _kept_nodes(tree.roots, threshold)
    frames: dict[Frame, int] = {}
    nodes: list[tuple[int, int, int]] = []
    pruned = 0
    pending: list[tuple[CallNode, int]] = [(root, -1) for root in reversed(tree.roots)]
    while pending:  # pre-order without recursion: stacks can be deeper than Python's limit
        node, parent = pending.pop()
        if id(node) not in kept:
            pruned += 1
            continue
        index = len(nodes)
        nodes.append((parent, frames.setdefault(node.frame, len(frames)), node.count))
        pending.extend((child, index) for child in reversed(node.children))
    return FlameGraph(
        mode=tree.mode,
        sampler=tree.sampler,
        total=total,
        interval_s=tree.interval_s,
        frames=tuple(frame_label(frame) for frame in frames),
        nodes=tuple(nodes),
        pruned=pruned,
        min_share=FLAME_MIN_SHARE,
        source=source,
    )


def build_waterfall(
    transactions: Sequence[NetworkTransaction], start: float
) -> NetworkWaterfall | None:
    """The requests in start order with their phases; None when there were none."""
    if not transactions:
        return None
    ordered = sorted(transactions, key=lambda t: (t.start, t.index))
    bars = tuple(
        RequestBar(
            offset_s=_at(t.start, start),
            method=t.method,
            url=t.url,
            host=t.host,
            status=t.status,
            error=t.error,
            total_ms=t.phases_ms.total,
            dns_ms=t.phases_ms.dns,
            connect_ms=t.phases_ms.tcp,
            tls_ms=t.phases_ms.tls,
            send_ms=t.phases_ms.send,
            ttfb_ms=t.phases_ms.ttfb,
            receive_ms=t.phases_ms.receive,
            response_bytes=t.response_bytes,
            reused=t.reused,
            on_loop_thread=t.on_loop_thread,
        )
        for t in ordered[:MAX_MARKS]
    )
    return NetworkWaterfall(bars, len(ordered), sum(1 for t in ordered if failed(t)))


def _at(moment: float, start: float) -> float:
    return round(moment - start, 6)


def _longest(marks: Sequence[_M], key: Callable[[_M], float]) -> tuple[_M, ...]:
    """All marks when few; else the ``MAX_MARKS`` longest, back in time order."""
    if len(marks) <= MAX_MARKS:
        return tuple(marks)
    chosen = sorted(marks, key=lambda m: -key(m))[:MAX_MARKS]
    return tuple(sorted(chosen, key=lambda m: m.offset_s))


def _points(
    collection: str, label: str, unit: str, samples: Sequence[_series.Sample], start: float
) -> SeriesPoints:
    chosen = _downsample(samples)
    return SeriesPoints(
        collection=collection,
        label=label,
        unit=unit,
        offsets_s=tuple(_at(s.time, start) for s in chosen),
        values=tuple(s.value for s in chosen),
        count=len(samples),
    )


def _downsample(samples: Sequence[_series.Sample]) -> Sequence[_series.Sample]:
    """At most ``MAX_SERIES_POINTS`` samples: per time slice, the lowest and the highest (in
    time order), so peaks survive."""
    if len(samples) <= MAX_SERIES_POINTS:
        return samples
    slices = MAX_SERIES_POINTS // 2
    first, last = samples[0].time, samples[-1].time
    width = (last - first) / slices or 1.0
    buckets: dict[int, list[_series.Sample]] = {}
    for sample in samples:
        buckets.setdefault(min(int((sample.time - first) / width), slices - 1), []).append(sample)
    kept: list[_series.Sample] = []
    for members in buckets.values():
        low = min(members, key=lambda s: s.value)
        high = max(members, key=lambda s: s.value)
        kept.extend(sorted({low, high}, key=lambda s: s.time))
    return kept


def _stall_marks(stalls: Sequence[AnrStall], start: float) -> list[StallMark]:
    found: dict[str, tuple[Stack, int]] = {}
    resolved = []
    for stall in stalls:
        _, stack, index = blocking_stack(stall)
        if stack:
            found[stall.key] = (stack, index)
        resolved.append((stall, stack, index))
    marks = []
    for stall, own_stack, own_index in resolved:
        stack, index = own_stack, own_index
        ref = stall.head.repeat_of
        if not stack and ref is not None:  # a back-off record: the stack of the full one
            stack, index = found.get(ref.rsplit("_", 1)[0], ((), 0))
        shown = stack[:MAX_STACK_FRAMES]
        marks.append(
            StallMark(
                offset_s=_at(stall.start, start),
                duration_ms=stall.duration_ms,
                thread=stall.head.thread,
                loop=stall.head.loop,
                frame=stack[index].text if stack else None,
                stack=tuple(frame.text for frame in shown),
                blocking=index if index < len(shown) else 0,
                source=stall.head.source,
            )
        )
    return sorted(marks, key=lambda m: m.offset_s)


def _kept_nodes(roots: Sequence[CallNode], threshold: float) -> set[int]:
    """Ids of the nodes at or above ``threshold`` samples, the largest ``FLAME_MAX_NODES``."""
    candidates: list[CallNode] = []
    pending = list(roots)
    while pending:
        node = pending.pop()
        if node.count >= threshold:
            candidates.append(node)
            pending.extend(node.children)
    if len(candidates) > FLAME_MAX_NODES:
        candidates.sort(key=lambda n: -n.count)
        candidates = candidates[:FLAME_MAX_NODES]
    return {id(node) for node in candidates}
