"""What the network monitor leaves to the scheduler thread is worked out right there.

The request path keeps stamps and references only (the call sites as code ids and instruction
offsets, the response object, the URL as given); ``Timeline.to_record`` turns them into the
record. These tests compare what it writes with what the request path would have computed:
the line ``frame.f_lineno`` gives, the phases of the general rule, the URL joined and redacted.
"""

from __future__ import annotations

import asyncio
import http.client
import sys
import urllib.request
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import pytest
import requests

import hawkwatch
from hawkwatch.agent import current_agent
from hawkwatch.agent.plugins import net_timeline
from hawkwatch.agent.plugins.net_timeline import Timeline, call_sites
from hawkwatch.model import collections as c
from hawkwatch.model.records import NetworkTransaction, Phases
from hawkwatch.store import Session
from tests.agent.plugins.net_servers import HttpServer

pytestmark = pytest.mark.usefixtures("stopped_agent")


@pytest.fixture
def agent(hawkwatch_home: Path) -> None:
    hawkwatch.start(**{"stall.enabled": False})


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


def test_call_sites_name_the_line_that_made_each_request(server: HttpServer, agent: None) -> None:
    lines = []
    with requests.Session() as session:
        for _ in range(2):  # the second request: the stack named from the cache
            lines.append(sys._getframe().f_lineno + 1)
            assert session.get(server.url("/ok?token=secret"), timeout=10).status_code == 200
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    lines.append(sys._getframe().f_lineno + 1)
    conn.request("GET", "/ok")
    conn.getresponse().read()
    conn.close()
    records = transactions()
    assert [r.library for r in records] == ["requests", "requests", "http.client"]
    assert [r.frames[0].line for r in records] == lines
    here = "test_call_sites_name_the_line_that_made_each_request"
    assert {(r.frames[0].function, r.frames[0].file) for r in records} == {(here, __file__)}
    assert [r.url for r in records] == [server.url("/ok?token=[redacted]")] * 2 + [
        server.url("/ok")
    ]
    assert records[0].query_digest is not None and records[2].query_digest is None
    assert [r.thread for r in records] == ["MainThread"] * 3
    assert records[0].response_header_bytes == records[1].response_header_bytes
    assert (records[0].response_header_bytes or 0) > 40


def test_the_deferred_description_of_httpx_and_aiohttp_requests(
    server: HttpServer, agent: None
) -> None:
    with httpx.Client(timeout=10, follow_redirects=True) as client:
        assert client.get(server.url("/redirect")).status_code == 200

    async def with_aiohttp() -> int:
        async with aiohttp.ClientSession() as session, session.get(server.url("/ok")) as answer:
            await answer.read()
            return answer.status

    assert asyncio.run(with_aiohttp()) == 200
    hop, final, loop_request = transactions()
    assert (hop.library, hop.method, hop.status) == ("httpx", "GET", 302)
    assert hop.url == server.url("/redirect")
    assert (hop.redirect_to, final.url, final.status) == ("/ok", server.url("/ok"), 200)
    assert hop.request_bytes and final.request_bytes and final.response_bytes == 1000
    assert (loop_request.library, loop_request.status, loop_request.http_version) == (
        "aiohttp", 200, "1.1")  # fmt: skip
    assert loop_request.url == server.url("/ok") and loop_request.response_bytes == 1000
    assert loop_request.request_bytes and loop_request.response_header_bytes
    assert loop_request.task is not None and loop_request.on_loop_thread
    # the walk ends at the loop's callback: the coroutine, not what started the loop
    assert [f.function for f in loop_request.frames] == [
        "test_the_deferred_description_of_httpx_and_aiohttp_requests.<locals>.with_aiohttp"
    ]


def _direct(conn: http.client.HTTPConnection) -> None:
    conn.request("GET", "/ok")
    conn.getresponse().read()


def _through_urllib(url: str) -> None:
    with urllib.request.urlopen(url, timeout=10) as answer:
        answer.read()


def _also_direct(conn: http.client.HTTPConnection) -> None:
    conn.request("GET", "/ok")
    conn.getresponse().read()


def _with_requests(session: requests.Session, url: str) -> None:
    assert session.get(url, timeout=10).status_code == 200


def _also_with_requests(session: requests.Session, url: str) -> None:
    assert session.get(url, timeout=10).status_code == 200


