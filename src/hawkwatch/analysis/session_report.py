"""The session report: one run's records and metadata → ``SessionReport`` (pure).

Works on hawkwatch's sessions and on MTHawkeye folders alike: only collection names and value
shapes matter (``docs/collections.md``). Records are decoded through their types
(``model.records.decode_all``); nothing here raises on bad data: a record that does not decode
is left out and counted in ``SessionReport.findings`` (collection, reason, count, first key).

Times: the session starts at the ``launch-time`` record, else ``start_time`` in ``session.json``,
else the launch origin, else the earliest record; it ends at the latest moment any record speaks
of (a sample, an event, the end of a span or GC pause, the exit, the last launch phase).
Resource statistics are time-weighted over that span; see ``hawkwatch.analysis.series``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, NamedTuple

from hawkwatch.analysis import series as _series
from hawkwatch.analysis.calltree import build_profile_tree
from hawkwatch.analysis.crash_report import crash_rows, summarize_exit
from hawkwatch.analysis.io import build_io_issues
from hawkwatch.analysis.launch import build_launch_breakdown
from hawkwatch.analysis.memory_report import COLLECTIONS as MEMORY_COLLECTIONS
from hawkwatch.analysis.memory_report import build_memory_report
from hawkwatch.analysis.series import offset
from hawkwatch.analysis.session_info import build_session_info
from hawkwatch.analysis.session_views import build_flame, build_timeline, build_waterfall
from hawkwatch.analysis.stall_report import ReadLine, summarize_stalls
from hawkwatch.analysis.timings import (
    gc_pause_rows,
    import_rows,
    span_rows,
    summarize_gc_pauses,
    summarize_imports,
    summarize_spans,
)
from hawkwatch.model import Record
from hawkwatch.model import collections as c
from hawkwatch.model.memory_report import MemoryReport
from hawkwatch.model.profile import CallTree
from hawkwatch.model.records import (
    RECORD_TYPES,
    Anr,
    AppLaunch,
    CpuProfile,
    Crash,
    CustomSpan,
    CustomTimeEvent,
    DecodedRecords,
    ExitClassification,
    ExitState,
    GcPause,
    HangKill,
    HawkwatchError,
    ImportTime,
    IoIssue,
    LaunchTime,
    NetworkTransaction,
    Rejected,
    ScalarRecord,
    decode_all,
)
from hawkwatch.model.report import (
    CollectionCount,
    CpuSummary,
    ErrorRow,
    EventRow,
    Finding,
    LaunchBreakdown,
    SeriesStats,
    SessionReport,
    SessionSource,
)
from hawkwatch.model.report import (
    ExitState as ExitStateRow,
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
_REPORTED: Final = frozenset(spec.collection for spec in SERIES) | {
    c.CUSTOM_TIME_EVENT,
    c.CUSTOM_SPAN,
    c.GC_PAUSE,
    c.EXIT_STATE,
    c.HAWKWATCH_ERROR,
    c.LAUNCH_TIME,
    c.APP_LAUNCH,
    c.IMPORT_TIME,
    c.ANR,
    c.HANG_KILL,
    c.IO_ISSUE,
    c.CRASH,
    c.EXIT_CLASSIFICATION,
}
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
    profile: CallTree | None = None,
    profile_source: str = "",
    transactions: Sequence[NetworkTransaction] | None = None,
) -> SessionReport:
    """Summarise one session.

    ``metadata`` is ``session.json`` (``{}`` for MTHawkeye folders); ``source`` defaults to
    "hawkwatch" when there is metadata, else "mthawkeye". ``skipped_lines`` is passed through
    from the store reader. Lists are capped: ``max_events`` events and errors, ``max_rows`` rows
    in the other tables; charts get ``chart_points`` points. ``read_line(file, line)`` gives
    the source text shown beside each stall group's blocking frame (``linecache.getline``).
    ``cpu`` (from ``analysis.cpu_report``, built by the caller who can read side files) is
    passed through. The memory section comes from the memory monitor's records.
    ``profile`` is the CPU call tree the flame graph draws (default: the profiler windows stored
    in the records themselves), ``profile_source`` says where it came from; ``transactions``
    are the HTTP requests of the waterfall (default: the ``network-transaction`` records).
    """
    all_records = list(records)
    memory: MemoryReport | None = build_memory_report(all_records)
    if memory is not None and memory.is_empty:
        memory = None
    decoded = decode_all(all_records)
    start = _start_time(decoded.of(LaunchTime), metadata)
    launch = _launch(decoded.of(AppLaunch), start)
    if start is None and launch is not None:
        start = launch.origin_time
    if start is None:
        start = _earliest_time(decoded)

    samples = {spec.collection: _samples(decoded, spec.collection) for spec in SERIES}
    events = _events(decoded.of(CustomTimeEvent), start)
    spans = span_rows(decoded.of(CustomSpan), start)
    pauses = gc_pause_rows(decoded.of(GcPause), start)
    imports = import_rows(decoded.of(ImportTime))
    exit_state = _exit_state(decoded.of(ExitState), start)
    errors = _errors(decoded.of(HawkwatchError), start)
    crashes = crash_rows(decoded.of(Crash), start)
    exit_state = summarize_exit(
        exit_state,
        decoded.of(ExitState),
        decoded.of(ExitClassification),
        crashes,
        start=start,
    )
    stalls = summarize_stalls(
        decoded.keyed(Anr),
        decoded.of(HangKill),
        start,
        max_rows=max_rows,
        read_line=read_line,
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
    if transactions is None:
        transactions = decoded.of(NetworkTransaction)
    if profile is None:
        profile, profile_source = _inline_profile(decoded.of(CpuProfile), name)
    timeline = None
    if start is not None and end is not None:
        timeline = build_timeline(
            start=start,
            end=end,
            series=[(s.collection, s.label, s.unit, samples[s.collection]) for s in SERIES],
            anr=decoded.keyed(Anr),
            pauses=pauses,
            spans=spans,
            events=events,
            crashes=crashes,
            exit_time=exit_state.time if exit_state is not None else None,
        )
    other = tuple(
        CollectionCount(name, decoded.count(name))
        for name in sorted({*decoded.typed, *decoded.raw})
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
        findings=findings_of(decoded.rejected),
        skipped_lines=skipped_lines,
        stalls=stalls,
        cpu=cpu,
        io_issues=build_io_issues(decoded.of(IoIssue)),
        crashes=tuple(crashes[:max_rows]),
        memory=memory,
        timeline=timeline,
        flame=build_flame(profile, profile_source) if profile is not None else None,
        network=build_waterfall(transactions, start) if start is not None else None,
    )


def _inline_profile(windows: list[CpuProfile], name: str) -> tuple[CallTree | None, str]:
    """The cpu call tree of the profiler windows stored inline (side files need the folder)."""
    profiles = [window.to_profile() for window in windows if window.file is None]
    if not profiles:
        return None, ""
    count = len(profiles)
    said = f"{count} profiler window{'' if count == 1 else 's'} stored in the records"
    return build_profile_tree(profiles, "cpu", name=name), said


def findings_of(rejected: Iterable[Rejected]) -> tuple[Finding, ...]:
    """Rejected records counted per (collection, reason), with the first key of each."""
    found: dict[tuple[str, str], list[Any]] = {}
    for item in rejected:
        found.setdefault((item.collection, item.reason), [0, item.key])[0] += 1
    return tuple(
        Finding(collection, reason, count, first_key)
        for (collection, reason), (count, first_key) in sorted(found.items())
    )


def _start_time(launch_times: list[LaunchTime], metadata: Mapping[str, Any]) -> float | None:
    if launch_times:
        return launch_times[0].start
    started = metadata.get("start_time")
    if isinstance(started, int | float) and not isinstance(started, bool) and started > 0:
        return float(started)
    return None


def _earliest_time(decoded: DecodedRecords) -> float | None:
    """The earliest time a series sample, event, span, pause, exit or error speaks of."""
    moments = [sample.time for spec in SERIES for sample in _samples(decoded, spec.collection)[:1]]
    moments += [e.time for e in decoded.of(CustomTimeEvent)]
    moments += [s.start for s in decoded.of(CustomSpan)]
    moments += [p.start for p in decoded.of(GcPause)]
    moments += [e.time for e in decoded.of(ExitState)]
    moments += [e.time for e in decoded.of(HawkwatchError)]
    return min(moments, default=None)


def _launch(records: list[AppLaunch], start: float | None) -> LaunchBreakdown | None:
    """The last ``app-launch`` record (the agent rewrites it as launch progresses)."""
    return build_launch_breakdown(records[-1], fallback_origin=start) if records else None


def _samples(decoded: DecodedRecords, collection: str) -> list[_series.Sample]:
    kind = RECORD_TYPES[collection]
    found = [
        _series.Sample(item.time, item.value)
        for item in decoded.of(kind)
        if isinstance(item, ScalarRecord)
    ]
    return sorted(found, key=lambda sample: sample.time)


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


def _events(records: list[CustomTimeEvent], start: float | None) -> list[EventRow]:
    rows = [
        EventRow(
            time=event.time,
            offset_s=offset(event.time, start),
            name=event.event or "",
            extra=event.extra,
        )
        for event in records
    ]
    return sorted(rows, key=lambda row: row.time)


def _exit_state(records: list[ExitState], start: float | None) -> ExitStateRow | None:
    """The last ``exit-state`` in stored order (``hawkwatch run`` writes after the agent)."""
    if not records:
        return None
    last = records[-1]
    return ExitStateRow(
        time=last.time,
        offset_s=offset(last.time, start),
        clean=last.clean,
        exit_code=last.exit_code,
        signal=last.signal,
        source=last.source,
    )


def _errors(records: list[HawkwatchError], start: float | None) -> list[ErrorRow]:
    rows = [
        ErrorRow(
            time=error.time,
            offset_s=offset(error.time, start),
            plugin=error.plugin,
            phase=error.phase,
            error=error.error,
            traceback=error.traceback,
        )
        for error in records
    ]
    return sorted(rows, key=lambda row: row.time)
