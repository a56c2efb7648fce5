"""The stall section of the console report: totals, groups by blocking place, longest stalls."""

from __future__ import annotations

from collections.abc import Iterator

from rich.console import Group
from rich.text import Text

from hawkwatch.model.report import StallSummary
from hawkwatch.report._tables import simple_table
from hawkwatch.report.paths import short_frame


def stall_section(stalls: StallSummary) -> Iterator[Group]:
    """Groups (where the loop blocked, with the source line), longest stalls, hang kills."""
    if stalls.count:
        title = (
            f"Stalls ({stalls.count:,}, {_ms(stalls.total_ms)} in all; "
            f"p50 {_ms(stalls.p50_ms)}, p95 {_ms(stalls.p95_ms)}, longest {_ms(stalls.max_ms)})"
        )
        groups = simple_table()
        groups.add_column("stalls", justify="right", no_wrap=True)
        groups.add_column("total", justify="right", no_wrap=True)
        groups.add_column("longest", justify="right", no_wrap=True)
        groups.add_column("loop", no_wrap=True)
        groups.add_column("blocking frame", overflow="fold")
        for group in stalls.groups:
            where = Text(short_frame(group.frame))
            if group.source_line:
                where.append("\n    " + group.source_line, style="dim")
            groups.add_row(
                f"{group.count:,}",
                _ms(group.total_ms),
                _ms(group.max_ms),
                Text(group.loop or ""),
                where,
            )
        yield Group(Text(title, style="bold"), groups)
        longest = simple_table()
        longest.add_column("at", justify="right", no_wrap=True)
        longest.add_column("duration", justify="right", no_wrap=True)
        longest.add_column("loop", no_wrap=True)
        longest.add_column("thread", overflow="fold")
        longest.add_column("GC", justify="right", no_wrap=True)
        # the column that gives way folds: file:line is never cut off
        longest.add_column("blocking frame", overflow="fold", ratio=1)
        for row in stalls.longest:
            longest.add_row(
                "?" if row.offset_s is None else f"{row.offset_s:+,.3f} s",
                _ms(row.duration_ms),
                Text(row.loop or ""),
                Text(row.thread or ""),
                "" if not row.gc_ms else _ms(row.gc_ms),
                Text(short_frame(row.frame) if row.frame else "(no stack)"),
            )
        yield Group(Text("Longest stalls", style="bold"), longest)
    if stalls.hang_kills:
        kills = simple_table()
        kills.add_column("previous session")
        kills.add_column("stalled for", justify="right")
        kills.add_column("loop")
        kills.add_column("stalled in", overflow="fold")
        for kill in stalls.hang_kills:
            kills.add_row(
                Text(kill.previous_session),
                "?" if kill.duration_ms is None else f"≥ {_ms(kill.duration_ms)}",
                Text(kill.loop or ""),
                Text(short_frame(kill.frame) if kill.frame else "(no stack)"),
            )
        yield Group(Text("Killed while stalled (earlier runs)", style="bold"), kills)


def _ms(value: float) -> str:
    return f"{value:,.1f} ms"
