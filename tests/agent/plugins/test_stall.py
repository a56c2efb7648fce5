"""Stalls of real event loops in this process: caught, measured, sampled, recorded."""

from __future__ import annotations

import asyncio
import gc
import json
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import hawkwatch
from hawkwatch.agent import current_agent
from hawkwatch.agent.plugins.stall_record import LINE_LIMIT, encode_parts
from hawkwatch.analysis.stall_report import summarize_stalls
from hawkwatch.model import collections as c
from hawkwatch.model.records import Anr, decode_all
from tests.builders import agent_records, wait_for

pytestmark = pytest.mark.usefixtures("stopped_agent")

QUIET = {"resources_enabled": False, "imports_enabled": False, "gc_enabled": False}


def stalls() -> list[dict[str, Any]]:
    return [json.loads(r.value) for r in agent_records(c.ANR) if r.key.endswith("_0")]


def funcs(value: dict[str, Any]) -> list[str]:
    return [frame[0] for frame in value["point"]["frames"]]


def stalls_in(function: str) -> list[dict[str, Any]]:
    return [s for s in stalls() if "point" in s and any(function in f for f in funcs(s))]


def blocking_sleep() -> None:
    time.sleep(0.8)


def test_an_asyncio_stall_is_recorded_with_the_blocking_function_and_task(
    hawkwatch_home: Path,
) -> None:
    hawkwatch.start(**QUIET)

    async def handler() -> None:
        await asyncio.sleep(0.3)
        blocking_sleep()
        await asyncio.sleep(0.3)

    async def main() -> None:
        await asyncio.create_task(handler(), name="request-42")

    asyncio.run(main())
    # only the blocking call's stall: on a busy machine the 100 ms threshold may see others
    assert wait_for(lambda: stalls_in("blocking_sleep"))
    [stall] = stalls_in("blocking_sleep")
    assert stall["loop"] == "asyncio"
    assert stall["thread"] == threading.current_thread().name
    assert 400 <= stall["duration"] < 5000
    assert stall["source"] == "watchdog"
    assert funcs(stall)[:2] == [
        "blocking_sleep",
        "test_an_asyncio_stall_is_recorded_with_the_blocking_function_and_task.<locals>.handler",
    ]
    assert stall["point"]["frames"][0][3] >= 2  # seen in several samples
    assert stall["stacks"] and stall["stacks"][0]["frames"][0][0] == "blocking_sleep"
    assert stall["task"]["name"] == "request-42"
    assert stall["task"]["coro"].endswith("handler")
    assert stall["gc"]["collections"] >= 0
    session = current_agent().session  # type: ignore[union-attr]
    assert not list(session.path.glob("hang-*.json"))  # the marker went with the stall


def test_a_loop_that_keeps_answering_records_no_stall(hawkwatch_home: Path) -> None:
    # 20 ms pieces against a 400 ms threshold: a busy CI host that leaves the loop without a
    # core for 100 ms must not fail this test (benchmarks/stall_accuracy.py measures that)
    hawkwatch.start(stall_asyncio_threshold_s=0.4, **QUIET)

    async def busy_but_responsive() -> None:
        for _ in range(60):
            time.sleep(0.02)  # short blocking pieces, well under the threshold
            await asyncio.sleep(0.005)

    asyncio.run(busy_but_responsive())
    hawkwatch.event("marker")
    assert agent_records(c.ANR) == []


def regex_size(seconds: float) -> int:
    """The input size for which ``backtrack`` takes at least ``seconds`` (doubles per +1)."""
    n = 16
    while True:
        started = time.perf_counter()
        backtrack(n)
        if time.perf_counter() - started >= seconds / 2:
            return n + 1
        n += 1


def backtrack(n: int) -> None:
    re.match(r"(a+)+$", "a" * n + "b")


def test_c_code_holding_the_gil_is_caught_and_the_backstop_names_it(hawkwatch_home: Path) -> None:
    n = regex_size(1.2)  # about 1.2 s: C code that never lets go of the GIL
    hawkwatch.start(**QUIET)
    longest_call = 0.0

    async def main() -> None:
        # The calibration ran at another moment of a shared machine: grow the input until one
        # call really held the GIL for a second, and compare with what that call measured.
        nonlocal longest_call
        for size in range(n, n + 4):
            await asyncio.sleep(0.3)
            started = time.perf_counter()
            backtrack(size)
            longest_call = max(longest_call, time.perf_counter() - started)
            if longest_call >= 1.0:
                break
        await asyncio.sleep(0.3)

    asyncio.run(main())
    assert longest_call >= 1.0
    assert wait_for(lambda: any(s["duration"] >= 0.95 * longest_call * 1000 for s in stalls()))
    longest = max(stalls(), key=lambda s: s["duration"])
    # a stall identical to the previous one (an earlier, shorter call) points at its full record
    by_key = {r.key: json.loads(r.value) for r in agent_records(c.ANR)}
    full = by_key.get(longest.get("repeat_of", ""), longest)
    assert "backtrack" in funcs(full)
    assert any(stack["source"] == "faulthandler" for stack in full["stacks"])


def test_a_collection_during_a_stall_is_reported(hawkwatch_home: Path) -> None:
    hawkwatch.start(**QUIET)

    def collect_and_wait() -> None:
        cycles = []
        for _ in range(100_000):
            node: list[object] = []
            node.append(node)
            cycles.append(node)
        del cycles, node
        gc.collect()
        time.sleep(0.6)

    async def main() -> None:
        await asyncio.sleep(0.3)
        collect_and_wait()
        await asyncio.sleep(0.3)

    asyncio.run(main())
    assert wait_for(lambda: stalls_in("collect_and_wait"))
    [stall] = stalls_in("collect_and_wait")
    assert stall["gc"]["collections"] >= 1
    assert stall["gc"]["duration_ms"] > 0