def test_a_learned_walk_through_the_library_is_reused_only_where_it_holds(
    server: HttpServer, agent: None
) -> None:
    """The walk from the hook to the app is learned per caller line and jumped over next time;
    two app functions behind the same library line, and a longer library path through that
    same line (urllib over http.client), each still get their own stack and client."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    session = requests.Session()
    expected = []
    for _ in range(2):
        _with_requests(session, server.url("/ok"))
        expected.append(("requests", "_with_requests"))
        _also_with_requests(session, server.url("/ok"))
        expected.append(("requests", "_also_with_requests"))
        _direct(conn)
        expected.append(("http.client", "_direct"))
        _also_direct(conn)
        expected.append(("http.client", "_also_direct"))
        _through_urllib(server.url("/ok"))
        expected.append(("urllib.request", "_through_urllib"))
        _direct(conn)
        expected.append(("http.client", "_direct"))
    conn.close()
    session.close()
    records = transactions()
    assert [(r.library, r.frames[0].function) for r in records] == expected
    here = "test_a_learned_walk_through_the_library_is_reused_only_where_it_holds"
    assert all(r.frames[1].function == here for r in records)
    assert all(r.frames[0].file == __file__ for r in records)
    assert len(net_timeline._routes) >= 1


def _stamped(**moments: int | None) -> Timeline:
    timeline = Timeline("http.client", "GET", "http://h/", fetch_start=0)
    for name, value in moments.items():
        setattr(timeline, name, value)
    return timeline


def test_phases_are_rounded_to_the_microsecond_on_either_path() -> None:
    reused = _stamped(request_start=1_000_400, request_end=1_500_600, response_start=3_000_000,
                      response_end=3_250_499)  # fmt: skip
    assert reused.phases() == Phases(queue=1.0, send=0.5, ttfb=1.499, receive=0.25, total=3.25)
    opened = _stamped(dns_start=100_000, dns_end=2_100_000, connect_start=2_100_000,
                      connect_end=3_000_000, tls_start=3_000_000, tls_end=5_000_000,
                      request_start=4_000_000, request_end=5_200_000, response_start=6_000_000,
                      response_end=6_000_000)  # fmt: skip
    assert opened.phases() == Phases(queue=0.1, dns=2.0, tcp=0.9, tls=2.0, send=0.2, ttfb=0.8,
                                     receive=0.0, total=6.0)  # fmt: skip
    failed = _stamped(connect_start=1_000_000, error="ConnectionRefusedError")
    assert failed.phases() == Phases(queue=1.0, total=1.0)


def test_code_compiled_at_run_time_is_classified_by_its_module_every_time() -> None:
    source = "def probe(walk):\n    return walk(sys._getframe())\n"
    in_library: dict[str, Any] = {"__name__": "requests.generated", "sys": sys}
    in_app: dict[str, Any] = {"__name__": "generated_app", "sys": sys}
    for namespace in (in_library, in_app):
        exec(compile(source, "<string>", "exec"), namespace)  # the same file name, twice
    client, frames = in_library["probe"](call_sites)
    assert net_timeline._CLIENTS[client] == "requests"
    assert frames[0][0] is sys._getframe().f_code  # the library's frame is skipped
    client, frames = in_app["probe"](call_sites)
    assert client == 0 and frames[0][0] is in_app["probe"].__code__
    assert "<string>" not in net_timeline._kinds
    named = net_timeline._call_sites_named(frames)
    assert (named[0].function, named[0].file, named[0].line) == ("probe", "<string>", 2)
    assert named[1].function == (
        "test_code_compiled_at_run_time_is_classified_by_its_module_every_time"
    )


def test_the_positional_record_says_what_each_field_means() -> None:
    """``to_record`` builds the record positionally (speed): every field lands in its place."""
    timeline = _stamped(dns_start=100_000, dns_end=2_100_000, connect_start=2_100_000,
                        connect_end=3_000_000, request_start=3_000_000, request_end=3_100_000,
                        error="TimeoutError")  # fmt: skip
    timeline.url, timeline.status, timeline.http_version, timeline.reused = (
        "http://h:81/p?q=1", 504, "1.1", False)  # fmt: skip
    timeline.request_bytes, timeline.response_bytes, timeline.response_header_bytes = 10, 20, 30
    timeline.failed_phase, timeline.task, timeline.on_loop_thread = "ttfb", "Task-9", True
    timeline.redirect_to, timeline.frames = "http://h:81/next?k=v", ((sys._getframe().f_code, 0),)
    record = timeline.to_record(frozenset(), 1_000.0)
    expected = NetworkTransaction(
        start=1_000.0, index=record.index, method="GET", url="http://h:81/p?q=[redacted]",
        host="h:81", library="http.client", status=504, http_version="1.1", reused=False,
        phases_ms=timeline.phases(), request_bytes=10, response_bytes=20,
        response_header_bytes=30, error="TimeoutError", failed_phase="ttfb", thread=None,
        task="Task-9", on_loop_thread=True, frames=record.frames,
        redirect_to="http://h:81/next?k=[redacted]", query_digest=record.query_digest,
    )  # fmt: skip
    assert record == expected and record.index > 0 and record.query_digest
    assert record.frames[0].function == "test_the_positional_record_says_what_each_field_means"
    assert timeline.phases() == Phases(queue=0.1, dns=2.0, tcp=0.9, send=0.1, total=3.1)
