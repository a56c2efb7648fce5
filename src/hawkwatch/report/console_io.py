"""The console report's I/O section: one entry per ``io-issue`` — what, where, how much."""

from __future__ import annotations

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from hawkwatch.model.io_rows import IoIssueRow
from hawkwatch.report.paths import short_path

#: What each type means, in a few words.
_WHAT = {
    "loop-thread-io": "blocking I/O on the loop thread",
    "small-buffer": "read or written in small pieces",
    "repeated-read": "read whole again and again",
    "unclosed": "dropped without close()",
}


def io_section(issues: tuple[IoIssueRow, ...]) -> Group:
    """A table of issues: the opening function says where to look, the numbers how bad."""
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    table.add_column("issue", no_wrap=True)
    table.add_column("count", justify="right", no_wrap=True)
    table.add_column("opened in · file · ops", overflow="fold")
    for issue in issues:
        where = Text("(no stack)")
        if issue.frames:
            top = issue.frames[0]
            where = Text(f"{top.function} ({short_path(top.file)}:{top.line})")
        where.append(f"\n{issue.path}", style="dim")
        where.append(
            f"\n{issue.ops:,} ops, {_size(issue.bytes)}, largest {_size(issue.buffer_size)}, "
            f"{issue.cost_ms:,.2f} ms, thread {issue.thread}",
            style="dim",
        )
        if issue.unwatched:
            where.append(f"\n{_sampled(issue)}", style="yellow")
        table.add_row(Text(f"{issue.type}\n{_WHAT.get(issue.type, '')}"), f"{issue.count:,}", where)
    total = sum(issue.count for issue in issues)
    kinds = f"{len(issues):,} kind{'s' if len(issues) != 1 else ''}"
    title = f"File I/O issues ({kinds}, {total:,} in all)"
    return Group(Text(title, style="bold"), table)


def _sampled(issue: IoIssueRow) -> str:
    """Sampling said, not hidden: the count covers the watched files only."""
    return (
        f"sampled site: {issue.unwatched:,} files opened here went unwatched (1 in "
        f"{issue.sampled_one_in:,} watched) before this was found; the count may miss some"
    )


def _size(count: int) -> str:
    for unit, scale in (("MB", 1 << 20), ("KB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:,.1f} {unit}"
    return f"{count:,} B"
