"""Timed work the agent records one by one: spans, GC pauses and imports.

Each ``*_rows`` turns decoded records (``model.records``) into report rows; each
``summarize_*`` groups rows for the report. Pure functions.
"""

from __future__ import annotations

from hawkwatch.analysis.series import offset, quantile
from hawkwatch.model.records import CustomSpan, GcPause, ImportTime
from hawkwatch.model.report import (
    GcGeneration,
    GcPauseRow,
    GcPauseSummary,
    ImportRow,
    ImportSummary,
    SpanGroup,
    SpanRow,
    SpanStats,
)


def span_rows(spans: list[CustomSpan], start: float | None) -> list[SpanRow]:
    """``custom-span`` records as rows, in stored order."""
    return [
        SpanRow(
            name=span.name,
            start_time=span.start,
            offset_s=offset(span.start, start),
            duration_ms=span.duration_ms,
            thread=span.thread,
            error=span.error,
        )
        for span in spans
    ]


def summarize_spans(spans: list[SpanRow], max_rows: int) -> SpanStats | None:
    """Group by name (largest total first) and pick the slowest; None when there are none."""
    if not spans:
        return None
    by_name: dict[str, list[SpanRow]] = {}
    for span in spans:
        by_name.setdefault(span.name, []).append(span)
    groups = []
    for name, members in by_name.items():
        durations = [s.duration_ms for s in members]
        total = sum(durations)
        groups.append(
            SpanGroup(
                name=name,
                count=len(members),
                error_count=sum(1 for s in members if s.error is not None),
                total_ms=total,
                mean_ms=total / len(members),
                p95_ms=quantile(durations, 0.95),
                max_ms=max(durations),
            )
        )
    groups.sort(key=lambda g: (-g.total_ms, g.name))
    slowest = sorted(spans, key=lambda s: (-s.duration_ms, s.start_time))
    return SpanStats(
        count=len(spans),
        group_count=len(groups),
        groups=tuple(groups[:max_rows]),
        slowest=tuple(slowest[:max_rows]),
    )


def gc_pause_rows(pauses: list[GcPause], start: float | None) -> list[GcPauseRow]:
    """``gc-pause`` records as rows, in stored order."""
    return [
        GcPauseRow(
            time=pause.start,
            offset_s=offset(pause.start, start),
            generation=pause.generation,
            duration_ms=pause.duration_ms,
            collected=pause.collected,
            uncollectable=pause.uncollectable,
            thread=pause.thread,
        )
        for pause in pauses
    ]


def summarize_gc_pauses(pauses: list[GcPauseRow], max_rows: int) -> GcPauseSummary | None:
    """Totals, per-generation figures and the worst pauses; None when there are none."""
    if not pauses:
        return None
    by_generation: dict[int, list[float]] = {}
    for pause in pauses:
        by_generation.setdefault(pause.generation, []).append(pause.duration_ms)
    worst = sorted(pauses, key=lambda p: (-p.duration_ms, p.time))
    return GcPauseSummary(
        count=len(pauses),
        total_ms=sum(p.duration_ms for p in pauses),
        max_ms=max(p.duration_ms for p in pauses),
        by_generation=tuple(
            GcGeneration(generation, len(durations), sum(durations), max(durations))
            for generation, durations in sorted(by_generation.items())
        ),
        worst=tuple(worst[:max_rows]),
    )


def import_rows(imports: list[ImportTime]) -> list[ImportRow]:
    """``import-time`` records as rows, slowest cumulative time first."""
    rows = [
        ImportRow(
            module=item.module,
            cumulative_ms=item.cumulative_ms,
            self_ms=item.self_ms,
            parent=item.parent,
            thread=item.thread,
            time=item.time,
        )
        for item in imports
    ]
    rows.sort(key=lambda row: (-row.cumulative_ms, row.module))
    return rows


def summarize_imports(imports: list[ImportRow], max_rows: int) -> ImportSummary | None:
    """The ``max_rows`` slowest imports by cumulative time (``imports`` come sorted so)."""
    return ImportSummary(len(imports), tuple(imports[:max_rows])) if imports else None
