"""Head sampling per host: after a host's warm-up only 1 request in ``sample_every`` is traced
in full, yet every request is counted and timed in ``network-aggregate``, and an untraced
request that fails or is slow still gets its ``network-transaction`` record. Real requests to
a loopback server, through every client family."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest

import hawkwatch
from hawkwatch.agent import current_agent
from hawkwatch.agent.plugins import network
from hawkwatch.agent.plugins.net_sampling import Aggregates, Sampler, buckets_of
from hawkwatch.agent.plugins.net_stdlib import _UNTRACED
from hawkwatch.agent.plugins.net_untraced import Tally, Untraced
from hawkwatch.api.network import network_report
from hawkwatch.api.session import load_session
from hawkwatch.model import collections as c
from hawkwatch.model.network import NetworkThresholds
from hawkwatch.model.network_rules import bucket_of
from hawkwatch.model.records import NetworkAggregate, NetworkTransaction
from hawkwatch.store import Session
from tests.agent.plugins.net_servers import HttpServer, refused_port
from tests.agent.plugins.test_network import FAMILIES, LIBRARY, fetch

pytestmark = pytest.mark.usefixtures("stopped_agent")

WARMUP, EVERY = 3, 4


def start(warmup: int = WARMUP, every: int = EVERY, per_second: float = 0) -> None:
    """No cap on traced requests a second unless ``per_second``: the counts here are exact."""
    hawkwatch.start(**{"stall.enabled": False, "network.sample_warmup": warmup,
                       "network.sample_every": every,
                       "network.max_traced_per_s": per_second})  # fmt: skip


def stop() -> tuple[Path, list[NetworkTransaction], list[NetworkAggregate]]:
    """The session's folder, its requests and its aggregates, after the agent stopped."""
    agent = current_agent()
    assert agent is not None
    folder = agent.session.path
    hawkwatch.stop()
    session = Session.open(folder)
    records = sorted(
        (NetworkTransaction.from_record(r) for r in session.records(c.NETWORK_TRANSACTION)),
        key=lambda t: (t.start, t.index),
    )
    aggregates = [NetworkAggregate.from_record(r) for r in session.records(c.NETWORK_AGGREGATE)]
    return folder, records, aggregates


def test_the_sampler_warms_up_then_traces_one_in_every() -> None:
    sampler = Sampler(warmup=3, every=4)
    decisions = [sampler.traced("http://a:80") for _ in range(15)]
    assert [i + 1 for i, traced in enumerate(decisions) if traced] == [1, 2, 3, 7, 11, 15]
    assert sampler.traced("http://b:80")  # another host has its own warm-up
    everything = Sampler(warmup=0, every=1)
    assert all(everything.traced("h") for _ in range(50))


class FakeClock:
    """Seconds that move only when the test says."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_past_the_warm_up_traced_requests_are_capped_per_second() -> None:
    clock = FakeClock()
    sampler = Sampler(warmup=2, every=1, per_second=2, clock=clock)
    assert [sampler.traced("a") for _ in range(2)] == [True, True]  # the warm-up: no cap
    assert sampler.traced("a") is False  # the bucket starts empty
    clock.now += 0.5  # one token (2 a second)
    assert [sampler.traced("a") for _ in range(3)] == [True, False, False]
    assert [sampler.traced("b") for _ in range(3)] == [True, True, False]  # b's warm-up
    clock.now += 60  # a long quiet spell: at most one second of tokens
    assert [sampler.traced(host) for host in "abab"] == [True, True, False, False]
    sampler.reset()  # a forked child: warm-ups anew, an empty bucket
    assert [sampler.traced("a") for _ in range(3)] == [True, True, False]


def test_the_cap_is_checked_only_when_a_hosts_turn_comes() -> None:
    """1 in ``every`` first, then the bucket: a denied turn waits for the next one in
    ``every`` (``skips``), so the hooks' shortcut still answers most requests alone."""
    clock = FakeClock()
    sampler = Sampler(warmup=0, every=4, per_second=1, clock=clock)
    first = [sampler.traced("a") for _ in range(8)]  # turns: the 4th and 8th, no token yet
    assert first == [False] * 8 and sampler.skips["a"] == 3
    clock.now += 1
    assert [sampler.traced("a") for _ in range(4)] == [False, False, False, True]
    assert Sampler(warmup=0, every=1, per_second=0, clock=clock).traced("a")  # 0: no cap


