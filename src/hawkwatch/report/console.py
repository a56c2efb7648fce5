"""The session report for a terminal, laid out with rich: one table or panel per section.

Lays out what ``SessionReport`` holds and computes nothing beyond formatting. Text from the
session (event names, span names, errors) is printed literally: rich markup and emoji codes are
off. Sections with nothing to show are left out.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, tzinfo
from typing import Final, TextIO

from rich import box
from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from hawkwatch.model.report import (
    ExitState,
    GcPauseSummary,
    ImportSummary,
    LaunchBreakdown,
    SeriesStats,
    SessionInfo,
    SessionReport,
    SpanStats,
)
from hawkwatch.report._tables import simple_table
from hawkwatch.report.console_crash import crash_section, exit_line
from hawkwatch.report.console_io import io_section
from hawkwatch.report.console_stall import stall_section
from hawkwatch.report.cpu_section import cpu_sections
from hawkwatch.report.memory_section import memory_section
from hawkwatch.report.sparkline import sparkline

output_file_extension = "txt"

_LAUNCH_BAR_WIDTH: Final = 24
_SOURCES: Final = {"hawkwatch": "hawkwatch session", "mthawkeye": "MTHawkeye session"}


def render(
    report: SessionReport, file: TextIO, width: int | None = None, *, tz: tzinfo | None = None
) -> None:
    """Write the report to ``file``, ``width`` columns wide (default: the terminal's, else 80).

    Clock times are shown in ``tz`` (default: the local time zone).
    """
    console = Console(
        file=file, width=width, markup=False, emoji=False, highlight=False, soft_wrap=False
    )
    first = True
    for section in _sections(report, tz):
        if not first:
            console.print()
        console.print(section)
        first = False


def _sections(report: SessionReport, tz: tzinfo | None) -> Iterator[RenderableType]:
    yield _session(report.session, tz)
    if report.launch is not None:
        yield _launch(report.launch)
    if report.resources:
        yield from _resources(report.resources)
    if report.cpu is not None:
        yield from cpu_sections(report.cpu)
    if report.memory is not None:
        yield memory_section(report.memory)
    if report.events:
        yield _events(report)
    if report.spans is not None:
        yield from _spans(report.spans)
    if report.stalls is not None:
        yield from stall_section(report.stalls)
    if report.io_issues:
        yield io_section(report.io_issues)
    if report.gc is not None:
        yield from _gc(report.gc)
    if report.imports is not None:
        yield _imports(report.imports)
    yield from crash_section(report.crashes)
    yield _exit(report.exit, report.session.source)
    if report.errors:
        yield _errors(report)
    if report.other_collections:
        table = simple_table()
        table.add_column("collection")
        table.add_column("records", justify="right")
        for count in report.other_collections:
            table.add_row(count.name, f"{count.count:,}")
        yield _titled("Other collections", table)
    if report.findings or report.skipped_lines:
        yield _skipped(report)


def _titled(title: str, table: Table, note: str | None = None) -> Group:
    """A section: its title on a line of its own (never wrapped to the table's width)."""
    parts: list[RenderableType] = [Text(title, style="bold"), table]
    if note:
        parts.append(Text(note, style="dim"))
    return Group(*parts)


def _session(info: SessionInfo, tz: tzinfo | None) -> Panel:
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True)
    grid.add_column()
    app = " ".join(part for part in (info.app_name, info.app_version) if part)
    rows: list[tuple[str, str | None]] = [
        ("app", app or None),
        ("source", _SOURCES.get(info.source, info.source)),
        ("started", None if info.start_time is None else _clock(info.start_time, tz)),
        ("observed", None if info.duration_s is None else _duration_s(info.duration_s)),
        ("records", f"{info.record_count:,}"),
        ("command", info.command),
        ("python", info.python),
        ("pid", None if info.pid is None else str(info.pid)),
        ("host", info.hostname),
        ("platform", info.platform),
        ("hawkwatch", info.hawkwatch_version),
    ]
    rows += [(entry.key, entry.value) for entry in info.details]
    for label, value in rows:
        if value is not None:
            grid.add_row(label, value)
    return Panel(grid, title=f"hawkwatch report · {info.name}", title_align="left", box=box.ROUNDED)


def _launch(launch: LaunchBreakdown) -> Group:
    title = "Launch"
    if launch.duration_ms is not None:
        title += f" · {_ms(launch.duration_ms)} from process start to {launch.end_label}"
    note = "not captured: " + ", ".join(launch.not_captured) if launch.not_captured else None
    table = simple_table()
    table.add_column("phase")
    table.add_column("at", justify="right")
    table.add_column("step", justify="right")
    table.add_column("")
    whole = max((phase.offset_ms for phase in launch.phases), default=0.0)
    for phase in launch.phases:
        table.add_row(
            phase.label, _ms(phase.offset_ms), _ms(phase.delta_ms), _bar(phase.delta_ms, whole)
        )
    return _titled(title, table, note)


def _bar(part: float, whole: float) -> str:
    if whole <= 0 or part <= 0:
        return ""
    cells = round(part / whole * _LAUNCH_BAR_WIDTH)
    return "█" * cells if cells else "▏"


def _resources(resources: tuple[SeriesStats, ...]) -> Iterator[Group]:
    table = simple_table()
    table.add_column("series", no_wrap=True)
    table.add_column("samples", justify="right", no_wrap=True)
    for name in ("min", "mean", "p95", "max", "last"):
        table.add_column(name, justify="right", no_wrap=True)
    for stats in resources:
        table.add_row(
            _series_label(stats),
            f"{stats.count:,}",
            *(
                _number(value, stats.unit)
                for value in (stats.min, stats.mean, stats.p95, stats.max, stats.last)
            ),
        )
    yield _titled(
        "Resources", table, "mean and p95 are weighted by time: each sample holds until the next"
    )
    charts = simple_table()
    charts.add_column("series", no_wrap=True)
    charts.add_column("from", justify="right", no_wrap=True)
    charts.add_column("min", justify="right", no_wrap=True)
    charts.add_column("", overflow="crop")  # the column that gives way in a narrow terminal
    charts.add_column("max", no_wrap=True)
    for stats in resources:
        charts.add_row(
            _series_label(stats),
            _at(stats.first_offset_s),
            _number(stats.min, stats.unit),
            sparkline(stats.points, stats.min, stats.max),
            _number(stats.max, stats.unit),
        )
    yield _titled(
        "Resources over time",
        charts,
        "charts span first sample → session end; each block is the mean of its slice",
    )


def _events(report: SessionReport) -> Group:
    shown, total = len(report.events), report.events_total
    note = f"first {shown:,} of {total:,} events" if shown < total else None
    table = simple_table()
    table.add_column("at", justify="right", no_wrap=True)
    table.add_column("event")
    table.add_column("extra")
    for event in report.events:
        table.add_row(_at(event.offset_s), Text(event.name or "(no name)"), Text(event.extra or ""))
    return _titled(f"Events ({total:,})", table, note)


def _spans(spans: SpanStats) -> Iterator[Group]:
    note = (
        f"largest {len(spans.groups):,} of {spans.group_count:,} names"
        if len(spans.groups) < spans.group_count
        else None
    )
    groups = simple_table()
    groups.add_column("name")
    for name in ("count", "total", "mean", "p95", "max", "errors"):
        groups.add_column(name, justify="right")
    for group in spans.groups:
        groups.add_row(
            Text(group.name),
            f"{group.count:,}",
            _ms(group.total_ms),
            _ms(group.mean_ms),
            _ms(group.p95_ms),
            _ms(group.max_ms),
            f"{group.error_count:,}" if group.error_count else "",
        )
    yield _titled(f"Spans ({spans.count:,} in {_plural(spans.group_count, 'name')})", groups, note)
    slowest = simple_table()
    slowest.add_column("at", justify="right", no_wrap=True)
    slowest.add_column("name")
    slowest.add_column("duration", justify="right")
    slowest.add_column("thread")
    slowest.add_column("error")
    for span in spans.slowest:
        slowest.add_row(
            _at(span.offset_s),
            Text(span.name),
            _ms(span.duration_ms),
            Text(span.thread or ""),
            Text(span.error or ""),
        )
    yield _titled("Slowest spans", slowest)


def _gc(gc: GcPauseSummary) -> Iterator[Group]:
    summary = simple_table()
    summary.add_column("generation", justify="right")
    summary.add_column("pauses", justify="right")
    summary.add_column("total", justify="right")
    summary.add_column("longest", justify="right")
    for generation in gc.by_generation:
        summary.add_row(
            str(generation.generation),
            f"{generation.count:,}",
            _ms(generation.total_ms),
            _ms(generation.max_ms),
        )
    title = f"GC pauses ({gc.count:,}, {_ms(gc.total_ms)} in all, longest {_ms(gc.max_ms)})"
    yield _titled(title, summary)
    worst = simple_table()
    worst.add_column("at", justify="right", no_wrap=True)
    worst.add_column("gen", justify="right")
    worst.add_column("duration", justify="right")
    worst.add_column("collected", justify="right")
    worst.add_column("thread")
    for pause in gc.worst:
        worst.add_row(
            _at(pause.offset_s),
            str(pause.generation),
            _ms(pause.duration_ms),
            "" if pause.collected is None else f"{pause.collected:,}",
            Text(pause.thread or ""),
        )
    yield _titled("Longest GC pauses", worst)


def _imports(imports: ImportSummary) -> Group:
    table = simple_table()
    table.add_column("module")
    table.add_column("cumulative", justify="right")
    table.add_column("self", justify="right")
    table.add_column("imported by")
    for row in imports.top:
        table.add_row(
            Text(row.module),
            _ms(row.cumulative_ms),
            "" if row.self_ms is None else _ms(row.self_ms),
            Text(row.parent or ""),
        )
    return _titled(f"Slowest imports ({len(imports.top):,} of {imports.count:,} recorded)", table)


def _exit(state: ExitState | None, source: str) -> Text:
    if state is None:
        if source == "mthawkeye":
            return Text("Exit: MTHawkeye does not record how a process ended")
        return Text("Exit: not recorded (killed without a supervisor, or still running)")
    if state.kind is not None:
        return exit_line(state)
    if state.signal is not None:
        how = f"killed by signal {state.signal}"
    elif state.exit_code is not None:
        how = f"exit code {state.exit_code}"
    else:
        how = "exit code unknown"
    where = ", ".join(
        part
        for part in (
            f"reported by {state.source}" if state.source else "",
            f"at {_at(state.offset_s)}" if state.offset_s is not None else "",
        )
        if part
    )
    line = f"Exit: {'clean' if state.clean else 'not clean'}, {how}"
    return Text(f"{line} ({where})" if where else line)


def _errors(report: SessionReport) -> Group:
    shown, total = len(report.errors), report.errors_total
    note = f"first {shown:,} of {total:,}" if shown < total else None
    table = simple_table()
    table.add_column("at", justify="right", no_wrap=True)
    table.add_column("monitor")
    table.add_column("phase")
    table.add_column("error")
    for error in report.errors:
        table.add_row(
            _at(error.offset_s),
            Text(error.plugin),
            Text(error.phase),
            Text(error.error.splitlines()[0] if error.error else ""),
        )
    return _titled(f"Monitor errors ({total:,})", table, note)


def _skipped(report: SessionReport) -> RenderableType:
    note = (
        f"the store reader also skipped {_plural(report.skipped_lines, 'unreadable line')}"
        if report.skipped_lines
        else None
    )
    if not report.findings:
        return Text(f"Skipped: {note}")
    table = simple_table()
    table.add_column("collection")
    table.add_column("reason")
    table.add_column("records", justify="right")
    table.add_column("first key")
    for finding in report.findings:
        table.add_row(
            finding.collection, Text(finding.reason), f"{finding.count:,}", Text(finding.first_key)
        )
    return _titled("Skipped records", table, note)


# -- formatting -------------------------------------------------------------------------------


def _clock(moment: float, tz: tzinfo | None) -> str:
    try:
        when = datetime.fromtimestamp(moment, tz) if tz else datetime.fromtimestamp(moment)
        when = when if tz else when.astimezone()
    except (OverflowError, OSError, ValueError):
        return f"{moment:.3f} (Unix time)"
    return when.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + when.strftime(" %z")


def _at(offset_s: float | None) -> str:
    return "?" if offset_s is None else f"{offset_s:+,.3f} s"


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}" if count == 1 else f"{count:,} {word}s"


def _ms(value: float) -> str:
    return f"{value:,.1f} ms"


def _duration_s(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes:.0f} min {rest:04.1f} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours:.0f} h {minutes:02.0f} min"


def _number(value: float, unit: str) -> str:
    if unit in ("MB", "%") and abs(value) < 1000:
        return f"{value:,.1f}"  # a decimal only where it is worth its column width
    return f"{value:,.0f}"


def _series_label(stats: SeriesStats) -> str:
    return f"{stats.label} ({stats.unit})" if stats.unit and stats.unit != "count" else stats.label
