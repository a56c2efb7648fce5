"""The console report's CPU section: high-load episodes and the profiler summary (rich).

Kept apart from ``console.py`` so the CPU layout is one small module; ``console`` yields these
groups right after the resource charts (CPU usage over time is the ``cpu`` series there).
"""

from __future__ import annotations

from collections.abc import Iterator

from rich.console import Group
from rich.table import Table
from rich.text import Text

from hawkwatch.model.report import CpuFrameRow, CpuSummary
from hawkwatch.report._tables import simple_table
from hawkwatch.report.paths import short_frame


def _titled(title: str, table: Table, note: str | None = None) -> Group:
    parts: list[Text | Table] = [Text(title, style="bold")]
    parts.append(table)
    if note:
        parts.append(Text(note, style="dim"))
    return Group(*parts)


def _frames(frames: tuple[CpuFrameRow, ...]) -> Text:
    return Text("\n".join(f"{f.self_percent:5.1f}% {short_frame(f.frame)}" for f in frames))


def cpu_sections(cpu: CpuSummary) -> Iterator[Group]:
    """One table of episodes (if any), one of the profiler's costliest frames (if it ran)."""
    if cpu.outside_note:
        yield Group(Text(cpu.outside_note, style="yellow"))
    if cpu.episodes_total:
        table = simple_table()
        table.add_column("at", justify="right", no_wrap=True)
        table.add_column("lasting", justify="right", no_wrap=True)
        table.add_column("average", justify="right", no_wrap=True)
        table.add_column("samples", justify="right", no_wrap=True)
        table.add_column("top frames (self %)", overflow="fold")
        for row in cpu.episodes:
            at = "?" if row.offset_s is None else f"{row.offset_s:+,.1f} s"
            threads = f"\nthreads: {', '.join(row.threads)}" if row.threads else ""
            frames = _frames(row.top_frames)
            frames.append(threads, style="dim")
            table.add_row(
                at,
                f"{row.lasting_s:,.1f} s",
                f"{row.average_percent:,.1f}%",
                f"{row.samples:,}",
                frames,
            )
        shown = len(cpu.episodes)
        note = f"longest {shown} of {cpu.episodes_total}" if shown < cpu.episodes_total else None
        yield _titled(f"CPU high load ({cpu.episodes_total:,} episodes)", table, note)
    if cpu.profiler is not None:
        p = cpu.profiler
        table = simple_table()
        table.add_column("self", justify="right", no_wrap=True)
        table.add_column("95% CI", justify="right", no_wrap=True)
        table.add_column("total", justify="right", no_wrap=True)
        table.add_column("frame", overflow="fold")
        for frame in p.top_frames:
            table.add_row(
                f"{frame.self_percent:.1f}%",
                f"{frame.self_low_percent:.1f}–{frame.self_high_percent:.1f}",
                f"{frame.total_percent:.1f}%",
                Text(short_frame(frame.frame)),
            )
        cost = "" if p.sampler == "py-spy" else f", sampler cost {p.cost_percent:.2f}% of a core"
        sampler = f"{p.sampler}, " if p.sampler else ""
        title = (
            f"CPU profile ({sampler}{p.mode_samples:,} cpu samples over {p.duration_s:,.1f} s, "
            f"{p.rate_hz:.1f} Hz{cost})"
        )
        yield _titled(
            title,
            table,
            "cpu mode: samples of threads that were running; "
            "export with 'hawkwatch profile SESSION --format svg'",
        )
    burn = cpu.short_burn
    if burn is not None and not cpu.episodes_total:
        yield Group(
            Text(
                f"No CPU high-load episode: the longest burn ({burn.lasting_s:,.1f} s at "
                f"{burn.average_percent:,.0f}%) was shorter than cpu.highload_min_duration_s "
                f"({burn.min_duration_s:g} s); lower it to record shorter ones",
                style="dim",
            )
        )
    if cpu.skipped:
        yield Group(
            Text(f"{cpu.skipped:,} CPU records or side files could not be read", style="dim")
        )
