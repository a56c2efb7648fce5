"""Each kind of loop has its own stall threshold: 100 ms for asyncio loops, 400 ms for GUI loops.

A service whose loop blocks 300 ms on every 25th request, under a steady load of concurrent
clients over loopback TCP: 300 ms is 300 ms added to every request in flight, so each block must
be a stall naming the blocking function (the old single 400 ms threshold recorded none).
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

import hawkwatch
from hawkwatch.agent import current_agent
from hawkwatch.config import load_config
from hawkwatch.model import collections as c
from tests.builders import agent_records, wait_for

pytestmark = pytest.mark.usefixtures("stopped_agent")

QUIET = {"resources_enabled": False, "imports_enabled": False, "gc_enabled": False}
EVERY_NTH = 25
BLOCKS = 4
CLIENTS = 4


def block_for_a_while() -> None:
    time.sleep(0.3)  # a synchronous call in an async handler: the whole loop waits


def stalls() -> list[dict[str, Any]]:
    """Every stall, a repeat of an identical one (a short record, Matrix's back-off) given the
    point stack of the full record it points to."""
    by_key = {r.key: json.loads(r.value) for r in agent_records(c.ANR) if r.key.endswith("_0")}
    for value in by_key.values():
        if "point" not in value and value.get("repeat_of") in by_key:
            value["point"] = by_key[value["repeat_of"]].get("point")
    return list(by_key.values())


def names_blocker(stall: dict[str, Any]) -> bool:
    frames = (stall.get("point") or {}).get("frames", [])
    return any(frame[0] == "block_for_a_while" for frame in frames)


async def serve_under_load() -> int:
    """Run the service and its clients until every client is done; the requests served."""
    served = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal served
        while await reader.readline():
            served += 1
            if served % EVERY_NTH == 0:
                block_for_a_while()
            writer.write(b"ok\n")
            await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]

    async def client(requests: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for _ in range(requests):
            writer.write(b"GET\n")
            await writer.drain()
            assert await reader.readline() == b"ok\n"
            await asyncio.sleep(0.03)  # a steady load, so blocks lie well apart
        writer.close()
        await writer.wait_closed()

    async with server:
        per_client = (EVERY_NTH * BLOCKS + EVERY_NTH // 2) // CLIENTS  # the last block: mid-run
        await asyncio.gather(*(client(per_client) for _ in range(CLIENTS)))
    return served


def test_defaults_are_100_ms_for_asyncio_loops_and_400_ms_for_the_others() -> None:
    stall = load_config(environ={}, cwd=Path("/")).config.stall
    assert stall.asyncio_threshold_s == 0.1  # asyncio's own slow_callback_duration
    assert stall.threshold_s == 0.4  # Qt, Tk and heartbeat() loops: MTHawkeye's ANR threshold


def test_every_300_ms_block_of_a_loaded_service_is_a_stall_naming_the_function(
    hawkwatch_home: Path,
) -> None:
    hawkwatch.start(**QUIET)
    served = asyncio.run(serve_under_load())
    assert served // EVERY_NTH == BLOCKS
    assert wait_for(lambda: sum(map(names_blocker, stalls())) >= BLOCKS)
    hawkwatch.event("marker")  # anything still queued is in the store after this one
    caught = [s for s in stalls() if names_blocker(s)]
    assert len(caught) == BLOCKS  # each block once, none merged with another
    for stall in caught:
        assert stall["loop"] == "asyncio"
        assert stall["duration"] >= 200  # of the 300 ms, within a ping interval
        assert stall["point"]["frames"][0][0] == "block_for_a_while"


def test_each_kind_of_loop_gets_its_own_threshold_and_ping_interval(hawkwatch_home: Path) -> None:
    hawkwatch.start(stall_asyncio_threshold_s=0.15, stall_threshold_s=0.8, **QUIET)
    agent = current_agent()
    assert agent is not None
    [monitor] = [m for m in agent.monitors if m.name == "stall"]
    assert monitor._threshold_for("asyncio") == 0.15
    assert monitor._interval_for("asyncio") == 0.1  # interval_s: at most the threshold
    for kind in ("qt", "tk", "heartbeat"):
        assert monitor._threshold_for(kind) == 0.8
        assert monitor._interval_for(kind) == 0.1  # interval_s, as before
