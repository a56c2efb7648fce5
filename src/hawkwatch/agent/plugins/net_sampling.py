"""Per-host head sampling of HTTP requests, and the aggregates that still count every request.

Tracing a request in full (phases, call sites, a record) costs tens of thousands of
instructions; counting and timing it costs two clock reads. So, as production tracers do, each
host's (``scheme://host:port``) first ``warmup`` requests are traced, then 1 in ``every``,
chosen by a per-host counter (deterministic, no random draw), and, past the warm-ups, no more
than ``per_second`` a second in the whole process (a token bucket, checked once per ``every``
requests of a host): the rest are ``Untraced``. The cap is what keeps a busy service's cost and
records bounded: at 4,000 requests a second, 1 in 16 would trace 250 a second, ~150 KB of
records a second, and tracing would cost more than counting every request. Every
request, traced or not, is folded into ``Aggregates`` on the scheduler thread, per (host, method,
status class, library): count, errors, bytes received and a histogram of totals, written as
``network-aggregate`` records every ``AGGREGATE_INTERVAL_S`` and at stop.
"""

from __future__ import annotations

import itertools
import time
from bisect import bisect_left, bisect_right

from hawkwatch.agent.plugins.net_timeline import CLIENTS, url_facts
from hawkwatch.agent.plugins.net_untraced import Key, Untraced
from hawkwatch.model.network_rules import SUB_BUCKETS, bucket_of

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Final

    from hawkwatch.model.records import NetworkAggregate, NetworkTransaction

AGGREGATE_INTERVAL_S: Final = 10.0
"""Seconds of requests per ``network-aggregate`` window (a process killed hard loses the last)."""
MAX_HOSTS: Final = 4096
"""Hosts counted at once; beyond, the counters start again (each host warms up anew)."""
_index = itertools.count(1)


