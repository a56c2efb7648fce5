"""aiohttp's two instrumentations on a real loopback server: the direct one (wrapped coroutines,
for the versions it knows) and the ``TraceConfig`` fallback (any other version) record the same
requests: phases, reuse, redirect hops, failures in their phase."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiohttp
import pytest

import hawkwatch
from hawkwatch.agent import current_agent
from hawkwatch.agent.plugins import net_aiohttp
from hawkwatch.model import collections as c
from hawkwatch.model.records import NetworkAggregate, NetworkTransaction
from hawkwatch.store import Session
from tests.agent.plugins.net_servers import HttpServer, refused_port

pytestmark = pytest.mark.usefixtures("stopped_agent")


@pytest.fixture(params=["direct", "signals"])
def mode(request: pytest.FixtureRequest, hawkwatch_home: Path,
         monkeypatch: pytest.MonkeyPatch) -> str:  # fmt: skip
    """The agent started with one of the two instrumentations."""
    if request.param == "signals":  # as for an aiohttp whose coroutines changed shape
        monkeypatch.setattr(net_aiohttp, "_direct_supported", lambda module: False)
    hawkwatch.start(**{"stall.enabled": False})
    return str(request.param)


def transactions() -> list[NetworkTransaction]:
    agent = current_agent()
    assert agent is not None
    folder = agent.session.path
    hawkwatch.stop()
    found = [
        NetworkTransaction.from_record(record)
        for record in Session.open(folder).records(c.NETWORK_TRANSACTION)
    ]
    return sorted(found, key=lambda t: (t.start, t.index))


async def get_all(urls: list[str]) -> list[Any]:
    results: list[Any] = []
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
        results.append(len(session.trace_configs))
        for url in urls:
            try:
                async with session.get(url) as response:
                    await response.read()
                    results.append(response.status)
            except aiohttp.ClientError as exc:
                results.append(exc)
    return results


def test_the_direct_instrumentation_knows_the_installed_aiohttp() -> None:
    assert net_aiohttp._direct_supported(aiohttp)


def test_phases_reuse_and_sizes(server: HttpServer, mode: str) -> None:
    results = asyncio.run(get_all([server.url("/wait?ms=200"), server.url("/ok")]))
    assert results == [1 if mode == "signals" else 0, 200, 200]  # direct: no TraceConfig
    first, second = transactions()
    assert (first.library, first.method, first.status, first.http_version) == (
        "aiohttp", "GET", 200, "1.1")  # fmt: skip
    assert first.url == server.url("/wait?ms=[redacted]") and second.url == server.url("/ok")
    assert (first.reused, second.reused) == (False, True)
    assert first.phases_ms.tcp is not None and second.phases_ms.tcp is None
    assert (first.phases_ms.ttfb or 0) >= 100
    assert first.phases_ms.dns is None  # an IP address: nothing resolved
    assert first.response_bytes == second.response_bytes == 1000
    assert first.request_bytes and first.response_header_bytes
    assert first.task is not None and first.on_loop_thread
    assert [f.function for f in first.frames] == ["get_all"]


def test_a_redirect_is_one_record_per_hop(server: HttpServer, mode: str) -> None:
    assert asyncio.run(get_all([server.url("/redirect")]))[1:] == [200]
    hop, final = transactions()
    assert (hop.status, hop.url, hop.redirect_to) == (
        302, server.url("/redirect"), server.url("/ok"))  # fmt: skip
    assert (final.status, final.url, final.reused) == (200, server.url("/ok"), True)
    assert final.start >= hop.start


def test_a_refused_connection_fails_in_tcp(mode: str) -> None:
    (result,) = asyncio.run(get_all([f"http://127.0.0.1:{refused_port()}/ok"]))[1:]
    assert isinstance(result, aiohttp.ClientConnectorError)
    (request,) = transactions()
    assert (request.error, request.failed_phase, request.status) == (
        "ConnectionRefusedError", "tcp", None)  # fmt: skip


def test_requests_are_no_longer_timed_after_stop(server: HttpServer, mode: str) -> None:
    assert asyncio.run(get_all([server.url("/ok")]))[1:] == [200]
    assert len(transactions()) == 1
    assert aiohttp.ClientSession._request.__name__ == "_request"
    assert not hasattr(aiohttp.ClientSession._request, "__wrapped__")  # put back at stop
    assert asyncio.run(get_all([server.url("/ok")])) == [0, 200]


def start_sampled(*, traced: bool) -> None:
    """The agent with every request traced, or none (each only counted and timed)."""
    hawkwatch.start(**{"stall.enabled": False, "network.sample_warmup": 0,
                       "network.sample_every": 1 if traced else 10**6,
                       "network.max_traced_per_s": 0})  # fmt: skip


def aggregates() -> list[NetworkAggregate]:
    agent = current_agent()
    assert agent is not None
    folder = agent.session.path
    hawkwatch.stop()
    session = Session.open(folder)
    return [NetworkAggregate.from_record(r) for r in session.records(c.NETWORK_AGGREGATE)]


async def stream_and_release(server: HttpServer) -> list[int]:
    """A body read as it trickles in (not there yet when the head is), then one left unread
    and released: each ends where aiohttp gives its connection back."""
    sizes = []
    async with aiohttp.ClientSession() as session:
        async with session.get(server.url("/trickle?chunks=3&ms=80")) as response:
            sizes.append(len(await response.read()))
        async with session.get(server.url("/trickle?chunks=4&ms=300")) as response:
            sizes.append(response.status)  # released unread
    return sizes


@pytest.mark.parametrize("traced", [True, False])
def test_a_body_still_coming_ends_with_its_last_byte_or_its_release(
    server: HttpServer, hawkwatch_home: Path, traced: bool
) -> None:
    start_sampled(traced=traced)
    assert asyncio.run(stream_and_release(server)) == [300, 200]
    agent = current_agent()
    assert agent is not None
    folder = agent.session.path
    found = aggregates()
    assert sum(a.count for a in found) == 2 and all(a.errors == 0 for a in found)
    (aggregate,) = found
    assert aggregate.response_bytes < 300 + 400  # the unread body was not waited for
    assert 3 * 80 <= aggregate.total_ms_max < 4 * 300
    records = sorted(
        (NetworkTransaction.from_record(r)
         for r in Session.open(folder).records(c.NETWORK_TRANSACTION)),
        key=lambda t: (t.start, t.index),
    )  # fmt: skip
    if not traced:
        assert records == []  # neither failed nor was slow: counted only
        return
    read, released = records
    assert read.response_bytes == 300 and (read.phases_ms.receive or 0) >= 2 * 80
    assert (released.response_bytes or 0) < 400 and (released.phases_ms.total or 0) < 4 * 300


async def other_calls(server: HttpServer) -> list[int]:
    """``post`` with ``data`` (the wrapper passes it on by name), keywords of the app's, a
    lower-case method."""
    async with aiohttp.ClientSession() as session:
        statuses = []
        async with session.post(server.url("/ok"), data=b"d" * 500) as response:
            statuses.append(len(await response.read()))  # the body, as the server got it
        async with session.get(server.url("/ok"), headers={"X-A": "1"}, params={"q": "s"}) as r:
            statuses.append(r.status)
        async with session.request("get", server.url("/ok"), allow_redirects=False) as r:
            statuses.append(r.status)
        return statuses


@pytest.mark.parametrize("traced", [True, False])
def test_posts_keywords_and_methods_reach_aiohttp_and_are_counted(
    server: HttpServer, hawkwatch_home: Path, traced: bool
) -> None:
    start_sampled(traced=traced)
    assert asyncio.run(other_calls(server)) == [500, 200, 200]
    counted = {(a.method, a.status_class): a.count for a in aggregates()}
    assert counted == {("POST", "2xx"): 1, ("GET", "2xx"): 2}


async def gathered(server: HttpServer, count: int) -> list[int]:
    async with aiohttp.ClientSession() as session:

        async def one(n: int) -> int:
            async with session.get(server.url(f"/wait?ms={10 * (n % 3)}")) as response:
                await response.read()
                return response.status

        return list(await asyncio.gather(*(one(n) for n in range(count))))


def test_traced_and_untraced_requests_in_flight_together_are_each_timed(
    server: HttpServer, hawkwatch_home: Path
) -> None:
    """Half the requests traced, all in flight at once: the traced ones get every phase (the
    hooks under ``_request`` look for a hop while any traced request is in flight), the
    untraced ones are counted."""
    hawkwatch.start(**{"stall.enabled": False, "network.sample_warmup": 0,
                       "network.sample_every": 2, "network.max_traced_per_s": 0})  # fmt: skip
    agent = current_agent()
    assert agent is not None
    folder = agent.session.path
    assert asyncio.run(gathered(server, 8)) == [200] * 8
    (aggregate,) = aggregates()
    assert (aggregate.count, aggregate.traced) == (8, 4)
    records = [NetworkTransaction.from_record(r)
               for r in Session.open(folder).records(c.NETWORK_TRANSACTION)]  # fmt: skip
    assert len(records) == 4
    for record in records:
        assert record.traced and record.status == 200 and record.response_bytes == 1000
        assert None not in (record.phases_ms.send, record.phases_ms.ttfb, record.phases_ms.receive)
