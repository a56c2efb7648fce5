"""The continuous profiler in a real agent: windows, wall vs cpu mode, side files, stop."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

import hawkwatch
from hawkwatch.agent import current_agent
from hawkwatch.agent.plugins.profiler import ProfilerMonitor, Sampler, Window
from hawkwatch.agent.runtime import Agent
from hawkwatch.analysis.calltree import build_profile_tree, frame_proportions
from hawkwatch.config import ProfilerConfig
from hawkwatch.formats.cpu_profile import read_profiles
from hawkwatch.model import collections as c
from hawkwatch.model.profile import Profile, thread_frame
from hawkwatch.model.stack import PyFrame, StackTable
from tests.builders import agent_records, wait_for

pytestmark = pytest.mark.usefixtures("stopped_agent")


def spin_in_profiled_function(stop: threading.Event) -> None:
    while not stop.is_set():
        sum(i * i for i in range(5000))


def wait_in_profiled_function(stop: threading.Event) -> None:
    stop.wait()


@pytest.fixture
def busy_and_idle_threads():
    stop = threading.Event()
    threads = [
        threading.Thread(target=spin_in_profiled_function, args=(stop,), name="spinner"),
        threading.Thread(target=wait_in_profiled_function, args=(stop,), name="waiter"),
    ]
    for thread in threads:
        thread.start()
    yield
    stop.set()
    for thread in threads:
        thread.join()


def profiles() -> list[Profile]:
    agent = current_agent()
    assert agent is not None
    parsed = read_profiles(agent.session.path, agent_records(c.CPU_PROFILE))
    assert parsed.skipped == []
    return parsed.value


def thread_names(profile_list: list[Profile], mode: str) -> set[str]:
    tree = build_profile_tree(profile_list, mode)  # type: ignore[arg-type]
    return {root.frame.func for root in tree.roots}  # type: ignore[union-attr]


@pytest.mark.usefixtures("busy_and_idle_threads")
def test_windows_count_every_thread_in_wall_mode_and_only_running_ones_in_cpu_mode(
    hawkwatch_home: Path,
) -> None:
    hawkwatch.start(
        profiler_enabled=True,
        profiler_window_s=0.3,
        profiler_rate_hz=100,
        resources_enabled=False,
        imports_enabled=False,
        gc_enabled=False,
        cpu_enabled=False,
    )
    assert wait_for(lambda: sum(p.samples for p in profiles()) >= 30, timeout_s=30)
    found = profiles()
    assert "thread waiter" in thread_names(found, "wall")
    assert "thread spinner" in thread_names(found, "cpu")
    assert "thread waiter" not in thread_names(found, "cpu")
    assert not any(name.startswith("thread hawkwatch") for name in thread_names(found, "wall"))
    cpu_tree = build_profile_tree(found, "cpu")
    (spinner,) = [root for root in cpu_tree.roots if root.frame.func == "thread spinner"]  # type: ignore[union-attr]
    spinning = frame_proportions((spinner,), ["spin_in_profiled_function"])
    assert spinning["spin_in_profiled_function"] > 0.9  # nearly all its samples are in there
    assert all(p.budget == 0.0 and p.rate_hz > 0 for p in found)  # a fixed rate has no budget
    metadata = current_agent().session.metadata  # type: ignore[union-attr]
    assert metadata["profiler"]["rate_hz"] == 100


def test_stop_writes_the_window_in_progress(hawkwatch_home: Path) -> None:
    hawkwatch.start(
        profiler_enabled=True,
        profiler_window_s=3600,
        profiler_rate_hz=200,
        resources_enabled=False,
        imports_enabled=False,
        cpu_enabled=False,
    )
    agent = current_agent()
    assert agent is not None
    monitor = next(m for m in agent.monitors if isinstance(m, ProfilerMonitor))
    assert wait_for(lambda: monitor._window is not None and monitor._window.samples >= 3)
    session = agent.session
    hawkwatch.stop()
    found = read_profiles(session.path, session.records(c.CPU_PROFILE).records).value
    assert len(found) == 1 and found[0].samples >= 3
    assert found[0].sampler == "in-process"  # no supervisor: the in-process sampler profiles
    assert not any(t.name == "hawkwatch-profiler" for t in threading.enumerate())


def test_the_default_budget_adapts_the_rate_within_its_bounds(hawkwatch_home: Path) -> None:
    hawkwatch.start(
        profiler_enabled=True,
        profiler_window_s=0.5,
        resources_enabled=False,
        imports_enabled=False,
        cpu_enabled=False,
    )
    assert wait_for(lambda: len(profiles()) >= 2, timeout_s=30)
    for profile in profiles():
        assert profile.budget == ProfilerConfig().budget == 0.003
    # the rate is the waits the sampler asks for (what it got depends on the machine's load)
    hawkwatch.stop()
    asked, _ = _first_waits(ProfilerConfig(enabled=True, window_s=0.5))
    assert all(1 / 100 <= mean <= 1 / 1.0 for mean in asked)  # max_rate_hz … min_rate_hz


def test_a_large_window_goes_to_a_side_file(hawkwatch_home: Path) -> None:
    hawkwatch.start(profiler_enabled=True, profiler_window_s=3600, cpu_enabled=False)
    agent = current_agent()
    assert agent is not None and agent.context is not None
    monitor = next(m for m in agent.monitors if isinstance(m, ProfilerMonitor))
    table = StackTable()
    counts = {}
    for i in range(500):
        stack = (PyFrame(f"handler_{i}", "/srv/app/handlers.py", i), thread_frame("worker"))
        counts[table.add(stack)] = (2, 1)
    big = Profile(1_700_000_000.0, 60.0, 1000, 16.7, table, counts, 0.01, 0.3)
    monitor._write(agent.context, big)
    (record,) = [r for r in agent_records(c.CPU_PROFILE) if r.key == "1700000000.000000"]
    assert '"file":"cpu-profile/1700000000.000000.json"' in record.value
    assert (agent.session.path / "cpu-profile" / "1700000000.000000.json").is_file()
    (read,) = [p for p in profiles() if p.start_time == 1_700_000_000.0]
    assert read.counts == big.counts and read.samples == 1000


def test_one_sample_counts_a_blocked_thread_in_wall_mode_only() -> None:
    sampler = Sampler(ProfilerConfig())
    window = Window(time.time(), time.monotonic())
    stop, waiting = threading.Event(), threading.Event()

    def block() -> None:
        waiting.set()
        wait_in_profiled_function(stop)

    def counts(mode: str) -> dict[str, int]:
        found: dict[str, int] = {}
        for stack, n in window.profile(time.monotonic(), 0.01).stacks(mode):  # type: ignore[arg-type]
            found[stack[-1].func] = found.get(stack[-1].func, 0) + n
        return found

    waiter = threading.Thread(target=block, name="blocked")
    waiter.start()
    assert waiting.wait(10)
    try:
        sampler.sample(window, skip=-1)  # the first sample only learns the CPU times
        for _ in range(200):  # until this thread's CPU earned a cpu-mode count
            end = time.thread_time() + 0.03
            while time.thread_time() < end:
                pass
            sampler.sample(window, skip=-1)
            if counts("cpu").get("thread MainThread"):
                break
    finally:
        stop.set()
        waiter.join()
        sampler.close()
    wall, cpu = counts("wall"), counts("cpu")
    assert cpu.get("thread MainThread", 0) >= 1
    assert wall["thread blocked"] == wall["thread MainThread"] == window.samples
    assert "thread blocked" not in cpu


def recurse_then_wait(depth: int, ready: threading.Event, stop: threading.Event) -> None:
    if depth:
        recurse_then_wait(depth - 1, ready, stop)
        return
    ready.set()
    stop.wait()


@pytest.mark.parametrize("depth", [0, 5, 200])
def test_the_windows_fast_interning_matches_stacktable_add_of_frame_stack(depth: int) -> None:
    import sys

    from hawkwatch.agent.stacks import frame_stack

    ready, stop = threading.Event(), threading.Event()
    worker = threading.Thread(target=recurse_then_wait, args=(depth, ready, stop), name="deep")
    worker.start()
    assert ready.wait(10)
    try:
        frames = sys._current_frames()
        head = thread_frame("deep")
        window = Window(0.0, 0.0)
        fast_id = window.add_stack(frames[worker.ident], head, 128)  # type: ignore[index]
        again = window.add_stack(frames[worker.ident], head, 128)  # type: ignore[index]
        reference = (*frame_stack(frames[worker.ident], 128), head)  # type: ignore[index]
    finally:
        stop.set()
        worker.join()
    assert again == fast_id
    fast = window.table.stack(fast_id)
    assert [(f.func, f.file, f.line) for f in fast] == [(f.func, f.file, f.line) for f in reference]
    assert window.max_depth_hit == (2 if depth >= 128 else 0)


def _first_waits(config: ProfilerConfig) -> tuple[list[float], Agent]:
    """The means the profiler thread asks its draw for in its first five waits, under
    ``config``, and the agent it ran in."""

    from hawkwatch.agent.sampling import IntervalDraw

    asked: list[float] = []

    class Recording(IntervalDraw):
        def exponential(self, mean: float) -> float:
            asked.append(mean)
            return super().exponential(mean)

    hawkwatch.start(
        profiler_enabled=False, resources_enabled=False, imports_enabled=False, cpu_enabled=False
    )
    agent = current_agent()
    assert agent is not None and agent.context is not None
    ctx = agent.context.replace(config=agent.context.config.replace(profiler=config))
    monitor = ProfilerMonitor(Recording(lambda: 0.5))
    monitor.start(ctx)
    try:
        assert wait_for(lambda: len(asked) >= 5)
    finally:
        monitor.stop()
    return asked[:5], agent


def test_the_sampler_waits_are_drawn_from_the_injected_draw(hawkwatch_home: Path) -> None:
    """The sampler thread asks its draw for every wait, with the period the rate sets."""
    asked, _ = _first_waits(ProfilerConfig(enabled=True, rate_hz=250, window_s=3600))
    assert asked == [pytest.approx(1 / 250)] * 5


def test_beside_py_spy_the_in_process_sampler_keeps_a_fifth_of_the_budget() -> None:
    from hawkwatch.agent.plugins.profiler import OutsideWatch
    from hawkwatch.runenv import OUTSIDE_SAMPLER_VAR

    assert OutsideWatch({}).budget(ProfilerConfig(budget=0.01)) == 0.01
    beside = OutsideWatch({OUTSIDE_SAMPLER_VAR: "py-spy"})
    assert beside.budget(ProfilerConfig(budget=0.01)) == pytest.approx(0.002)


def test_once_the_stopped_file_exists_the_sampler_takes_everything_for_good(
    tmp_path: Path,
) -> None:
    """The supervisor's file says py-spy gave up: the whole budget and the fixed rate, with the
    supervisor's reason; a file that goes away later changes nothing."""
    from hawkwatch.agent.plugins.profiler import OutsideWatch
    from hawkwatch.runenv import OUTSIDE_SAMPLER_VAR, OUTSIDE_STOPPED_VAR

    stopped = tmp_path / "outside-stopped"
    watch = OutsideWatch({OUTSIDE_SAMPLER_VAR: "py-spy", OUTSIDE_STOPPED_VAR: str(stopped)})
    config = ProfilerConfig(budget=0.01, rate_hz=100)
    assert not watch.check()
    assert (watch.budget(config), watch.fixed_rate(config)) == (pytest.approx(0.002), 0.0)
    stopped.write_text("Permission Denied: Try running again with elevated permissions\n")
    assert watch.check()
    assert watch.stopped == "Permission Denied: Try running again with elevated permissions"
    assert (watch.budget(config), watch.fixed_rate(config)) == (0.01, 100)
    stopped.unlink()
    assert not watch.check()  # found once; kept
    assert (watch.budget(config), watch.fixed_rate(config)) == (0.01, 100)


