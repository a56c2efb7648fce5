"""IOCanary's four rules over ``FileStats`` (``../shared/design/detectors.md`` §3.2), pure.

The agent calls these on the host's threads as files close, so each is a handful of
comparisons; only ``RepeatedReads`` keeps state (the rows of identical reads per path).
Unclosed files need no rule: the finaliser's call is the finding.
"""

from __future__ import annotations

from hawkwatch.model.io import SMALL_BUFFER, FileStats, IoRules

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any


def loop_thread_io(stats: FileStats, rules: IoRules) -> bool:
    """A single op on a loop thread over ``loop_op_ns``, or continual loop I/O over the limit."""
    return rules.loop_thread and (
        stats.loop_max_op_ns > rules.loop_op_ns or stats.loop_max_run_ns > rules.loop_continual_ns
    )


def small_buffer(stats: FileStats, rules: IoRules) -> bool:
    """More than ``small_buffer_ops`` ops asking for under ``small_buffer_bytes`` on average."""
    return (
        rules.small_buffer
        and stats.ops > rules.small_buffer_ops
        and stats.requested < rules.small_buffer_bytes * stats.ops
        and stats.max_run_ns >= rules.small_buffer_min_run_ns
    )


def closed_file_issues(stats: FileStats, rules: IoRules) -> list[str]:
    """The issue types a closed file shows by itself (the loop rule is checked as ops happen)."""
    return [SMALL_BUFFER] if small_buffer(stats, rules) else []


def read_whole(stats: FileStats) -> bool:
    """Read to the end (a short read or ``readall``) and never written."""
    return stats.eof and stats.writes == 0


class RepeatedReads:
    """IOCanary's repeated-read list: per path, rows of identical whole reads.

    Two reads are identical when thread, opening stack and size match. ``observe`` is told of
    every file read whole and answers True when its row reaches ``repeat_count``; the row then
    starts again, so ten identical reads fire twice. ``forget`` is for a write to the path (the
    content changed: reading it again is right); a read more than ``repeat_window_ns`` after the
    path's previous one starts afresh too. At most ``max_paths`` paths are remembered, the
    stalest dropped first. Plain lists, no lock: it runs at every close, and under the GIL a
    race between two threads reading one path can only miscount that path.
    """

    def __init__(self, rules: IoRules, max_paths: int = 1024) -> None:
        self.rules = rules
        self.max_paths = max_paths
        self._needed = rules.repeat_count
        self._window = rules.repeat_window_ns
        # path -> [last read (ns), thread, size, stack, count, thread, size, stack, count, ...]:
        # one flat list per path (one allocation for the usual single reader).
        self._rows: dict[str, list[Any]] = {}
        #: ``forget`` as one C call, ``forget_path(path, None)`` (the agent's close path).
        self.forget_path = self._rows.pop

    def __contains__(self, path: str) -> bool:
        return path in self._rows

    def forget(self, path: str) -> None:
        self._rows.pop(path, None)

    def observe(self, stats: FileStats, now: int) -> bool:
        """``stats`` was read whole and closed at ``now`` (ns): does its row reach the count?"""
        return self.observe_read(stats.path, stats.thread, stats.transferred, stats.stack, now)

    def observe_read(self, path: str, thread: int, size: int, stack: object, now: int) -> bool:
        """``observe`` from the values themselves (no ``FileStats`` needed)."""
        rows = self._rows
        known = rows.get(path)
        if known is None or now - known[0] > self._window:
            if known is None and len(rows) >= self.max_paths:
                self._forget_stale(now)
            rows[path] = [now, thread, size, stack, 1]
            return self._needed <= 1
        known[0] = now
        for at in range(1, len(known), 4):
            if known[at] == thread and known[at + 1] == size and known[at + 2] == stack:
                count: int = known[at + 3] + 1
                if count >= self._needed:
                    count = 0
                known[at + 3] = count
                return count == 0
        known += (thread, size, stack, 1)
        return self._needed <= 1

    def _forget_stale(self, now: int) -> None:
        window = self.rules.repeat_window_ns
        for path in [p for p, rows in self._rows.items() if now - rows[0] > window]:
            del self._rows[path]
        if len(self._rows) >= self.max_paths:  # all fresh: drop the older half
            for path in list(self._rows)[: self.max_paths // 2]:
                del self._rows[path]
