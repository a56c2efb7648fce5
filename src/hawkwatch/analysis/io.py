"""The session report's I/O section: ``io-issue`` records → ``IoIssueRow``s (pure).

The agent rewrites an issue's record as its count grows, so the last record of each key wins.
Rows come in the rules' order (loop-thread I/O, small buffer, repeated read, unclosed), each
type's most frequent first.
"""

from __future__ import annotations

from collections.abc import Iterable

from hawkwatch.model.io import ISSUE_TYPES
from hawkwatch.model.io_rows import IoFrameRow, IoIssueRow
from hawkwatch.model.records.io import IoIssue


def build_io_issues(issues: Iterable[IoIssue]) -> tuple[IoIssueRow, ...]:
    """One row per issue key (the last record of a key wins), decoded records in stored order."""
    latest: dict[str, IoIssue] = {}
    for issue in issues:
        latest[issue.record_key()] = issue
    rows = [_row(issue) for issue in latest.values()]
    order = {kind: index for index, kind in enumerate(ISSUE_TYPES)}
    rows.sort(key=lambda row: (order.get(row.type, len(order)), -row.count, row.path))
    return tuple(rows)


def _row(issue: IoIssue) -> IoIssueRow:
    return IoIssueRow(
        type=issue.type,
        path=issue.path,
        thread=issue.thread,
        ops=issue.ops,
        bytes=issue.bytes,
        buffer_size=issue.buffer_size,
        cost_ms=issue.cost_ms,
        frames=tuple(IoFrameRow(f.function, f.file, f.line) for f in issue.frames),
        count=issue.count,
        unwatched=issue.unwatched,
        sampled_one_in=issue.sampled_one_in,
    )