@pytest.mark.parametrize("path", ["", "bad\0path", "/proc/self/no-such-dir/stopped"])
def test_a_stopped_file_that_cannot_be_read_is_not_there_yet(path: str) -> None:
    from hawkwatch.agent.plugins.profiler import OutsideWatch
    from hawkwatch.runenv import OUTSIDE_SAMPLER_VAR, OUTSIDE_STOPPED_VAR

    watch = OutsideWatch({OUTSIDE_SAMPLER_VAR: "py-spy", OUTSIDE_STOPPED_VAR: path})
    assert not watch.check()
    assert watch.sampling and watch.stopped is None


def test_without_py_spy_the_stopped_file_is_not_looked_for(tmp_path: Path) -> None:
    from hawkwatch.agent.plugins.profiler import OutsideWatch
    from hawkwatch.runenv import OUTSIDE_STOPPED_VAR

    stopped = tmp_path / "outside-stopped"
    stopped.write_text("gone")
    watch = OutsideWatch({OUTSIDE_STOPPED_VAR: str(stopped)})
    assert not watch.check() and not watch.sampling


def test_beside_py_spy_a_fixed_rate_is_py_spys_and_the_in_process_sampler_keeps_its_budget(
    hawkwatch_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At a fixed 250 Hz alone the sampler waits 1/250 s; beside py-spy it adapts to its budget
    share instead, so no wait is shorter than 1/max_rate_hz and the session says no fixed rate."""
    from hawkwatch.runenv import OUTSIDE_SAMPLER_VAR

    monkeypatch.setenv(OUTSIDE_SAMPLER_VAR, "py-spy")
    asked, agent = _first_waits(
        ProfilerConfig(enabled=True, rate_hz=250, max_rate_hz=100, window_s=3600)
    )
    assert all(mean >= 1 / 100 for mean in asked)
    assert agent.session.metadata["profiler"]["rate_hz"] == 0.0


def test_when_py_spy_gives_up_the_running_sampler_takes_the_fixed_rate(
    hawkwatch_home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Beside py-spy a fixed 250 Hz is py-spy's; once the supervisor's stopped file appears the
    running sampler waits 1/250 s, and ``session.json`` and the window say so. The share's
    waits are drawn an hour long here: the switch must end the one in progress."""
    from hawkwatch.agent.sampling import IntervalDraw
    from hawkwatch.runenv import IN_PROCESS_SHARE, OUTSIDE_SAMPLER_VAR, OUTSIDE_STOPPED_VAR

    stopped = tmp_path / "outside-stopped"
    monkeypatch.setenv(OUTSIDE_SAMPLER_VAR, "py-spy")
    monkeypatch.setenv(OUTSIDE_STOPPED_VAR, str(stopped))
    asked: list[float] = []

    class Recording(IntervalDraw):
        def exponential(self, mean: float) -> float:
            asked.append(mean)
            return 3600.0 if mean > 1 / 250 else super().exponential(mean)

    hawkwatch.start(
        profiler_enabled=False, resources_enabled=False, imports_enabled=False, cpu_enabled=False
    )
    agent = current_agent()
    assert agent is not None and agent.context is not None
    config = ProfilerConfig(enabled=True, rate_hz=250, max_rate_hz=100, window_s=3600)
    ctx = agent.context.replace(config=agent.context.config.replace(profiler=config))
    monitor = ProfilerMonitor(Recording(lambda: 0.5))
    monitor.start(ctx)
    try:
        assert wait_for(lambda: len(asked) >= 1)  # one sample, then an hour's wait
        assert all(mean >= 1 / 100 for mean in asked)
        assert agent.session.metadata["profiler"]["rate_hz"] == 0.0
        stopped.write_text("py-spy exit 1")
        assert wait_for(lambda: len(asked) >= 5, timeout_s=30)
        assert asked[0] >= 1 / 100 and asked[1:5] == [pytest.approx(1 / 250)] * 4
    finally:
        monitor.stop()
    noted = agent.session.metadata["profiler"]
    assert noted["rate_hz"] == 250 and noted["budget"] == config.budget
    assert noted["outside"] == "py-spy"
    assert noted["outside_stopped"]["reason"] == "py-spy exit 1"
    # no window mixes the two: the share's ends at the switch, the fixed rate's starts there
    before, after = sorted(profiles(), key=lambda p: p.start_time)
    assert before.budget == pytest.approx(config.budget * IN_PROCESS_SHARE)
    assert before.samples == 1  # then the hour's wait, cut short by the switch
    assert after.budget == 0.0  # a fixed rate, not a budget, set its samples
    assert after.start_time >= noted["outside_stopped"]["time"]
    assert after.samples >= 1


FORKS_AFTER_PY_SPY_GAVE_UP = """
import json, os, sys, time
import hawkwatch
from hawkwatch.agent import current_agent

def profiler_note():
    return current_agent().session.metadata.get("profiler", {})

def wait_for(predicate):
    deadline = time.monotonic() + 60
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.01)
    return predicate()

hawkwatch.start(profiler_enabled=True, profiler_rate_hz=200)
before = profiler_note()
child = os.fork()
if child == 0:
    wait_for(lambda: "outside_stopped" in profiler_note())
    print(json.dumps(["child", before, profiler_note()]), flush=True)
    os._exit(0)
with open(os.environ["_HAWKWATCH_OUTSIDE_STOPPED"], "w") as f:
    f.write("Permission Denied")
wait_for(lambda: "outside_stopped" in profiler_note())
os.waitpid(child, 0)
print(json.dumps(["parent", before, profiler_note()]), flush=True)
"""


def test_parent_and_forked_child_both_see_py_spy_give_up(tmp_path: Path) -> None:
    """The file is looked for by each process's own agent: a child forked before py-spy gave
    up switches too (its agent restarts after the fork with the inherited environment)."""
    import json
    import os
    import subprocess
    import sys

    from hawkwatch.runenv import OUTSIDE_SAMPLER_VAR, OUTSIDE_STOPPED_VAR

    env = {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}
    env |= {
        "HAWKWATCH_HOME": str(tmp_path / "home"),
        OUTSIDE_SAMPLER_VAR: "py-spy",
        OUTSIDE_STOPPED_VAR: str(tmp_path / "outside-stopped"),
    }
    done = subprocess.run(
        [sys.executable, "-c", FORKS_AFTER_PY_SPY_GAVE_UP],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no traceback, no warning of a fork beside threads (3.12+)
    lines = done.stdout.splitlines()
    seen = {role: (before, after) for role, before, after in map(json.loads, lines)}
    assert set(seen) == {"parent", "child"}
    parent_before, _ = seen["parent"]
    assert parent_before["rate_hz"] == 0.0 and "outside_stopped" not in parent_before
    for _, after in seen.values():
        assert after["rate_hz"] == 200
        assert after["budget"] == ProfilerConfig().budget
        assert after["outside_stopped"]["reason"] == "Permission Denied"
