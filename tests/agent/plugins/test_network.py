"""The network monitor on real loopback servers, for every client family.

Each test makes real requests through one client family (http.client, urllib, requests, httpx
sync and async, aiohttp) with the in-process agent running, then reads the typed
``network-transaction`` records. Delays are injected by the servers (before the first byte,
between body chunks) or below the client (``socket.getaddrinfo``). What is asserted holds on a
busy machine: the phases that bracket a delay add up to at least the delay and to no more than
the test measured around the call, and the delay's own phase holds at least half of it (a
thread may stamp a moment late when it waits for the CPU, moving time to a neighbouring phase;
``benchmarks/network_overhead.py --accuracy`` prints how close the phases come on a quiet one).
"""

from __future__ import annotations

import asyncio
import http.client
import socket
import ssl
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import httpx
import pytest
import requests
import trustme

import hawkwatch
from hawkwatch.agent import current_agent
from hawkwatch.model import collections as c
from hawkwatch.model.records import NetworkTransaction, RecordError
from hawkwatch.store import Session
from tests.agent.plugins.net_servers import Http2Server, HttpServer, refused_port

pytestmark = pytest.mark.usefixtures("stopped_agent")

FAMILIES = ("http.client", "urllib", "requests", "httpx", "httpx-async", "aiohttp")
LIBRARY = {"urllib": "urllib.request", "httpx-async": "httpx"}
SLOW_HOST = "slow-dns.test"
DNS_DELAY_S = 0.15


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> trustme.CA:
    authority = trustme.CA()
    pem = tmp_path_factory.mktemp("ca") / "ca.pem"
    authority.cert_pem.write_to_path(str(pem))
    _CA_FILES[id(authority)] = str(pem)
    return authority


@pytest.fixture(scope="module")
def tls_server(ca: trustme.CA) -> Iterator[HttpServer]:
    with HttpServer(ca.issue_cert("127.0.0.1", "localhost")) as running:
        yield running


@pytest.fixture
def agent(hawkwatch_home: Path) -> None:
    hawkwatch.start(**{"stall.enabled": False})


def transactions() -> list[NetworkTransaction]:
    """The session's requests, read from its files after the agent stopped (and so wrote all)."""
    agent = current_agent()
    assert agent is not None
    folder = agent.session.path
    hawkwatch.stop()
    decoded = []
    for record in Session.open(folder).records(c.NETWORK_TRANSACTION):
        try:
            decoded.append(NetworkTransaction.from_record(record))
        except RecordError as exc:  # pragma: no cover - shown in the failure
            pytest.fail(f"undecodable record {record}: {exc}")
    return sorted(decoded, key=lambda t: (t.start, t.index))


