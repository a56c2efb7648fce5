"""The session report: one run's records and metadata → ``SessionReport`` (pure).

Works on hawkwatch's sessions and on MTHawkeye folders alike: only collection names and value
shapes matter (``docs/collections.md``). Nothing here raises on bad data: a record whose key or
value cannot be used is left out and counted in ``SessionReport.findings``.

Times: the session starts at the ``launch-time`` record, else ``start_time`` in ``session.json``,
else the launch origin, else the earliest record; it ends at the latest moment any record speaks
of (a sample, an event, the end of a span or GC pause, the exit, the last launch phase).
Resource statistics are time-weighted over that span; see ``hawkwatch.analysis.series``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final, NamedTuple

from hawkwatch.analysis import series as _series
from hawkwatch.analysis._values import (
    Findings,
    offset,
    optional_int,
    optional_text,
    parse_each,
    parse_number,
    parse_object,
    time_and_object,
)
from hawkwatch.analysis.launch import build_launch_breakdown
from hawkwatch.analysis.memory_report import COLLECTIONS as MEMORY_COLLECTIONS
from hawkwatch.analysis.memory_report import build_memory_report
from hawkwatch.analysis.session_info import build_session_info
from hawkwatch.analysis.stall_report import ReadLine, summarize_stalls
from hawkwatch.analysis.timings import (
    parse_gc_pauses,
    parse_imports,
    parse_spans,
    summarize_gc_pauses,
    summarize_imports,
    summarize_spans,
)
from hawkwatch.model import Record
from hawkwatch.model import collections as c
from hawkwatch.model.memory_report import MemoryReport
from hawkwatch.model.report import (
    CollectionCount,
    CpuSummary,
    ErrorRow,
    EventRow,
    ExitState,
    LaunchBreakdown,
    SeriesStats,
    SessionReport,
    SessionSource,
)


class SeriesSpec(NamedTuple):
    collection: str
    label: str
    unit: str


#: The sampled series a report summarises, in report order.
SERIES: Final = (
    SeriesSpec(c.MEMORY_RESIDENT, "resident memory", "MB"),
    SeriesSpec(c.RESIDENT_FOOTPRINT, "memory footprint", "MB"),
    SeriesSpec(c.AVAILABLE_MEMORY, "available memory", "MB"),
    SeriesSpec(c.CPU, "CPU", "%"),
    SeriesSpec(c.THREADS_COUNT, "threads", "count"),
    SeriesSpec(c.FPS, "frame rate", "fps"),
    SeriesSpec(c.GL_FPS, "GL frame rate", "fps"),
)
_SERIES_NAMES: Final = frozenset(spec.collection for spec in SERIES)
_TIME_KEYED: Final = _SERIES_NAMES | {
    c.CUSTOM_TIME_EVENT,
    c.CUSTOM_SPAN,
    c.GC_PAUSE,
    c.EXIT_STATE,
    c.HAWKWATCH_ERROR,
}
_REPORTED: Final = _TIME_KEYED | {c.LAUNCH_TIME, c.APP_LAUNCH, c.IMPORT_TIME, c.ANR, c.HANG_KILL}
_CPU_COLLECTIONS: Final = frozenset({c.CPU_HIGHLOAD, c.CPU_HIGHLOAD_STACKFRAME, c.CPU_PROFILE})


def build_session_report(
    records: Iterable[Record],
    metadata: Mapping[str, Any],
    *,
    name: str,
    source: SessionSource | None = None,
    skipped_lines: int = 0,
    max_events: int = 50,
    max_rows: int = 10,
    chart_points: int = 30,
    read_line: ReadLine | None = None,
    cpu: CpuSummary | None = None,
) -> SessionReport:
    """Summarise one session.

    ``metadata`` is ``session.json`` (``{}`` for MTHawkeye folders); ``source`` defaults to
    "hawkwatch" when there is metadata, else "mthawkeye". ``skipped_lines`` is passed through
    from the store reader. Lists are capped: ``max_events`` events and errors, ``max_rows`` rows
    in the other tables; charts get ``chart_points`` points. ``read_line(file, line)`` gives
    the source text shown beside each stall group's blocking frame (``linecache.getline``).
    ``cpu`` (from ``analysis.cpu_report``, built by the caller who can read side files) is
    passed through. The memory section comes from the memory monitor's records.
    """
    all_records = list(records)
    memory: MemoryReport | None = build_memory_report(all_records)
    if memory is not None and memory.is_empty:
        memory = None
    grouped: dict[str, list[Record]] = {}
    for record in all_records:
        grouped.setdefault(record.collection, []).append(record)
    findings = Findings()

    def of(collection: str) -> list[Record]:
        return grouped.get(collection, [])

    start = _start_time(of(c.LAUNCH_TIME), metadata, findings)
    launch = _launch(of(c.APP_LAUNCH), start, findings)
    if start is None and launch is not None:
        start = launch.origin_time
    if start is None:
        start = _earliest_time(all_records)

    samples = {spec.collection: _samples(of(spec.collection), findings) for spec in SERIES}
    events = _events(of(c.CUSTOM_TIME_EVENT), start, findings)
    spans = parse_spans(of(c.CUSTOM_SPAN), start, findings)
    pauses = parse_gc_pauses(of(c.GC_PAUSE), start, findings)
    imports = parse_imports(of(c.IMPORT_TIME), findings)
    exit_state = _exit_state(of(c.EXIT_STATE), start, findings)
    errors = _errors(of(c.HAWKWATCH_ERROR), start, findings)
    stalls = summarize_stalls(
        of(c.ANR), of(c.HANG_KILL), start, findings, max_rows=max_rows, read_line=read_line
    )

    moments = [s.time for series in samples.values() for s in series]
    moments += [e.time for e in events]
    moments += [s.start_time + s.duration_ms / 1000 for s in spans]
    moments += [p.time + p.duration_ms / 1000 for p in pauses]
    moments += [e.time for e in errors]
    if stalls is not None:
        moments += [s.time + s.duration_ms / 1000 for s in stalls.longest]
    if exit_state is not None:
        moments.append(exit_state.time)
    if launch is not None:
        moments += [phase.time for phase in launch.phases]
    if start is not None:
        moments.append(start)
    end = max(moments) if moments else None

    resources = tuple(
        _series_stats(spec, samples[spec.collection], start, end, chart_points)
        for spec in SERIES
        if samples[spec.collection]
    )
    other = tuple(
        CollectionCount(name, len(found))
        for name, found in sorted(grouped.items())
        if name not in _REPORTED
        and not (cpu is not None and name in _CPU_COLLECTIONS)
        and not (memory is not None and name in MEMORY_COLLECTIONS)
    )
    return SessionReport(
        session=build_session_info(
            metadata,
            name=name,
            source=source or ("hawkwatch" if metadata else "mthawkeye"),
            start=start,
            end=end,
            record_count=len(all_records),
        ),
        launch=launch,
        resources=resources,
        events=tuple(events[:max_events]),
        events_total=len(events),
        spans=summarize_spans(spans, max_rows),
        gc=summarize_gc_pauses(pauses, max_rows),
        imports=summarize_imports(imports, max_rows),
        exit=exit_state,
        errors=tuple(errors[:max_events]),
        errors_total=len(errors),
        other_collections=other,
        findings=findings.result(),
        skipped_lines=skipped_lines,
        stalls=stalls,
        cpu=cpu,
        memory=memory,
    )


def _start_time(
    launch_times: list[Record], metadata: Mapping[str, Any], findings: Findings
) -> float | None:
    for record in launch_times:
        try:
            return parse_number(record.key, "key")
        except ValueError as exc:
            findings.add(record, str(exc))
    started = metadata.get("start_time")
    if isinstance(started, int | float) and not isinstance(started, bool) and started > 0:
        return float(started)
    return None


def _earliest_time(records: list[Record]) -> float | None:
    earliest: float | None = None
    for record in records:
        if record.collection not in _TIME_KEYED:
            continue
        try:
            moment = parse_number(record.key)
        except ValueError:
            continue  # counted where the record is parsed
        earliest = moment if earliest is None else min(earliest, moment)
    return earliest


def _launch(
    records: list[Record], start: float | None, findings: Findings
) -> LaunchBreakdown | None:
    """The last usable ``app-launch`` record (the agent rewrites it as launch progresses)."""
    for record in reversed(records):
        try:
            breakdown, problems = build_launch_breakdown(
                parse_object(record.value), fallback_origin=start
            )
        except ValueError as exc:
            findings.add(record, str(exc))
            continue
        for problem in problems:
            findings.add(record, problem)
        return breakdown
    return None


def _samples(records: list[Record], findings: Findings) -> list[_series.Sample]:
    def sample(record: Record) -> _series.Sample:
        return _series.Sample(parse_number(record.key, "key"), parse_number(record.value))

    return sorted(parse_each(records, findings, sample), key=lambda found: found.time)


def _series_stats(
    spec: SeriesSpec,
    samples: list[_series.Sample],
    start: float | None,
    end: float | None,
    chart_points: int,
) -> SeriesStats:
    last_time = samples[-1].time
    until = last_time if end is None else max(end, last_time)
    values = [s.value for s in samples]
    weights = _series.holding_times(samples, until)
    return SeriesStats(
        collection=spec.collection,
        label=spec.label,
        unit=spec.unit,
        count=len(samples),
        min=min(values),
        mean=_series.weighted_mean(values, weights),
        p95=_series.weighted_quantile(values, weights, 0.95),
        max=max(values),
        first_time=samples[0].time,
        last_time=last_time,
        last=values[-1],
        points=_series.step_means(samples, until, chart_points),
        first_offset_s=offset(samples[0].time, start),
    )


def _events(records: list[Record], start: float | None, findings: Findings) -> list[EventRow]:
    def row(record: Record) -> EventRow:
        moment, data = time_and_object(record, "time")
        return EventRow(
            time=moment,
            offset_s=offset(moment, start),
            name=optional_text(data, "event") or "",
            extra=optional_text(data, "extra"),
        )

    return sorted(parse_each(records, findings, row), key=lambda found: found.time)


def _exit_state(records: list[Record], start: float | None, findings: Findings) -> ExitState | None:
    """The last usable ``exit-state`` in stored order (``hawkwatch run`` writes after the agent)."""
    found: ExitState | None = None
    for record in records:
        try:
            moment = parse_number(record.key, "key")
            data = parse_object(record.value)
            clean = data.get("clean")
            if not isinstance(clean, bool):
                raise ValueError("missing true/false 'clean'")
        except ValueError as exc:
            findings.add(record, str(exc))
            continue
        found = ExitState(
            time=moment,
            offset_s=offset(moment, start),
            clean=clean,
            exit_code=optional_int(data, "exit_code"),
            signal=optional_int(data, "signal"),
            source=optional_text(data, "source"),
        )
    return found


def _errors(records: list[Record], start: float | None, findings: Findings) -> list[ErrorRow]:
    def row(record: Record) -> ErrorRow:
        moment = parse_number(record.key, "key")
        data = parse_object(record.value)
        return ErrorRow(
            time=moment,
            offset_s=offset(moment, start),
            plugin=optional_text(data, "plugin") or "",
            phase=optional_text(data, "phase") or "",
            error=optional_text(data, "error") or "",
            traceback=optional_text(data, "traceback"),
        )

    return sorted(parse_each(records, findings, row), key=lambda found: found.time)
