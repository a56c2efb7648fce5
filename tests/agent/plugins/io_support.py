"""The I/O canary's hooks installed in this process around a test, with the issues it records."""

from __future__ import annotations

import builtins
import io
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from hawkwatch.agent.plugins import io_hooks, io_raw
from hawkwatch.agent.plugins.io_issues import IssueCollector
from hawkwatch.model.io import IoRules
from hawkwatch.model.records.io import IoIssue

T = TypeVar("T")


@dataclass
class Canary:
    collector: IssueCollector
    written: list[IoIssue] = field(default_factory=list)

    def issues(self, kind: str | None = None) -> list[IoIssue]:
        """The last record of each key (as a report reads them), optionally of one type."""
        latest: dict[str, IoIssue] = {}
        for issue in self.written:
            latest[issue.record_key()] = issue
        return [i for i in latest.values() if kind is None or i.type == kind]


@contextmanager
def canary(rules: IoRules | None = None, **options: Any) -> Iterator[Canary]:
    """Install the hooks for the block; the real functions are back afterwards."""
    rules = rules or IoRules()
    written: list[IoIssue] = []
    collector = IssueCollector(rules, written.append, **options)
    io_raw.configure(
        gap_ns=rules.continual_gap_ns,
        loop_op_ns=rules.loop_op_ns,
        loop_run_ns=rules.loop_continual_ns,
        track_runs=rules.small_buffer_min_run_ns > 0,
    )
    assert io_hooks.install(collector) == []
    try:
        yield Canary(collector, written)
    finally:
        io_hooks.remove(collector)
        assert builtins.open is io_hooks.REAL_OPEN and io.open is io_hooks.REAL_OPEN
        assert os.read is io_hooks.REAL_OS_READ


def both(scenario: Callable[[], T]) -> tuple[T, T]:
    """``scenario``'s result without the canary and with it, every file watched.

    Then with sampling from the first file (no warm-up, one file in two watched), twice: the
    second run's files at each site go to ``io.open`` unwatched, through the sampled path; both
    runs must give the watched run's result.
    """
    plain = scenario()
    with canary(sample_every=1) as watched:
        wrapped = scenario()
        watched.collector.failure.raise_if_failed()
    with canary(warmup=0, sample_every=2) as sampled:
        first, second = [scenario() for _ in range(2)]  # one call site: the same sites
        sampled.collector.failure.raise_if_failed()
        skipped = sum(site[5].unwatched for site in sampled.collector.sites.values())
    assert first == wrapped and second == wrapped, "sampling changed what the app saw"
    # A site with an issue (an unclosed file) stays fully watched: then nothing may be skipped.
    assert skipped or sampled.written or not sampled.collector.sites, "nothing went unwatched"
    return plain, wrapped


def outcome(call: Callable[[], T]) -> tuple[str, Any]:
    """What a call did: its value, or its exception's type and text (to compare the two)."""
    try:
        return "value", call()
    except Exception as exc:
        return type(exc).__name__, str(exc)