def _bucket_table() -> tuple[list[int], list[int]]:
    """Every bucket's lower bound in ns (``bucket_of`` of µs, ascending) and, by the position
    ``bisect_right`` gives a total in ns among them, its bucket (position 0: below 0 µs)."""
    buckets = list(range(SUB_BUCKETS)) + [
        SUB_BUCKETS * octave + step for octave in range(2, 64) for step in range(SUB_BUCKETS)
    ]
    lows = [b if b < SUB_BUCKETS else (SUB_BUCKETS + b % SUB_BUCKETS) << (b // SUB_BUCKETS - 2)
            for b in buckets]  # fmt: skip
    return [low * 1000 for low in lows], [0, *buckets]


_BOUNDS_NS, _BUCKET_AT = _bucket_table()


def buckets_of(totals_ns: list[int]) -> dict[int, int]:
    """``bucket_of(total // 1000)`` counted for many totals in ns: the totals sorted (in C),
    then two binary searches per bucket that holds any (a handful), none per total."""
    ordered = sorted(totals_ns)
    counts: dict[int, int] = {}
    bounds, last = _BOUNDS_NS, len(_BOUNDS_NS)
    index, count = 0, len(ordered)
    while index < count:
        position = bisect_right(bounds, ordered[index])  # the bucket of ``ordered[index]``
        end = count if position == last else bisect_left(ordered, bounds[position], index)
        bucket = _BUCKET_AT[position]  # (below 0 µs: bucket 0, as 0 µs)
        counts[bucket] = counts.get(bucket, 0) + end - index
        index = end
    return counts


class Sampler:
    """Whether a request to ``origin`` is traced: its host's warm-up, then 1 in ``every``,
    within ``per_second`` a second (0: no cap) past the warm-ups.

    Kept as the untraced requests each host has to go before its next traced one (``skips``),
    so that the usual answer, untraced, costs a look-up and a store: a hook may take it from
    ``skips`` itself, without calling ``traced`` (a Python call is most of that answer's cost),
    as ``skips.get(origin, 0) > 0`` → store one less, untraced; else ``traced(origin)``. The two
    are the same (``traced`` starts with it)."""

    __slots__ = ("_clock", "_stamp", "_tokens", "_warm", "every", "per_second", "skips",
                 "warmup")  # fmt: skip

    def __init__(
        self,
        warmup: int = 64,
        every: int = 16,
        per_second: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.warmup = warmup
        self.every = max(every, 1)
        self.per_second = per_second
        """Traced requests a second past the warm-ups, at most (0: no cap)."""
        self._clock = clock
        self._tokens = 0.0
        """The bucket: traced requests allowed now (it starts empty: the warm-ups are the
        burst; it fills at ``per_second``, up to one second of them)."""
        self._stamp = clock()
        self.skips: dict[object, int] = {}
        """Untraced requests to come before the host's next traced one (none: trace it)."""
        self._warm: dict[object, int] = {}
        """Each host's requests of its warm-up so far."""

    def traced(self, origin: object) -> bool:
        """Count a request to ``origin``; True when it is to be traced."""
        skips = self.skips
        left = skips.get(origin, 0)
        if left > 0:
            skips[origin] = left - 1
            return False
        warm, warmup, every = self._warm, self.warmup, max(self.every, 1)
        seen = warm.get(origin)
        if seen is None:  # a new host
            if len(warm) >= MAX_HOSTS:
                warm.clear()
                skips.clear()
            seen = warm[origin] = 0
            if warmup <= 0:  # no warm-up: this is the first of ``every``
                skips[origin] = every - 2
                return every == 1 and self._within_budget()
        if seen < warmup:
            warm[origin] = seen + 1
            if seen + 1 == warmup:
                skips[origin] = every - 1
            return True
        skips[origin] = every - 1
        return self._within_budget()

    def _within_budget(self) -> bool:
        """Take a token from the bucket if there is one. Without a lock: two threads at once
        may both take the last (one traced request more, the cap is a bound on cost)."""
        rate = self.per_second
        if rate <= 0:
            return True
        now = self._clock()
        tokens = min(max(rate, 1.0), self._tokens + (now - self._stamp) * rate)
        self._stamp = now
        if tokens >= 1.0:
            self._tokens = tokens - 1.0
            return True
        self._tokens = tokens
        return False

    def reset(self) -> None:
        """Forget every host (a forked child starts its own warm-ups) and empty the bucket; in
        place: the hooks hold ``skips``."""
        self.skips.clear()
        self._warm.clear()
        self._tokens, self._stamp = 0.0, self._clock()


class _Fold:
    """One aggregate being built: totals in ns, histogram by ``bucket_of`` (µs)."""

    __slots__ = ("count", "errors", "histogram", "host", "max_ns", "response_bytes", "sum_ns",
                 "traced")  # fmt: skip

    def __init__(self, host: str) -> None:
        self.host = host
        self.count = self.errors = self.traced = self.response_bytes = 0
        self.sum_ns = self.max_ns = 0
        self.histogram: dict[int, int] = {}


def status_class(status: object) -> str:
    return f"{status // 100}xx" if isinstance(status, int) else "failed"


class Aggregates:
    """Every ended request's figures, per (host, method, status class, library), until taken.

    Untraced requests are folded by what they carry (``fold``: the sampler's key of their
    origin, method, status, library, client rank; the host is worked out once per fold), their
    bucket in integer arithmetic: a few operations each, on the scheduler thread."""

    def __init__(self, start: float) -> None:
        self.start = start
        self._folds: dict[tuple[object, ...], _Fold] = {}

    def add(self, record: NetworkTransaction) -> None:
        """A request known by its record."""
        host, status = record.host, record.status
        key = ("record", host, record.method, status, record.library)
        fold = self._folds.get(key)
        if fold is None:
            fold = self._folds[key] = _Fold(host)
        failed = record.error is not None or (status or 0) >= 500
        total_ms = record.phases_ms.total or 0.0
        self._count(fold, int(total_ms * 1e6), failed, record.response_bytes)
        if record.traced:
            fold.traced += 1

    def fold(self, untraced: Untraced, total_ns: int, keep: frozenset[str]) -> None:
        """An untraced request that gets no record, one at a time: the definition
        ``fold_tally`` (what the monitor uses) is tested against."""
        key = (untraced.key, untraced.method, untraced.status, untraced.library,
               untraced.client)  # fmt: skip
        fold = self._folds.get(key)
        if fold is None:
            fold = self._folds[key] = _Fold(untraced.facts(keep)[1])
        self._count(fold, total_ns, (untraced.status or 0) >= 500, untraced.response_bytes)

    def fold_tally(
        self, key: Key, totals: list[int], sizes: list[int | None], url: Any, keep: frozenset[str]
    ) -> None:
        """Untraced requests a ``Tally`` counted under ``key`` (the key ``fold`` gives an
        ``Untraced``; ``url``: its first request's, for the host): folded by C loops
        (``sum``, ``max``, ``buckets_of``), nothing per request in Python."""
        fold = self._folds.get(key)
        if fold is None:
            origin = key[0] if isinstance(key[0], str) else ""  # (httpx's: parts, URL absolute)
            fold = self._folds[key] = _Fold(url_facts(str(url), origin, keep)[1])
        fold.count += len(totals)
        status = key[2]
        if isinstance(status, int) and status >= 500:
            fold.errors += len(totals)
        fold.response_bytes += sum(filter(None, sizes))
        fold.sum_ns += sum(totals)
        fold.max_ns = max(fold.max_ns, max(totals))  # noqa: PLW3301 - a star unpacks them all
        histogram = fold.histogram
        for bucket, count in buckets_of(totals).items():
            histogram[bucket] = histogram.get(bucket, 0) + count

    @staticmethod
    def _count(fold: _Fold, total_ns: int, failed: bool, response_bytes: int | None) -> None:
        fold.count += 1
        if failed:
            fold.errors += 1
        if response_bytes:
            fold.response_bytes += response_bytes
        fold.sum_ns += total_ns
        if total_ns > fold.max_ns:  # noqa: PLR1730 - max() is a call per request
            fold.max_ns = total_ns
        bucket = bucket_of(total_ns // 1000)
        histogram = fold.histogram
        histogram[bucket] = histogram.get(bucket, 0) + 1

    def take(self, end: float) -> list[NetworkAggregate]:
        """The window's records (none if no request ended), and a new window from ``end``."""
        folds, start = self._folds, self.start
        self._folds, self.start = {}, end
        if not folds:
            return []
        from hawkwatch.model.records import NetworkAggregate  # at the first write, not at start

        merged: dict[tuple[str, str, str, str], _Fold] = {}
        for key, fold in folds.items():
            if key[0] == "record":
                _, host, method, status, library = key
                name = (str(host), str(method), status_class(status), str(library))
            else:
                _, method, status, library, client = key  # (a ``Tally``'s method: the app's)
                library = library or CLIENTS[client if isinstance(client, int) else 0]
                name = (fold.host, str(method).upper(), status_class(status), str(library))
            into = merged.get(name)
            if into is None:
                merged[name] = fold
                continue
            into.count += fold.count
            into.errors += fold.errors
            into.traced += fold.traced
            into.response_bytes += fold.response_bytes
            into.sum_ns += fold.sum_ns
            into.max_ns = max(into.max_ns, fold.max_ns)
            for bucket, count in fold.histogram.items():
                into.histogram[bucket] = into.histogram.get(bucket, 0) + count
        return [
            NetworkAggregate(
                start=start,
                end=end,
                host=host,
                method=method,
                status_class=kind,
                library=library,
                index=next(_index),
                count=fold.count,
                errors=fold.errors,
                traced=fold.traced,
                response_bytes=fold.response_bytes,
                total_ms_sum=round(fold.sum_ns / 1e6, 3),
                total_ms_max=round(fold.max_ns / 1e6, 3),
                histogram=tuple(sorted(fold.histogram.items())),
            )
            for (host, method, kind, library), fold in merged.items()
        ]

    def clear(self, start: float) -> None:
        self._folds, self.start = {}, start