def client_context(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context()
    ca.configure_trust(context)
    return context


def fetch(family: str, urls: list[str], *, ca: trustme.CA | None = None,
          timeout: float = 10.0) -> list[Any]:  # fmt: skip
    """GET each URL in order with one client (so later ones may reuse the connection); each
    result is the status or the exception raised."""
    context = client_context(ca) if ca else None
    if family in ("httpx-async", "aiohttp"):
        return asyncio.run(_fetch_async(family, urls, context, timeout))
    if family == "requests":
        with requests.Session() as session:
            verify: str | bool = _ca_file(ca) if ca else True
            return [
                _call(lambda u=url: session.get(u, timeout=timeout, verify=verify).status_code)
                for url in urls
            ]
    if family == "httpx":
        with httpx.Client(verify=context or True, timeout=timeout) as client:
            return [_call(lambda u=url: client.get(u).status_code) for url in urls]
    if family == "urllib":
        return [_call(lambda u=url: _urlopen(u, context, timeout)) for url in urls]
    return _http_client(urls, context, timeout)


def _urlopen(url: str, context: ssl.SSLContext | None, timeout: float) -> int:
    with urllib.request.urlopen(url, context=context, timeout=timeout) as response:
        response.read()
        return int(response.status)


def _http_client(urls: list[str], context: ssl.SSLContext | None, timeout: float) -> list[Any]:
    parts = urlsplit(urls[0])
    assert parts.hostname is not None
    conn: http.client.HTTPConnection
    if parts.scheme == "https":
        conn = http.client.HTTPSConnection(parts.hostname, parts.port, timeout=timeout,
                                           context=context)  # fmt: skip
    else:
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    results: list[Any] = []
    for url in urls:

        def one(u: str = url) -> int:
            path = urlsplit(u).path + ("?" + urlsplit(u).query if urlsplit(u).query else "")
            conn.request("GET", path)
            response = conn.getresponse()
            response.read()
            return response.status

        results.append(_call(one))
    conn.close()
    return results


async def _fetch_async(family: str, urls: list[str], context: ssl.SSLContext | None,
                       timeout: float) -> list[Any]:  # fmt: skip
    results: list[Any] = []
    if family == "aiohttp":
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session:
            for url in urls:
                try:
                    async with session.get(url, ssl=context or True) as response:
                        await response.read()
                        results.append(response.status)
                except Exception as exc:
                    results.append(exc)
        return results
    async with httpx.AsyncClient(verify=context or True, timeout=timeout) as client:
        for url in urls:
            try:
                results.append((await client.get(url)).status_code)
            except Exception as exc:
                results.append(exc)
    return results


def _call(function: Callable[[], int]) -> Any:
    try:
        return function()
    except Exception as exc:
        return exc


_CA_FILES: dict[int, str] = {}  # filled by the ``ca`` fixture: requests wants a path


def _ca_file(ca: trustme.CA) -> str:
    return _CA_FILES[id(ca)]


def timed(function: Callable[[], list[Any]]) -> tuple[list[Any], float]:
    started = time.perf_counter()
    result = function()
    return result, (time.perf_counter() - started) * 1000


# -- phases -----------------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_waiting_for_the_first_byte_is_ttfb_and_the_second_request_reuses(
    family: str, server: HttpServer, agent: None
) -> None:
    results, elapsed_ms = timed(lambda: fetch(family, [server.url("/wait?ms=300"),
                                                       server.url("/ok")]))  # fmt: skip
    assert results == [200, 200]
    first, second = transactions()
    assert first.library == LIBRARY.get(family, family)
    assert (first.method, first.status, first.http_version) == ("GET", 200, "1.1")
    assert first.url == server.url("/wait?ms=[redacted]")
    assert first.host == f"127.0.0.1:{server.port}"
    p = first.phases_ms
    assert 300 <= (p.send or 0) + (p.ttfb or 0) <= elapsed_ms
    assert (p.ttfb or 0) >= 150
    assert first.phases_ms.total is not None and first.phases_ms.total >= first.phases_ms.ttfb
    assert first.response_bytes == 1000 and second.response_bytes == 1000
    assert first.reused is False
    assert first.phases_ms.tcp is not None
    assert second.reused is (family != "urllib")  # urllib opens a connection per request
    assert first.frames and first.frames[0].file == __file__


@pytest.mark.parametrize("family", FAMILIES)
def test_a_trickled_body_is_receive_time(family: str, server: HttpServer, agent: None) -> None:
    results, elapsed_ms = timed(lambda: fetch(family, [server.url("/trickle?chunks=4&ms=80")]))
    assert results == [200]
    (request,) = transactions()
    p = request.phases_ms
    assert 320 <= (p.send or 0) + (p.ttfb or 0) + (p.receive or 0) <= elapsed_ms
    assert (p.receive or 0) >= 160
    assert request.response_bytes == 400


@pytest.mark.parametrize("family", FAMILIES)
def test_a_refused_connection_fails_in_tcp(family: str, agent: None) -> None:
    (result,) = fetch(family, [f"http://127.0.0.1:{refused_port()}/ok"])
    assert isinstance(result, Exception)
    (request,) = transactions()
    assert (request.error, request.failed_phase) == ("ConnectionRefusedError", "tcp")
    assert request.status is None


@pytest.mark.parametrize("family", FAMILIES)
def test_https_times_the_handshake(
    family: str, ca: trustme.CA, tls_server: HttpServer, agent: None
) -> None:
    results = fetch(family, [tls_server.url("/ok"), tls_server.url("/ok")], ca=ca)
    assert results == [200, 200]
    first, second = transactions()
    assert first.url.startswith("https://127.0.0.1:")
    if family == "aiohttp":  # aiohttp opens TCP and TLS in one call: tcp holds both
        assert first.phases_ms.tls is None and first.phases_ms.tcp is not None
    else:
        assert first.phases_ms.tls is not None and first.phases_ms.tls > 0
    # urllib opens a connection per request; the others reuse the first
    assert (second.phases_ms.tls is None) is (family != "urllib")


