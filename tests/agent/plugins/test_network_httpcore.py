"""httpx timed in httpcore directly (``net_httpcore``) and, for an httpcore it does not know, by
the ``trace`` extension alone: both modes give the same records on real loopback servers, and
the app's own ``trace`` extension sees what it would without the monitor."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpcore
import httpx
import pytest

import hawkwatch
from hawkwatch.agent import current_agent
from hawkwatch.agent.plugins import net_httpcore
from hawkwatch.model import collections as c
from hawkwatch.model.records import NetworkTransaction
from hawkwatch.store import Session
from tests.agent.plugins.net_servers import HttpServer

pytestmark = pytest.mark.usefixtures("stopped_agent")


@pytest.fixture(params=["direct", "trace"])
def mode(request: pytest.FixtureRequest, hawkwatch_home: Path,
         monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:  # fmt: skip
    """The agent running, httpx timed in the mode asked for."""
    if request.param == "trace":
        monkeypatch.setattr(net_httpcore, "supported", lambda module: False)
    hawkwatch.start(**{"stall.enabled": False})
    wrapped = hasattr(httpcore._sync.http11.HTTP11Connection._send_request_headers, "__wrapped__")
    assert wrapped is (request.param == "direct")
    yield request.param


def transactions() -> list[NetworkTransaction]:
    agent = current_agent()
    assert agent is not None
    folder = agent.session.path
    hawkwatch.stop()
    records = Session.open(folder).records(c.NETWORK_TRANSACTION)
    return sorted((NetworkTransaction.from_record(r) for r in records), key=lambda t: t.index)


def get_all(family: str, urls: list[str], **options: Any) -> list[int]:
    if family == "httpx":
        with httpx.Client(**options) as client:
            return [client.get(url).status_code for url in urls]

    async def run() -> list[int]:
        async with httpx.AsyncClient(**options) as client:
            return [(await client.get(url)).status_code for url in urls]

    return asyncio.run(run())


@pytest.mark.parametrize("family", ["httpx", "httpx-async"])
def test_either_mode_times_the_phases_and_sees_reuse(
    family: str, mode: str, server: HttpServer
) -> None:
    started = time.perf_counter()
    urls = [server.url("/wait?ms=150"), server.url("/trickle?chunks=3&ms=60")]
    assert get_all(family, urls) == [200, 200]
    elapsed_ms = (time.perf_counter() - started) * 1000
    first, second = transactions()
    assert (first.reused, second.reused) == (False, True)
    assert first.phases_ms.tcp is not None and second.phases_ms.tcp is None
    # a stamp taken late on a busy machine moves time to the neighbouring phase (test_network)
    waited, trickled = first.phases_ms, second.phases_ms
    assert 150 <= (waited.send or 0) + (waited.ttfb or 0) <= elapsed_ms
    assert (waited.ttfb or 0) >= 75
    assert 120 <= (trickled.ttfb or 0) + (trickled.receive or 0) <= elapsed_ms
    assert (trickled.receive or 0) >= 60
    for request in (first, second):
        assert (request.status, request.http_version, request.library) == (200, "1.1", "httpx")
        assert (request.request_bytes or 0) > 40 and (request.response_header_bytes or 0) > 20
        assert request.phases_ms.send is not None and request.phases_ms.total is not None
    assert first.url == server.url("/wait?ms=[redacted]")


@pytest.mark.parametrize("family", ["httpx", "httpx-async"])
def test_either_mode_makes_one_record_per_redirect_hop(
    family: str, mode: str, server: HttpServer
) -> None:
    assert get_all(family, [server.url("/redirect")], follow_redirects=True) == [200]
    hop, final = transactions()
    assert (hop.status, hop.redirect_to, final.status) == (302, "/ok", 200)
    assert final.url == server.url("/ok") and final.reused is True
    assert hop.frames == final.frames and hop.frames[0].function.startswith("get_all")


def test_a_streamed_response_ends_with_its_body_not_at_close(mode: str, server: HttpServer) -> None:
    with httpx.Client() as client:
        started = time.perf_counter()
        with client.stream("GET", server.url("/trickle?chunks=2&ms=50")) as response:
            body = b"".join(response.iter_bytes())
            read_ms = (time.perf_counter() - started) * 1000
            time.sleep(0.3)  # the app holds the response open after reading it
    (request,) = transactions()
    assert len(body) == request.response_bytes and request.status == 200
    assert (request.phases_ms.receive or 0) >= 25  # 50 ms: half, a stamp may come late
    assert (request.phases_ms.total or 0) <= read_ms  # stamped when the body ended


@pytest.mark.parametrize("family", ["httpx", "httpx-async"])
def test_an_apps_trace_sees_what_it_would_without_the_monitor(
    family: str, server: HttpServer, hawkwatch_home: Path
) -> None:
    def events(monitored: bool) -> list[str]:
        seen: list[str] = []

        def trace(name: str, info: dict[str, Any]) -> None:
            seen.append(name)

        async def trace_async(name: str, info: dict[str, Any]) -> None:
            seen.append(name)

        extensions = {"trace": trace if family == "httpx" else trace_async}
        if monitored:
            hawkwatch.start(**{"stall.enabled": False})
        urls = [server.url("/ok"), server.url("/ok")]  # a new connection, then reused
        if family == "httpx":
            with httpx.Client() as client:
                for url in urls:
                    assert client.get(url, extensions=extensions).status_code == 200
        else:

            async def run() -> None:
                async with httpx.AsyncClient() as client:
                    for url in urls:
                        response = await client.get(url, extensions=extensions)
                        assert response.status_code == 200

            asyncio.run(run())
        return seen

    without = events(monitored=False)
    with_monitor = events(monitored=True)
    records = transactions()
    assert with_monitor == without
    assert "connection.connect_tcp.started" in without
    assert "http11.response_closed.complete" in without
    assert [(r.reused, r.status) for r in records] == [(False, 200), (True, 200)]


def test_an_httpcore_of_another_shape_is_not_timed_directly() -> None:
    assert net_httpcore.supported(httpcore) is True
    newer = SimpleNamespace(__version__="2.0.0", __name__="httpcore")
    assert net_httpcore.supported(newer) is False
    missing = SimpleNamespace(__version__="1.0.9", __name__="no_such_httpcore")
    assert net_httpcore.supported(missing) is False


@pytest.mark.parametrize("content", [None, b"", b"x" * 300])
def test_request_bytes_are_the_head_as_sent_and_the_declared_body(content: bytes | None) -> None:
    from hawkwatch.agent.plugins.net_httpx import _request_bytes

    request = httpx.Request("POST" if content is not None else "GET", "http://h:81/p?q=1",
                            headers={"X-A": "1", "x-a": "2", "Accept": "*/*"},
                            content=content)  # fmt: skip
    head = sum(len(name) + len(value) + 4 for name, value in request.headers.raw)
    assert _request_bytes(request) == head + len(content or b"")
    assert head > 40 and ((content is not None) is ("content-length" in request.headers))
