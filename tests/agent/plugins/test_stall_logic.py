"""The stall monitor's decisions, driven check by check on an injected clock (no real stalls).

A ``ScriptedTarget`` answers each check as the test says; the monitor's thread never runs: the
test calls ``_tick(now)`` itself, so nothing here waits for time to pass.
"""

from __future__ import annotations

import asyncio
import faulthandler
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import hawkwatch
from hawkwatch.agent import current_agent
from hawkwatch.agent.plugins.stall import StallMonitor
from hawkwatch.agent.plugins.stall_files import APP_DUMP_GRACE_S, AppWatchdog, Backstop
from hawkwatch.agent.plugins.stall_loops import BLOCKED, ENDED, OK, TARGETS, Poll, Target
from hawkwatch.model import collections as c
from tests.builders import agent_records

QUIET = {"resources_enabled": False, "imports_enabled": False, "gc_enabled": False}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class ScriptedTarget(Target):
    """A loop on the test's own thread whose every poll answer is set by the test."""

    kind = "asyncio"

    def __init__(self) -> None:
        super().__init__()
        self.thread_id = threading.get_ident()
        self.thread_name = threading.current_thread().name
        self.answer: Poll = (OK, 0.0, 0.0, 0.0)

    def poll(self, now: float, interval: float, sample_after: float) -> Poll:
        return self.answer


@pytest.fixture
def monitor(hawkwatch_home: Path) -> Iterator[tuple[StallMonitor, Clock, ScriptedTarget]]:
    hawkwatch.start(stall_enabled=False, stall_asyncio_threshold_s=0.5, **QUIET)
    agent = current_agent()
    assert agent is not None and agent.context is not None
    clock = Clock()
    stall = StallMonitor(clock=clock, wall=lambda: clock.now + 1_700_000_000.0)
    stall.configure(agent.context)
    target = ScriptedTarget()
    TARGETS.add(target)
    yield stall, clock, target
    target.gone = True
    TARGETS.snapshot()  # drops it
    hawkwatch.stop()


def stall_in_same_place(
    stall: StallMonitor, clock: Clock, target: ScriptedTarget, s: float
) -> None:
    """A spell of ``s`` seconds: sampled twice while blocked, then answered."""
    start = clock.now
    for _ in range(2):
        clock.now += s / 2
        target.answer = (BLOCKED, start, 0.0, start)
        stall._tick(clock.now)
    target.answer = (ENDED, start, clock.now, start)
    stall._tick(clock.now)
    clock.now += 1.0
    target.answer = (OK, 0.0, 0.0, 0.0)
    stall._tick(clock.now)


def full_stalls() -> list[dict[str, Any]]:
    return [json.loads(r.value) for r in agent_records(c.ANR) if r.key.endswith("_0")]


def test_a_spell_over_the_threshold_is_one_stall_and_a_shorter_one_none(monitor) -> None:
    stall, clock, target = monitor
    stall_in_same_place(stall, clock, target, 0.4)  # under the 0.5 s threshold
    assert full_stalls() == []
    stall_in_same_place(stall, clock, target, 0.8)
    [record] = full_stalls()
    assert record["duration"] == pytest.approx(800, abs=1)
    assert record["loop"] == "asyncio" and record["thread"] == target.thread_name
    # the two samples taken while it was blocked, identical, so kept once and counted twice
    assert [stack["capturedCount"] for stack in record["stacks"]] == [2]
    assert "stall_in_same_place" in [frame[0] for frame in record["stacks"][0]["frames"]]


def test_identical_stalls_back_off_to_short_records(monitor) -> None:
    stall, clock, target = monitor
    for _ in range(5):
        stall_in_same_place(stall, clock, target, 0.8)
    first, second, third, fourth, fifth = sorted(full_stalls(), key=lambda s: s["startFrom"])
    assert "point" in first and first["stacks"]
    assert second["repeat"] == 1 and second["stacks"] == [] and "point" not in second
    assert second["fingerprint"] == first["fingerprint"]
    assert second["repeat_of"] == f"{first['startFrom']:.6f}_0"
    assert "point" in third  # the window after one repeat has passed: a full record again
    assert "point" in fourth  # the window grows, Fibonacci-like, as in Matrix
    assert fifth["repeat"] == 4 and fifth["repeat_of"] == f"{fourth['startFrom']:.6f}_0"


def test_a_hang_marker_exists_only_while_a_stall_past_the_threshold_lasts(monitor) -> None:
    stall, clock, target = monitor
    session = current_agent().session  # type: ignore[union-attr]
    start = clock.now
    clock.now += 0.3
    target.answer = (BLOCKED, start, 0.0, start)
    stall._tick(clock.now)
    assert list(session.path.glob("hang-*.json")) == []  # not yet past the threshold
    clock.now += 0.4
    stall._tick(clock.now)
    [marker] = session.path.glob("hang-*.json")
    info = json.loads(marker.read_text())
    assert info["start"] == pytest.approx(start + 1_700_000_000.0)
    assert info["thread_id"] == target.thread_id
    target.answer = (ENDED, start, clock.now, start)
    stall._tick(clock.now)
    assert list(session.path.glob("hang-*.json")) == []
    assert len(full_stalls()) == 1