@pytest.mark.parametrize("family", FAMILIES)
def test_a_certificate_for_another_name_fails_in_tls(family: str, ca: trustme.CA,
                                                      agent: None) -> None:  # fmt: skip
    with HttpServer(ca.issue_cert("other.example")) as wrong:
        (result,) = fetch(family, [wrong.url("/ok")], ca=ca)
    assert isinstance(result, Exception)
    (request,) = transactions()
    assert request.failed_phase == "tls"
    assert request.error == "SSLCertVerificationError"


@pytest.fixture
def slow_resolver(monkeypatch: pytest.MonkeyPatch) -> None:
    """``slow-dns.test`` resolves to 127.0.0.1 after 150 ms (installed below the agent)."""
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host in (SLOW_HOST, SLOW_HOST.encode()):  # anyio passes IDNA bytes
            time.sleep(DNS_DELAY_S)
            host = "127.0.0.1"
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.mark.parametrize("family", FAMILIES)
def test_slow_name_resolution_is_dns(
    family: str, server: HttpServer, slow_resolver: None, hawkwatch_home: Path
) -> None:
    hawkwatch.start(**{"stall.enabled": False})
    results, elapsed_ms = timed(lambda: fetch(family, [server.url("/ok", host=SLOW_HOST)]))
    assert results == [200]
    (request,) = transactions()
    assert request.host == f"{SLOW_HOST}:{server.port}"
    if family == "httpx-async":  # resolved in a worker thread: inside the connect phase
        assert request.phases_ms.dns is None
        assert DNS_DELAY_S * 1000 <= (request.phases_ms.tcp or 0) <= elapsed_ms
    else:
        assert DNS_DELAY_S * 1000 <= (request.phases_ms.dns or 0) <= elapsed_ms


@pytest.mark.parametrize("family", FAMILIES)
def test_a_read_timeout_fails_waiting_for_the_first_byte(
    family: str, server: HttpServer, agent: None
) -> None:
    (result,) = fetch(family, [server.url("/wait?ms=1500")], timeout=0.3)
    assert isinstance(result, Exception)
    (request,) = transactions()
    assert request.failed_phase == "ttfb"
    assert request.error == "TimeoutError"


def test_redirects_are_one_record_per_hop(server: HttpServer, agent: None) -> None:
    assert fetch("requests", [server.url("/redirect")]) == [200]
    hop, final = transactions()
    assert (hop.status, hop.redirect_to, final.status) == (302, "/ok", 200)
    assert final.url == server.url("/ok") and final.reused is True


def test_http2_is_named(ca: trustme.CA, tmp_path: Path, agent: None) -> None:
    with (
        Http2Server(ca.issue_cert("127.0.0.1"), tmp_path) as h2,
        httpx.Client(http2=True, verify=client_context(ca)) as client,
    ):
        assert client.get(h2.url("/")).status_code == 200
        assert client.get(h2.url("/again")).status_code == 200
    first, second = transactions()
    assert (first.http_version, second.http_version) == ("2", "2")
    assert (first.reused, second.reused) == (False, True)
    assert first.phases_ms.tls is not None


def test_a_blocking_client_inside_a_running_loop_is_flagged(server: HttpServer,
                                                            agent: None) -> None:  # fmt: skip
    async def handler_that_blocks() -> int:
        return requests.get(server.url("/ok"), timeout=10).status_code

    assert asyncio.run(handler_that_blocks()) == 200
    (request,) = transactions()
    assert request.on_loop_thread is True
    assert (
        request.frames[0].function == "test_a_blocking_client_inside_a_running_loop_is_flagged"
        ".<locals>.handler_that_blocks"
    )
    assert request.task is not None


def test_a_failing_monitor_never_breaks_the_request(
    server: HttpServer, agent: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hawkwatch.agent.plugins import net_timeline

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("bug in hawkwatch")

    monkeypatch.setattr(net_timeline.Timeline, "to_record", broken)
    for family in FAMILIES:
        assert fetch(family, [server.url("/ok")]) == [200], family
    assert transactions() == []
