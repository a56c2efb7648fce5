"""Timed work the agent records one by one: spans, GC pauses and imports.

Each ``parse_*`` turns records into rows, leaving out (and counting in ``findings``) those whose
values cannot be used; each ``summarize_*`` groups rows for the report. Pure functions.
"""

from __future__ import annotations

from hawkwatch.analysis._values import (
    Findings,
    number_field,
    offset,
    optional_int,
    optional_number,
    optional_text,
    parse_each,
    parse_number,
    parse_object,
    time_and_object,
)
from hawkwatch.analysis.series import quantile
from hawkwatch.model import Record
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


def parse_spans(records: list[Record], start: float | None, findings: Findings) -> list[SpanRow]:
    """``custom-span`` records in stored order; the start is the value's ``start``, else the key."""

    def row(record: Record) -> SpanRow:
        moment, data = time_and_object(record, "start")
        duration_ms = number_field(data, "duration_ms")
        name = data.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError("missing text 'name'")
        if duration_ms < 0:
            raise ValueError("negative 'duration_ms'")
        return SpanRow(
            name=name,
            start_time=moment,
            offset_s=offset(moment, start),
            duration_ms=duration_ms,
            thread=optional_text(data, "thread"),
            error=optional_text(data, "error"),
        )

    return parse_each(records, findings, row)


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


def parse_gc_pauses(
    records: list[Record], start: float | None, findings: Findings
) -> list[GcPauseRow]:
    """``gc-pause`` records (key: start time) in stored order."""

    def row(record: Record) -> GcPauseRow:
        moment = parse_number(record.key, "key")
        data = parse_object(record.value)
        duration_ms = number_field(data, "duration_ms")
        generation = optional_int(data, "generation")
        if generation is None:
            raise ValueError("missing integer 'generation'")
        if duration_ms < 0:
            raise ValueError("negative 'duration_ms'")
        return GcPauseRow(
            time=moment,
            offset_s=offset(moment, start),
            generation=generation,
            duration_ms=duration_ms,
            collected=optional_int(data, "collected"),
            uncollectable=optional_int(data, "uncollectable"),
            thread=optional_text(data, "thread"),
        )

    return parse_each(records, findings, row)


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


def parse_imports(records: list[Record], findings: Findings) -> list[ImportRow]:
    """``import-time`` records (key: module name), slowest cumulative time first."""

    def row(record: Record) -> ImportRow:
        data = parse_object(record.value)
        self_us = optional_number(data, "self_us")
        return ImportRow(
            module=record.key,
            cumulative_ms=number_field(data, "cumulative_us") / 1000,
            self_ms=None if self_us is None else self_us / 1000,
            parent=optional_text(data, "parent"),
            thread=optional_text(data, "thread"),
            time=optional_number(data, "time"),
        )

    rows = parse_each(records, findings, row)
    rows.sort(key=lambda row: (-row.cumulative_ms, row.module))
    return rows


def summarize_imports(imports: list[ImportRow], max_rows: int) -> ImportSummary | None:
    """The ``max_rows`` slowest imports by cumulative time (``imports`` come sorted so)."""
    return ImportSummary(len(imports), tuple(imports[:max_rows])) if imports else None