def test_a_custom_loop_beating_in_a_thread_is_watched(hawkwatch_home: Path) -> None:
    hawkwatch.start(**QUIET)
    stalled = threading.Event()
    release = threading.Event()

    def custom_loop() -> None:
        for i in range(40):
            hawkwatch.heartbeat()
            if i == 20:
                stalled.set()
                release.wait(10)  # the stall, until the test has seen the marker
            time.sleep(0.01)

    worker = threading.Thread(target=custom_loop, name="custom-loop")
    worker.start()
    session = current_agent().session  # type: ignore[union-attr]
    assert stalled.wait(10)
    assert wait_for(lambda: list(session.path.glob("hang-*.json")))
    marker = json.loads(next(session.path.glob("hang-*.json")).read_text())
    assert marker["loop"] == "heartbeat"
    assert marker["thread"] == "custom-loop"
    assert any(frame[0].endswith("custom_loop") for frame in marker["stack"])
    release.set()
    worker.join()
    assert wait_for(stalls)
    [stall] = stalls()
    assert stall["loop"] == "heartbeat"
    assert "test_a_custom_loop_beating_in_a_thread_is_watched.<locals>.custom_loop" in funcs(stall)
    assert not list(session.path.glob("hang-*.json"))


def test_watch_loop_watches_a_loop_discovery_is_told_to_leave_alone(
    hawkwatch_home: Path,
) -> None:
    hawkwatch.start(stall_asyncio=False, **QUIET)
    loop = asyncio.new_event_loop()
    hawkwatch.watch_loop(loop)

    async def main() -> None:
        await asyncio.sleep(0.3)
        blocking_sleep()
        await asyncio.sleep(0.3)

    def run() -> None:
        loop.run_until_complete(main())
        loop.close()

    worker = threading.Thread(target=run, name="loop-thread")
    worker.start()
    worker.join()
    assert wait_for(lambda: stalls_in("blocking_sleep"))
    [stall] = stalls_in("blocking_sleep")
    assert stall["thread"] == "loop-thread"
    assert funcs(stall)[0] == "blocking_sleep"


def test_discovery_off_and_no_watch_loop_means_no_record(hawkwatch_home: Path) -> None:
    hawkwatch.start(stall_asyncio=False, **QUIET)

    async def main() -> None:
        await asyncio.sleep(0.3)
        blocking_sleep()

    asyncio.run(main())
    hawkwatch.event("marker")
    assert agent_records(c.ANR) == []


def test_a_stall_still_going_at_stop_is_recorded_as_unfinished(hawkwatch_home: Path) -> None:
    hawkwatch.start(**QUIET)
    session = current_agent().session  # type: ignore[union-attr]
    release = threading.Event()

    def stuck_loop() -> None:
        hawkwatch.heartbeat()
        release.wait(10)
        hawkwatch.heartbeat()

    worker = threading.Thread(target=stuck_loop, name="stuck")
    worker.start()
    assert wait_for(lambda: list(session.path.glob("hang-*.json")))
    hawkwatch.stop()
    release.set()
    worker.join()
    [record] = [r for r in session.records(c.ANR)]
    value = json.loads(record.value)
    assert value["unfinished"] is True
    assert value["thread"] == "stuck"
    assert not list(session.path.glob("hang-*.json"))


def test_a_record_over_the_line_limit_is_split_and_merges_back(tmp_path: Path) -> None:
    frame = ["handler", "/srv/app/" + "deep/" * 40 + "views.py", 12]
    stacks = [
        {"time": 10.0 + i, "frames": [frame] * 64, "capturedCount": 1, "titleframe": 0}
        for i in range(21)
    ]
    value = {
        "duration": 2500.0,
        "startFrom": 10.0,
        "inBackground": False,
        "stacks": stacks,
        "loop": "asyncio",
        "thread": "MainThread",
        "point": {"index": 20, "frames": [[*frame, 21]] * 64, "title": 0, "run": 21},
        "fingerprint": "abc",
    }
    parts = encode_parts("10.000000", Anr.from_value(value), tmp_path)
    assert len(parts) > 2
    records = [part.to_record(key) for key, part in parts]
    for record in records:
        assert len(f"anr,{record.key},{record.value}".encode()) <= LINE_LIMIT
    decoded = decode_all(records)
    assert decoded.rejected == []
    summary = summarize_stalls(decoded.keyed(Anr), [], None)
    assert summary is not None
    assert summary.count == 1
    assert summary.total_ms == 2500.0
    merged = [json.loads(record.value) for record in records]
    assert sum(len(p["stacks"]) for p in merged) == 21
    assert [p.get("part_of") for p in merged] == [None] + ["10.000000_0"] * (len(parts) - 1)


def test_a_value_too_large_even_to_split_goes_to_a_side_file(tmp_path: Path) -> None:
    huge = ["f", "/x/" + "y" * 20_000 + ".py", 1]
    value = {
        "duration": 900.0,
        "startFrom": 5.0,
        "inBackground": False,
        "stacks": [],
        "loop": "qt",
        "thread": "MainThread",
        "point": {"index": 0, "frames": [[*huge, 1]], "title": 0, "run": 1},
        "fingerprint": "zz",
    }
    [(key, part)] = encode_parts("5.000000", Anr.from_value(dict(value)), tmp_path)
    stub = json.loads(part.encode_value())
    assert stub["side_file"] == "anr-5.000000.json"
    assert json.loads((tmp_path / stub["side_file"]).read_text()) == value
    assert key == "5.000000_0"
