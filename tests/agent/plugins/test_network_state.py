"""Where the network monitor keeps a request's state on the client's own objects.

On http.client's connections and responses (and aiohttp's responses) it is a plain attribute
whose class default is None: reading or writing ``obj.__dict__`` would turn the instance's
inline attribute values (CPython 3.11, 3.12) into a dictionary, and make every access of the
library's own attributes on that object slower for the rest of its life. The class defaults
come off at stop, unless a wrapper of ours stays in another tool's chain (it still reads them).
"""

from __future__ import annotations

import asyncio
import gc
import http.client
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import pytest

import hawkwatch
from hawkwatch.agent import current_agent
from hawkwatch.model import collections as c
from hawkwatch.model.records import NetworkTransaction
from hawkwatch.store import Session
from tests.agent.plugins.net_servers import HttpServer

pytestmark = pytest.mark.usefixtures("stopped_agent")
DETECTABLE = sys.version_info < (3, 13)
"""3.13 keeps inline values next to a materialized dict: nothing to see (nor to lose)."""


def dict_materialized(obj: Any) -> bool:
    """Whether ``obj.__dict__`` existed as a dictionary before this call (which makes it)."""
    referents = gc.get_referents(obj)  # inline values are visited one by one, a dict as itself
    made = obj.__dict__
    return any(r is made for r in referents)


def transactions(folder: Path) -> list[NetworkTransaction]:
    records = Session.open(folder).records(c.NETWORK_TRANSACTION)
    return sorted((NetworkTransaction.from_record(r) for r in records), key=lambda t: t.index)


def session_folder() -> Path:
    agent = current_agent()
    assert agent is not None
    return Path(agent.session.path)


def test_the_probe_sees_a_materialized_dict() -> None:
    touched = http.client.HTTPConnection("127.0.0.1", 1)
    touched.__dict__.get("anything")
    assert dict_materialized(touched) is DETECTABLE
    assert not dict_materialized(http.client.HTTPConnection("127.0.0.1", 1))


def http_client_objects(url: str) -> tuple[bool, list[bool]]:
    """Two requests on one connection: whether its and each response's dict was made."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port)
    responses = []
    for _ in range(2):
        conn.request("GET", parts.path)
        response = conn.getresponse()
        response.read()
        responses.append(response)
    seen = dict_materialized(conn), [dict_materialized(r) for r in responses]
    conn.close()
    return seen


def aiohttp_objects(url: str) -> list[bool]:
    async def fetch() -> list[aiohttp.ClientResponse]:
        async with aiohttp.ClientSession() as session:
            got = []
            for _ in range(2):
                async with session.get(url) as response:
                    await response.read()
                got.append(response)
            return got

    return [dict_materialized(r) for r in asyncio.run(fetch())]


@pytest.mark.parametrize("family", ["http.client", "aiohttp"])
def test_the_clients_objects_are_left_as_they_are_without_the_monitor(
    family: str, server: HttpServer, hawkwatch_home: Path
) -> None:
    probe = http_client_objects if family == "http.client" else aiohttp_objects
    without = probe(server.url("/ok"))
    hawkwatch.start(**{"stall.enabled": False})
    folder = session_folder()
    with_monitor = probe(server.url("/ok"))
    hawkwatch.stop()
    assert with_monitor == without
    if family == "http.client":
        assert without[0] is False  # the connection: inline values, which the monitor keeps
    assert [(t.status, t.reused, t.response_bytes) for t in transactions(folder)] == [
        (200, False, 1000),
        (200, True, 1000),
    ]
    for owner in (http.client.HTTPConnection, http.client.HTTPResponse):
        assert "_hawkwatch_tx" not in vars(owner)


def test_defaults_stay_while_a_wrapper_of_ours_stays_in_another_tools_chain(
    server: HttpServer, hawkwatch_home: Path
) -> None:
    hawkwatch.start(**{"stall.enabled": False})
    ours = http.client.HTTPConnection.getresponse

    def other_tool(conn: http.client.HTTPConnection) -> http.client.HTTPResponse:
        return ours(conn)

    http.client.HTTPConnection.getresponse = other_tool  # type: ignore[method-assign]
    try:
        hawkwatch.stop()
        assert vars(http.client.HTTPConnection)["_hawkwatch_tx"] is None  # still read by ours
        parts = urlsplit(server.url("/ok"))
        conn = http.client.HTTPConnection(parts.hostname or "", parts.port)
        conn.request("GET", "/ok")
        assert conn.getresponse().read() == b"x" * 1000  # the other tool, then ours (inert)
        conn.close()
    finally:
        http.client.HTTPConnection.getresponse = ours.__wrapped__  # type: ignore[attr-defined]


def test_aiohttp_header_bytes_are_those_sent_and_received(
    server: HttpServer, hawkwatch_home: Path
) -> None:
    """Summed in C on the scheduler thread: the same as a sum over each header."""
    hawkwatch.start(**{"stall.enabled": False})
    folder = session_folder()

    async def fetch() -> tuple[Any, Any]:
        async with (
            aiohttp.ClientSession() as session,
            session.get(server.url("/ok"), headers={"X-Extra": "é1"}) as response,
        ):
            await response.read()
            return response.request_info.headers, response.raw_headers

    sent, received = asyncio.run(fetch())
    hawkwatch.stop()
    (record,) = transactions(folder)
    assert record.response_header_bytes == sum(len(k) + len(v) + 4 for k, v in received)
    assert record.request_bytes == sum(len(k) + len(v) + 4 for k, v in sent.items())
    assert record.http_version == "1.1" and "X-Extra" in sent
