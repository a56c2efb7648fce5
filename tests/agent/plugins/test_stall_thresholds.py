"""Each kind of loop has its own stall threshold: 100 ms for asyncio loops, 400 ms for the others.

A service whose loop blocks ~300 ms on every Nth request, under a steady load of concurrent
clients over loopback TCP: 300 ms is 300 ms added to every request in flight, so each block must
be a stall naming the blocking function (the single 400 ms threshold recorded none of them).
What counts is what the test itself measured: each block's own wall time.
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
from hawkwatch.agent.plugins.stall import StallMonitor
from hawkwatch.agent.plugins.stall_thresholds import Thresholds
from hawkwatch.config import StallConfig, load_config
from hawkwatch.model import collections as c
from tests.builders import agent_records, wait_for

pytestmark = pytest.mark.usefixtures("stopped_agent")

QUIET = {"resources_enabled": False, "imports_enabled": False, "gc_enabled": False}
EVERY_NTH = 25
BLOCKS = 5
CLIENTS = 4


def block_for_a_while() -> None:
    time.sleep(0.3)  # a synchronous call in an async handler: the whole loop waits


def stalls() -> list[dict[str, Any]]:
    """Every stall; a repeat of an identical one (a short record, Matrix's back-off) is given the
    point stack of the full record it points to."""
    by_key = {r.key: json.loads(r.value) for r in agent_records(c.ANR) if r.key.endswith("_0")}
    for value in by_key.values():
        if "point" not in value and value.get("repeat_of") in by_key:
            value["point"] = by_key[value["repeat_of"]].get("point")
    return list(by_key.values())


def blocking_frame(stall: dict[str, Any]) -> str:
    frames = (stall.get("point") or {}).get("frames") or [["(no point stack)"]]
    return str(frames[0][0])


async def serve_under_load() -> tuple[int, list[float]]:
    """Run the service and its clients until every client is done: (requests served, the wall
    time of each block as the handler measured it)."""
    served = 0
    blocks: list[float] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal served
        while await reader.readline():
            served += 1
            if served % EVERY_NTH == 0:
                started = time.perf_counter()
                block_for_a_while()
                blocks.append(time.perf_counter() - started)
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
            await asyncio.sleep(0.03)  # a steady load, so that blocks lie well apart
        writer.close()
        await writer.wait_closed()

    async with server:
        per_client = (EVERY_NTH * BLOCKS + EVERY_NTH // 2) // CLIENTS  # the last block: mid-run
        await asyncio.gather(*(client(per_client) for _ in range(CLIENTS)))
    return served, blocks


def test_defaults_are_100_ms_for_asyncio_loops_and_400_ms_for_the_others() -> None:
    stall = load_config(environ={}, cwd=Path("/")).config.stall
    assert stall.asyncio_threshold_s == 0.1  # asyncio's own slow_callback_duration
    assert stall.threshold_s == 0.4  # Qt, Tk and heartbeat() loops: MTHawkeye's ANR threshold


def test_every_300_ms_block_of_a_loaded_service_is_a_stall_naming_the_function(
    hawkwatch_home: Path,
) -> None:
    hawkwatch.start(**QUIET)
    served, blocks = asyncio.run(serve_under_load())
    assert served // EVERY_NTH == len(blocks) == BLOCKS
    threshold = StallConfig().asyncio_threshold_s
    felt = [seconds for seconds in blocks if seconds >= threshold]  # all of them: sleep(0.3)
    assert wait_for(lambda: len(stalls()) >= len(felt))
    hawkwatch.event("marker")  # anything still queued is in the store after this one
    recorded = stalls()
    # nothing but the blocks: every stall names the blocking function, each block once
    assert [blocking_frame(s) for s in recorded] == ["block_for_a_while"] * len(felt)
    assert {s["loop"] for s in recorded} == {"asyncio"}
    for stall, seconds in zip(sorted(recorded, key=lambda s: s["startFrom"]), felt, strict=True):
        assert stall["duration"] >= threshold * 1000  # the estimate reaches the threshold
        assert stall["duration_range"][1] >= seconds * 1000  # the longest the pings allow


def test_each_kind_of_loop_gets_its_own_threshold_and_ping_interval(hawkwatch_home: Path) -> None:
    hawkwatch.start(stall_asyncio_threshold_s=0.15, stall_threshold_s=0.8, **QUIET)
    agent = current_agent()
    assert agent is not None
    [monitor] = [m for m in agent.monitors if isinstance(m, StallMonitor)]
    kinds = monitor.kinds
    assert (kinds.threshold("asyncio"), kinds.interval("asyncio")) == (0.15, 0.1)
    for kind in ("qt", "tk", "heartbeat"):
        assert (kinds.threshold(kind), kinds.interval(kind)) == (0.8, 0.1)


def test_the_one_backstop_follows_the_most_demanding_loop_watched() -> None:
    kinds = Thresholds.of(StallConfig())
    # asyncio: 100 ms, but two missed checks at least; re-armed on every check
    assert kinds.backstop({"asyncio"}) == (0.2, 0.0)
    assert kinds.backstop({"asyncio", "tk"}) == (0.2, 0.0)
    # GUI and heartbeat loops only: 400 ms, re-armed every other check (as before issue #13)
    assert kinds.backstop({"qt", "heartbeat"}) == pytest.approx((0.4, 0.2))
    assert kinds.backstop(()) == pytest.approx((0.4, 0.2))
    # a spell of an asyncio loop pinged once a threshold must be estimated at the threshold
    assert kinds.needed("asyncio") == 0.1 and kinds.needed("tk") == 0.2