def test_each_kind_is_judged_by_its_own_threshold(monitor) -> None:
    """0.45 s: a stall of a heartbeat loop (400 ms), none of an asyncio loop (here 500 ms)."""
    stall, clock, target = monitor
    stall_in_same_place(stall, clock, target, 0.45)
    assert full_stalls() == []
    target.kind = "heartbeat"
    stall_in_same_place(stall, clock, target, 0.45)
    [record] = full_stalls()
    assert record["loop"] == "heartbeat"


@pytest.fixture
def idle_loop_thread() -> Iterator[int]:
    """A real asyncio loop in its own thread, idle in its selector; yields the thread's id."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    loop.call_soon(ready.set)
    thread = threading.Thread(target=loop.run_forever, name="idle-loop")
    thread.start()
    assert ready.wait(10)
    assert thread.ident is not None
    yield thread.ident
    loop.call_soon_threadsafe(loop.stop)
    thread.join()
    loop.close()


def test_a_spell_of_a_loop_idle_in_its_selector_is_the_machines(monitor, idle_loop_thread) -> None:
    """Its thread got no core to take the ping's answer: nothing the program did, no record."""
    stall, clock, target = monitor
    target.thread_id = idle_loop_thread
    stall_in_same_place(stall, clock, target, 0.8)
    assert full_stalls() == []
    target.thread_id = threading.get_ident()  # the same spell, the program busy: a stall
    stall_in_same_place(stall, clock, target, 0.8)
    assert len(full_stalls()) == 1


def test_a_spell_without_any_stack_is_never_recorded(monitor) -> None:
    stall, clock, target = monitor
    finished = threading.Thread(target=lambda: None)
    finished.start()
    finished.join()
    assert finished.ident is not None
    target.thread_id = finished.ident  # no stack to sample: the thread is gone
    stall_in_same_place(stall, clock, target, 0.8)
    assert full_stalls() == []


def test_a_retuned_backstop_is_armed_with_its_new_timeout_at_the_next_check(monitor) -> None:
    session = current_agent().session  # type: ignore[union-attr]
    backstop = Backstop(session, 0.4, 0.2)
    try:
        backstop.arm(10.0)
        assert (backstop.armed, backstop.timeout) == (True, 0.4)
        backstop.arm(10.1)  # within re-arm-every: left alone
        assert backstop.timeout == 0.4
        backstop.retune(0.2, 0.0)  # an asyncio loop turned up
        backstop.arm(10.1)
        assert (backstop.armed, backstop.timeout) == (True, 0.2)
    finally:
        backstop.close(remove_if_empty=True)


def test_the_apps_later_dump_counts_as_pending_until_a_grace_after_it_was_due(
    tmp_path: Path,
) -> None:
    """faulthandler's thread may fire the app's dump late on a loaded host: arming the backstop
    at the due time would cancel it before it fired."""
    clock = Clock()
    app = AppWatchdog(clock=clock)
    app.install()
    try:
        with open(tmp_path / "app-dump.txt", "wb") as out:
            faulthandler.dump_traceback_later(2, file=out)  # the app's own, through the module
            clock.now += 2.5  # due, but perhaps not fired yet
            assert app.arm(0.2, out) is False  # the backstop steps aside
            clock.now += APP_DUMP_GRACE_S
            assert app.arm(0.2, out) is True  # long past: the backstop arms again
            app.cancel()
    finally:
        faulthandler.cancel_dump_traceback_later()
        app.uninstall()


def test_a_spell_the_watchdog_slept_through_that_goes_on_is_one_stall(monitor) -> None:
    """C code held the GIL (the loop's thread burned CPU while the watchdog waited), and the loop
    was still blocked afterwards: the late spell and the ping's spell are one stall."""
    stall, clock, target = monitor
    cpu = iter(float(i) for i in range(100))
    target.cpu_time = lambda: next(cpu)  # type: ignore[method-assign]  # a second per check
    stall._tick(clock.now)  # on time: the CPU mark
    stall._due, stall._last_pause = clock.now + 0.1, 0.1  # it meant to sleep 0.1 s
    start = clock.now
    clock.now += 0.8  # ... and woke 0.7 s late, the loop's thread having burned CPU meanwhile
    stall._tick(clock.now)
    assert full_stalls() == []  # judged at the next check: the loop may still be blocked
    clock.now += 0.3
    target.answer = (BLOCKED, start, 0.0, start)  # the ping sent at the late check: no answer
    stall._tick(clock.now)
    clock.now += 0.3
    target.answer = (ENDED, start, clock.now, start)
    stall._tick(clock.now)
    [record] = full_stalls()
    assert record["duration"] == pytest.approx(1400, abs=60)


def test_a_spell_the_watchdog_slept_through_that_ended_is_recorded_at_the_next_check(
    monitor,
) -> None:
    stall, clock, target = monitor
    cpu = iter(float(i) for i in range(100))
    target.cpu_time = lambda: next(cpu)  # type: ignore[method-assign]
    stall._tick(clock.now)
    stall._due, stall._last_pause = clock.now + 0.1, 0.1
    clock.now += 0.8
    stall._tick(clock.now)
    clock.now += 0.1
    target.answer = (ENDED, clock.now - 0.01, clock.now, clock.now - 0.01)  # answered promptly
    stall._tick(clock.now)
    [record] = full_stalls()
    assert record["duration"] == pytest.approx(800, abs=60)
    assert record["source"] == "watchdog"