@pytest.mark.parametrize("warmup", [0, 1, 3, 64])
@pytest.mark.parametrize("every", [1, 2, 4, 16])
def test_the_hooks_shortcut_through_skips_decides_as_traced_does(warmup: int, every: int) -> None:
    """A hook may answer "untraced" from ``Sampler.skips`` alone (no call): the decisions are
    those of ``traced`` alone: the first ``warmup``, then every ``every``-th after them."""

    def shortcut(sampler: Sampler, origin: str) -> bool:
        left = sampler.skips.get(origin, 0)
        if left > 0:
            sampler.skips[origin] = left - 1
            return False
        return sampler.traced(origin)

    expected = [n <= warmup or (n - warmup) % every == 0 for n in range(1, 200)]
    for decide in (Sampler.traced, shortcut):
        sampler = Sampler(warmup=warmup, every=every)
        mixed = [decide(sampler, host) for _ in range(199) for host in ("a", "b")]
        assert mixed[::2] == mixed[1::2] == expected  # two hosts, each its own count
        sampler.reset()
        assert [decide(sampler, "a") for _ in range(199)] == expected  # counted afresh


def test_many_totals_are_bucketed_as_one_by_one() -> None:
    """``buckets_of`` (sorted, a binary search per bucket) counts what ``bucket_of`` gives."""
    totals = [*range(-3, 9000, 7), 3999, 4000, 4001, 10**13, *(n * 999_983 for n in range(5000))]
    expected: dict[int, int] = {}
    for total in totals:
        bucket = bucket_of(total // 1000)
        expected[bucket] = expected.get(bucket, 0) + 1
    assert buckets_of(totals) == expected
    assert buckets_of([]) == {} and buckets_of([250_000] * 3) == {bucket_of(250): 3}


def test_a_tally_folds_as_one_by_one() -> None:
    """Untraced requests counted in a ``Tally`` and folded per key give the aggregates each
    folded alone gives (two hosts, a 5xx, a size unknown); what is taken is gone, and a pair a
    hook is halfway through appending stays for the next ``take``."""
    tally = Tally()
    made = [
        (f"http://{host}", status, 37_000 * (n + 1), size)
        for n, (host, status, size) in enumerate(
            [("a:80", 200, 10), ("b:81", 200, None), ("a:80", 503, 4), ("a:80", 200, 6)] * 3
        )
    ]  # fmt: skip
    keep: frozenset[str] = frozenset()
    together, alone = Aggregates(0.0), Aggregates(0.0)
    for origin, status, total, size in made:
        key = (origin, "get", status, "aiohttp", 0)
        items = tally.lists.get(key) or tally.new_key(key, f"{origin}/p?q=1")
        items += [total, size]
        untraced = Untraced("aiohttp", "GET", "", 0)
        untraced.url, untraced.origin, untraced.key, untraced.status = (
            f"{origin}/p?q=1", origin, origin, status)  # fmt: skip
        untraced.response_end, untraced.response_bytes = total, size
        alone.fold(untraced, total, keep)
    tally.lists["http://a:80", "get", 200, "aiohttp", 0].append(99)  # a total, no size yet
    for key, totals, sizes, url in tally.take():
        together.fold_tally(key, totals, sizes, url, keep)

    def figures(aggregates: Aggregates) -> list[tuple[object, ...]]:
        return sorted(
            (a.host, a.method, a.status_class, a.library, a.count, a.errors, a.response_bytes,
             a.total_ms_sum, a.total_ms_max, a.histogram)
            for a in aggregates.take(1.0)
        )  # fmt: skip

    got = figures(together)
    assert got == figures(alone)
    assert [(row[0], *row[1:3], *row[4:7]) for row in got] == [
        ("a:80", "GET", "2xx", 6, 0, 48), ("a:80", "GET", "5xx", 3, 3, 12),
        ("b:81", "GET", "2xx", 3, 0, 0),
    ]  # fmt: skip
    assert tally.take() == []  # the odd total waits for its size
    tally.lists["http://a:80", "get", 200, "aiohttp", 0].append(7)
    assert [(key[1], totals, sizes) for key, totals, sizes, _ in tally.take()] == [
        ("get", [99], [7])
    ]  # fmt: skip
    tally.close()
    assert tally.new_key(("x", "GET", 200, "aiohttp", 0), "http://x/") == []
    assert tally.lists == {} and tally.take() == []  # closed: keeps nothing


@pytest.mark.parametrize("family", FAMILIES)
def test_after_the_warm_up_one_request_in_every_is_traced_and_all_are_counted(
    family: str, server: HttpServer, hawkwatch_home: Path
) -> None:
    start()
    made = WARMUP + 3 * EVERY + 2  # traced: the warm-up, then the 7th, 11th and 15th
    assert fetch(family, [server.url(f"/ok?n={i}") for i in range(made)]) == [200] * made
    _, records, aggregates = stop()
    assert len(records) == WARMUP + 3
    assert all(r.traced and r.phases_ms.ttfb is not None for r in records)
    assert sum(a.count for a in aggregates) == made
    assert sum(a.traced for a in aggregates) == WARMUP + 3
    (aggregate,) = aggregates
    assert (aggregate.host, aggregate.method, aggregate.status_class) == (
        f"127.0.0.1:{server.port}", "GET", "2xx")  # fmt: skip
    assert aggregate.library == LIBRARY.get(family, family)
    assert sum(count for _, count in aggregate.histogram) == made
    assert aggregate.errors == 0 and aggregate.response_bytes == 1000 * made
    assert 0 < aggregate.total_ms_max <= aggregate.total_ms_sum


@pytest.mark.parametrize("family", FAMILIES)
def test_an_untraced_failure_and_slow_request_still_get_records(
    family: str, server: HttpServer, hawkwatch_home: Path
) -> None:
    start(warmup=1, every=1000)
    slow_ms = NetworkThresholds().slow_ms  # what the slow-request detector reports
    results = fetch(family, [server.url("/ok"), server.url(f"/wait?ms={slow_ms:.0f}&t=secret"),
                             server.url("/ok")])  # fmt: skip
    port = refused_port()
    refused = fetch(family, [f"http://127.0.0.1:{port}/ok"]) + fetch(
        family, [f"http://127.0.0.1:{port}/ok?t=secret"])  # the host's first is its warm-up
    assert results == [200, 200, 200] and all(isinstance(r, Exception) for r in refused)
    _, records, aggregates = stop()
    traced, slow, _, failed = records
    assert traced.traced and not slow.traced and not failed.traced
    assert failed.url == f"http://127.0.0.1:{port}/ok?t=[redacted]"
    assert slow.url == server.url("/wait?ms=[redacted]&t=[redacted]")
    assert (slow.method, slow.status, slow.library) == ("GET", 200, LIBRARY.get(family, family))
    assert slow.phases_ms.total is not None and slow.phases_ms.total >= slow_ms
    assert (slow.phases_ms.ttfb, slow.phases_ms.dns, slow.reused) == (None, None, None)
    assert (failed.error, failed.failed_phase, failed.status) == ("ConnectionRefusedError",
                                                                  "tcp", None)  # fmt: skip
    by_class = {(a.host.rpartition(":")[2], a.status_class): a for a in aggregates}
    assert by_class[str(server.port), "2xx"].count == 3
    assert by_class[str(server.port), "2xx"].traced == 1
    assert by_class[str(port), "failed"].errors == by_class[str(port), "failed"].count == 2


@pytest.mark.parametrize("family", ["requests", "httpx", "aiohttp"])
def test_every_request_traced_with_one_in_one(
    family: str, server: HttpServer, hawkwatch_home: Path
) -> None:
    start(warmup=0, every=1)
    assert fetch(family, [server.url("/ok")] * 10) == [200] * 10
    _, records, aggregates = stop()
    assert len(records) == 10 and all(r.traced for r in records)
    assert sum(a.count for a in aggregates) == sum(a.traced for a in aggregates) == 10


@pytest.mark.parametrize("family", ["requests", "httpx", "aiohttp"])
def test_the_cap_leaves_the_warm_up_traced_and_every_request_counted(
    family: str, server: HttpServer, hawkwatch_home: Path
) -> None:
    """One token in 1,000 s: past the warm-up, nothing more is traced in this test, however
    fast or slow the machine; every request is still counted."""
    start(warmup=2, every=1, per_second=0.001)
    assert fetch(family, [server.url("/ok")] * 12) == [200] * 12
    _, records, aggregates = stop()
    assert len(records) == 2 and all(r.traced for r in records)
    assert sum(a.count for a in aggregates) == 12
    assert sum(a.traced for a in aggregates) == 2


@pytest.mark.parametrize("family", FAMILIES)
def test_an_untraced_request_that_ended_well_leaves_no_object_behind(
    family: str, server: HttpServer, hawkwatch_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counted in the tally where it ends, not queued until the next drain (the drain is held
    off here): queued objects would survive into the collector's older generations."""
    monkeypatch.setattr(network, "DRAIN_INTERVAL_S", 1e6)
    start(warmup=0, every=10**6)
    assert fetch(family, [server.url("/ok?n=1")] * 6) == [200] * 6
    gc.collect()
    alive = [o for o in gc.get_objects() if type(o) is Untraced and o is not _UNTRACED]
    assert alive == []
    _, records, aggregates = stop()
    assert records == []
    assert sum(a.count for a in aggregates) == 6 and sum(a.traced for a in aggregates) == 0
    assert sum(a.response_bytes for a in aggregates) == 6000
    (aggregate,) = aggregates
    assert aggregate.host == f"127.0.0.1:{server.port}"
    assert aggregate.library == LIBRARY.get(family, family)


def test_the_view_counts_every_request_and_says_which_figures_are_sampled(
    server: HttpServer, hawkwatch_home: Path
) -> None:
    start()
    made = 40
    assert fetch("requests", [server.url("/ok")] * made) == [200] * made
    assert fetch("requests", [server.url("/status/503")] * 5) == [503] * 5
    folder, records, _ = stop()
    assert len(records) < made
    report = network_report(load_session(folder))
    (host,) = report.hosts
    assert host.count == made + 5
    assert host.errors == 5 and host.error_rate == pytest.approx(5 / (made + 5))
    assert host.traced == len(records) and host.sampled is True
    assert host.p50_ms is not None and host.p95_ms is not None and host.p50_ms <= host.p95_ms


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_a_forked_child_starts_its_own_warm_up(server: HttpServer, hawkwatch_home: Path) -> None:
    start(warmup=2, every=1000)
    assert fetch("requests", [server.url("/ok")] * 5) == [200] * 5  # the host is past warm-up
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 0
        try:
            code = 0 if fetch("requests", [server.url("/ok")] * 3) == [200] * 3 else 1
            hawkwatch.stop()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    _, parent_records, _ = stop()
    assert len(parent_records) == 2
    sessions = [p.parent for p in Path(hawkwatch_home).rglob("session.json")]
    seen = []  # (traced, counted) of each session: the parent's and its child's
    for folder in sessions:
        session = Session.open(folder)
        traced = sum(1 for _ in session.records(c.NETWORK_TRANSACTION))
        counted = sum(
            NetworkAggregate.from_record(r).count for r in session.records(c.NETWORK_AGGREGATE)
        )
        seen.append((traced, counted))
    assert sorted(seen) == [(2, 3), (2, 5)]  # the child's host warmed up again
