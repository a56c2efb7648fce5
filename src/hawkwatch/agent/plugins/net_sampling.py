"""Per-host head sampling of HTTP requests, and the aggregates that still count every request.

Tracing a request in full (phases, call sites, a record) costs tens of thousands of
instructions; counting and timing it costs two clock reads. So, as production tracers do, each
host's (``scheme://host:port``) first ``warmup`` requests are traced, then 1 in ``every``,
chosen by a per-host counter (deterministic, no random draw): the rest are ``Untraced``. Every
request, traced or not, is folded into ``Aggregates`` on the scheduler thread, per (host, method,
status class, library): count, errors, bytes received and a histogram of totals, written as
``network-aggregate`` records every ``AGGREGATE_INTERVAL_S`` and at stop.
"""

from __future__ import annotations

import itertools
from typing import Final

from hawkwatch.model.records import NetworkAggregate
from hawkwatch.model.records.network_aggregate import bucket_of

AGGREGATE_INTERVAL_S: Final = 10.0
"""Seconds of requests per ``network-aggregate`` window (a process killed hard loses the last)."""
MAX_HOSTS: Final = 4096
"""Hosts counted at once; beyond, the counters start again (each host warms up anew)."""
_index = itertools.count(1)


class Sampler:
    """Whether a request to ``origin`` is traced: its host's warm-up, then 1 in ``every``."""

    __slots__ = ("_counts", "every", "warmup")

    def __init__(self, warmup: int = 64, every: int = 16) -> None:
        self.warmup = warmup
        self.every = max(every, 1)
        self._counts: dict[object, int] = {}

    def traced(self, origin: object) -> bool:
        """Count a request to ``origin``; True when it is to be traced (a look-up and a store)."""
        counts = self._counts
        seen = counts.get(origin, 0) + 1
        if seen == 1 and len(counts) >= MAX_HOSTS:
            counts.clear()
        counts[origin] = seen
        warmup = self.warmup
        return seen <= warmup or (seen - warmup) % self.every == 0

    def reset(self) -> None:
        """Forget every host (a forked child starts its own warm-ups)."""
        self._counts = {}


class _Fold:
    __slots__ = ("count", "errors", "histogram", "max_ms", "response_bytes", "sum_ms", "traced")

    def __init__(self) -> None:
        self.count = self.errors = self.traced = self.response_bytes = 0
        self.sum_ms = self.max_ms = 0.0
        self.histogram: dict[int, int] = {}


def status_class(status: int | None) -> str:
    return "failed" if status is None else f"{status // 100}xx"


class Aggregates:
    """Every ended request's figures, per (host, method, status class, library), until taken."""

    def __init__(self, start: float) -> None:
        self.start = start
        self._folds: dict[tuple[str, str, int | None, str], _Fold] = {}

    def add(
        self, host: str, method: str, status: int | None, library: str, total_ms: float,
        failed: bool, traced: bool, response_bytes: int | None,
    ) -> None:  # fmt: skip
        key = (host, method, None if status is None else status // 100, library)
        fold = self._folds.get(key)
        if fold is None:
            fold = self._folds[key] = _Fold()
        fold.count += 1
        if failed:
            fold.errors += 1
        if traced:
            fold.traced += 1
        if response_bytes:
            fold.response_bytes += response_bytes
        fold.sum_ms += total_ms
        if total_ms > fold.max_ms:
            fold.max_ms = total_ms
        bucket = bucket_of(int(total_ms * 1000))
        fold.histogram[bucket] = fold.histogram.get(bucket, 0) + 1

    def take(self, end: float) -> list[NetworkAggregate]:
        """The window's records (none if no request ended), and a new window from ``end``."""
        folds, start = self._folds, self.start
        self._folds, self.start = {}, end
        return [
            NetworkAggregate(
                start=start, end=end, host=host, method=method,
                status_class="failed" if kind is None else f"{kind}xx", library=library,
                index=next(_index), count=fold.count, errors=fold.errors, traced=fold.traced,
                response_bytes=fold.response_bytes, total_ms_sum=round(fold.sum_ms, 3),
                total_ms_max=fold.max_ms, histogram=tuple(sorted(fold.histogram.items())),
            )  # fmt: skip
            for (host, method, kind, library), fold in folds.items()
        ]

    def clear(self, start: float) -> None:
        self._folds, self.start = {}, start
