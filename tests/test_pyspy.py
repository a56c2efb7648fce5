"""py-spy's raw output read into the profile model, and episode trees made from its windows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hawkwatch.model.profile import PY_SPY, HighLoadEpisode, thread_frame
from hawkwatch.model.records import CpuProfile
from hawkwatch.model.stack import PyFrame
from hawkwatch.pyspy import default_rate, parse_raw, window_profile
from hawkwatch.pyspy_store import episode_tree

RAW = "\n".join([
    "thread (101): MainThread;<module> (/app/a.py:16);spin (/app/a.py:11);f (/app/a.py:4) 40",
    "thread (101): MainThread;<module> (/app/a.py:16);spin (/app/a.py:11);g (/app/a.py:8) 60",
    "thread (105): hawkwatch-scheduler;Thread._bootstrap (/py/threading.py:1002) 7",
    'process 202:"/usr/bin/python a.py";thread (202): MainThread;'
    "<module> (/app/a.py:15);g (/app/a.py:8) 5",
    'process 1:"bash run.sh";process 303:"python b.py";thread (303);<module> (/app/b.py:1) 2',
    "thread (101): MainThread 3",
    "not a stack line",
])  # fmt: skip

SPIN = PyFrame("spin", "/app/a.py", 11)
MODULE = PyFrame("<module>", "/app/a.py", 16)


def test_raw_lines_become_stacks_per_process_innermost_first_with_thread_frames() -> None:
    found = parse_raw(RAW, root_pid=101)
    assert set(found) == {101, 202, 303}
    root = found[101]
    f_stack = (PyFrame("f", "/app/a.py", 4), SPIN, MODULE, thread_frame("MainThread"))
    assert root[f_stack] == 40
    assert root[(thread_frame("MainThread"),)] == 3
    assert not any("hawkwatch" in s[-1].func for s in root)  # the agent's threads are left out
    assert found[202] == {
        (PyFrame("g", "/app/a.py", 8), PyFrame("<module>", "/app/a.py", 15),
         thread_frame("MainThread")): 5
    }  # fmt: skip
    assert found[303] == {(PyFrame("<module>", "/app/b.py", 1), thread_frame("thread-303")): 2}


def test_a_window_is_a_cpu_only_profile_that_says_py_spy_made_it() -> None:
    stacks = parse_raw(RAW, root_pid=101)[101]
    profile = window_profile(stacks, 1000.0, 2.0, 97.0)
    assert profile.sampler == PY_SPY and profile.samples == 103 and profile.rate_hz == 97.0
    assert all(wall == 0 for wall, _ in profile.counts.values())
    record = CpuProfile.of(profile).to_record()
    back = CpuProfile.from_record(record).to_profile()
    assert back.sampler == PY_SPY
    assert sorted(n for _, n in back.stacks("cpu")) == [3, 40, 60]
    assert list(back.stacks("wall")) == []
    legacy = json.loads(record.value)
    del legacy["sampler"]
    older = record._replace(value=json.dumps(legacy))  # windows written before the field
    assert CpuProfile.from_record(older).to_profile().sampler == "in-process"


def test_an_episode_tree_takes_each_overlapping_window_in_proportion_minus_thread_frames() -> None:
    stacks = parse_raw(RAW, root_pid=101)[101]
    inside = window_profile(stacks, 1000.0, 2.0, 100.0)
    half_out = window_profile({(SPIN, thread_frame("MainThread")): 9}, 1001.6, 2.0, 100.0)
    episode = HighLoadEpisode("1000.000000", 999.5, 3.0, 95.0)  # 999.5 … 1002.5
    tree = episode_tree(episode, [inside, half_out])
    assert tree is not None
    roots = {root["frame"]: root["count"] for root in json.loads(tree)}
    # the window inside counts whole; 0.9 s of the other's 2 s lie inside: 9 × 0.45 → 4
    assert roots == {"<module> (/app/a.py:16)": 100, "spin (/app/a.py:11)": 4}
    assert episode_tree(HighLoadEpisode("0", 2000.0, 5.0, 90.0), [inside]) is None


def test_a_short_episode_straddling_two_windows_gets_its_tree_from_both() -> None:
    f_stack = (PyFrame("f", "/app/a.py", 4), SPIN, MODULE, thread_frame("MainThread"))
    g_stack = (PyFrame("g", "/app/a.py", 8), SPIN, MODULE, thread_frame("MainThread"))
    first = window_profile({f_stack: 150, g_stack: 50}, 1000.0, 2.0, 100.0)
    second = window_profile({f_stack: 20, g_stack: 180}, 1002.0, 2.0, 100.0)
    later = window_profile({f_stack: 200}, 1004.0, 2.0, 100.0)
    # 1.5 s from 1001.4: 0.6 s of the first window (30 %), 0.9 s of the second (45 %)
    tree = episode_tree(HighLoadEpisode("1001.400000", 1001.4, 1.5, 97.0), [first, second, later])
    assert tree is not None, "no window lies mostly inside: the tree fell back to in-process"
    (module,) = json.loads(tree)
    assert module["count"] == 60 + 90
    (spin,) = module["children"]
    children = {node["frame"]: node["count"] for node in spin["children"]}
    assert children == {"f (/app/a.py:4)": 45 + 9, "g (/app/a.py:8)": 15 + 81}


def test_the_default_rate_is_what_the_budget_pays_for_within_the_limits() -> None:
    assert default_rate(0.1, 0.0, 100.0, 1.0) == 100.0
    assert default_rate(0.006, 0.0, 100.0, 1.0) == 10
    assert default_rate(0.008, 0.0, 100.0, 1.0) == 13  # py-spy takes whole hertz only
    assert default_rate(0.01, 37.4, 100.0, 1.0) == 37
    assert default_rate(0.0001, 0.0, 100.0, 2.0) == 2.0
    assert default_rate(0.01, 37.0, 100.0, 1.0) == 37.0


def test_thread_totals_are_cut_to_the_cpu_each_thread_used() -> None:
    from hawkwatch.pyspy import cpu_weighted, parse_raw_threads

    raw = "\n".join([
        "thread (11): MainThread;<module> (/a.py:1);f (/a.py:2) 60",
        "thread (11): MainThread;<module> (/a.py:1);g (/a.py:3) 40",
        "thread (12): waiter;Condition.wait (/py/threading.py:327) 30",
        "thread (13): unknown;h (/a.py:9) 5",
    ])  # fmt: skip
    threads = parse_raw_threads(raw, 11)
    assert set(threads) == {(11, 11), (11, 12), (11, 13)}
    # MainThread ran 0.5 s of a 1 s window (100 Hz: 50 samples earned), the waiter 0.001 s
    (stacks,) = cpu_weighted(threads, {11: 0.5, 12: 0.001}, 100.0).values()
    by_func = {stack[0].func: n for stack, n in stacks.items()}
    assert by_func == {"f": 30, "g": 20, "h": 5}  # in proportion; no reading: kept as it was
    (kept,) = cpu_weighted(threads, {11: 2.0, 12: 1.0}, 100.0).values()
    assert sum(kept.values()) == 135  # never raised above what py-spy saw


def test_the_engine_option_chooses_the_sampler_and_says_what_is_wrong() -> None:
    from hawkwatch.config import ProfilerConfig
    from hawkwatch.errors import ConfigError
    from hawkwatch.launcher import OutsideSampler

    with pytest.raises(ConfigError, match=r"profiler\.engine = 'bogus': use one of auto"):
        OutsideSampler.for_config(ProfilerConfig(enabled=True, engine="bogus"))
    assert OutsideSampler.for_config(ProfilerConfig(enabled=True, engine="in-process")) is None
    assert OutsideSampler.for_config(ProfilerConfig(enabled=False)) is None
    chosen = OutsideSampler.for_config(ProfilerConfig(enabled=True, engine="py-spy"))
    assert chosen is not None
    assert chosen.options.rate_hz == 4  # 0.24 % at 600 µs a sample, whole hertz
    assert chosen.options.budget == pytest.approx(0.0024)  # later windows adapt to it
    fixed = OutsideSampler.for_config(ProfilerConfig(enabled=True, rate_hz=37))
    assert fixed is not None and fixed.options.rate_hz == 37
    assert fixed.options.budget == 0.0  # a fixed rate stays fixed


def test_a_py_spy_that_overruns_its_window_is_killed_and_the_program_goes_on(
    tmp_path: Path,
) -> None:
    """A py-spy stuck while attached would keep the program paused: past its window and the
    overrun allowance the recorder stops it, even one that ignores SIGINT."""
    import os
    import signal
    import subprocess
    import sys

    from hawkwatch.pyspy import Recorder, RecorderOptions
    from tests.builders import wait_for

    stuck = tmp_path / "stuck-py-spy"
    stuck.write_text(
        f"#!{sys.executable}\nimport signal, time\n"
        "signal.signal(signal.SIGINT, signal.SIG_IGN)\ntime.sleep(600)\n"
    )
    stuck.chmod(0o755)
    program = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        recorder = Recorder(
            program.pid,
            RecorderOptions(window_s=1.0, executable=str(stuck), overrun_s=0.5),
        )
        recorder.start()
        assert wait_for(lambda: len(recorder.errors) >= 1, timeout_s=60)
        recorder.stop()
        assert program.poll() is None  # the program itself was never touched
        assert recorder.windows == []
        assert "exit -9" in recorder.errors[0]  # killed, as it ignored SIGINT
    finally:
        os.kill(program.pid, signal.SIGKILL)
        program.wait()


def test_each_window_s_rate_is_what_py_spys_budget_pays_for_at_the_cost_measured() -> None:
    """Deeper stacks and more threads make each pause longer: the next window's rate follows
    py-spy's CPU per sample (plus the allowance for stopping and resuming), read at the polls
    from ``STARTUP_S`` on, so py-spy's start-up is not charged to its samples."""
    from hawkwatch.pyspy import PAUSE_ALLOWANCE_S, STARTUP_S, Recorder, RecorderOptions, Spent

    now = [0.0]
    cpu = {"s": 0.0}
    spent = Spent(42, 0.0, clock=lambda: now[0], cpu=lambda pid: cpu["s"])
    for t, used in ((0.1, 0.05), (STARTUP_S, 0.06), (5.5, 0.06 + 5.0 * 10 * 1.2e-3)):
        now[0], cpu["s"] = t, used
        spent.read()  # the reading at 0.1 s (start-up: 0.05 s of CPU) is not used
    cost = spent.cost_per_sample(10)
    assert cost == pytest.approx(1.2e-3 + PAUSE_ALLOWANCE_S)
    adaptive = Recorder(1, RecorderOptions(rate_hz=7, budget=0.004, max_rate_hz=100.0))
    assert adaptive.rate_hz == 7
    assert adaptive.next_rate(cost) == 3  # 0.4 % at 1.4 ms, whole hertz
    assert adaptive.next_rate(1e-5) == 100  # within max_rate_hz
    assert adaptive.next_rate(None) == 7  # no measurement (a window shorter than STARTUP_S)
    assert Recorder(1, RecorderOptions(rate_hz=100)).next_rate(cost) == 100  # a fixed rate
    assert Spent(1, 0.0, clock=lambda: 9.0, cpu=lambda pid: 0.0).cost_per_sample(7) is None


def test_descendants_come_from_the_kernels_children_lists() -> None:
    import os
    import signal
    import subprocess
    import sys

    from hawkwatch.pyspy import children_of, descendants

    code = ("import subprocess, sys, time\n"
            "grandchild = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
            "print(grandchild.pid, flush=True)\ntime.sleep(60)\n")  # fmt: skip
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    grandchild = 0
    try:
        assert child.stdout is not None
        grandchild = int(child.stdout.readline())
        assert children_of(child.pid) == [grandchild]
        assert descendants(child.pid) == [grandchild]
        assert set(descendants(os.getpid())) >= {child.pid, grandchild}
        assert children_of(grandchild) == [] == descendants(grandchild)
    finally:
        if grandchild:
            os.kill(grandchild, signal.SIGKILL)
        child.kill()
        child.wait()
        assert child.stdout is not None
        child.stdout.close()


def test_py_spy_follows_subprocesses_only_once_the_program_has_children(tmp_path: Path) -> None:
    """``--subprocesses`` costs ~1 % of a core (py-spy scans every process for new children),
    so a window starts without it while the program has no children, and ends as soon as a
    child appears: the next window follows it."""
    import os
    import signal
    import subprocess
    import sys

    from hawkwatch.pyspy import Recorder, RecorderOptions, children_of
    from tests.builders import wait_for

    calls = tmp_path / "calls.jsonl"
    fake = tmp_path / "fake-py-spy"
    fake.write_text(
        f"#!{sys.executable}\nimport json, signal, sys, time\n"
        f"open({str(calls)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
        "out = sys.argv[sys.argv.index('--output') + 1]\n"
        "def done(*_):\n"
        "    open(out, 'w').write('thread (1): MainThread;f (/a.py:1) 3\\n')\n"
        "    sys.exit(0)\n"
        "signal.signal(signal.SIGINT, done)\n"
        "time.sleep(float(sys.argv[sys.argv.index('--duration') + 1]))\ndone()\n"
    )
    fake.chmod(0o755)
    go = tmp_path / "fork-now"
    program = subprocess.Popen([sys.executable, "-c", (
        "import os, time\n"
        f"while not os.path.exists({str(go)!r}): time.sleep(0.01)\n"
        "if os.fork() == 0:\n    time.sleep(600)\n    os._exit(0)\n"
        "time.sleep(600)\n")])  # fmt: skip
    recorder = Recorder(program.pid, RecorderOptions(window_s=10.0, executable=str(fake)))
    try:
        recorder.start()
        assert wait_for(calls.exists, timeout_s=60)
        go.touch()  # the program forks only now, during the first window
        assert wait_for(lambda: len(recorder.windows) >= 1, timeout_s=60)
        assert wait_for(lambda: len(calls.read_text().splitlines()) >= 2, timeout_s=60)
        first, second = (json.loads(x) for x in calls.read_text().splitlines()[:2])
        assert "--subprocesses" not in first
        assert "--subprocesses" in second
        assert recorder.windows[0].end - recorder.windows[0].start < 10.0  # ended at the fork
        assert recorder.windows[0].profiles[program.pid].samples == 3
    finally:
        recorder.stop()
        for forked in children_of(program.pid):
            os.kill(forked, signal.SIGKILL)
        os.kill(program.pid, signal.SIGKILL)
        program.wait()


def test_py_spys_busy_time_counts_its_time_on_a_cpu_and_waiting_for_one() -> None:
    """In a fresh process: a long-lived one (this test runner) has ended threads whose CPU time
    ``process_time`` keeps and ``/proc/PID/task`` no longer lists."""
    import subprocess
    import sys

    from hawkwatch.pyspy import process_busy_seconds

    burn = (
        "import sys, time\n"
        "end = time.process_time() + 0.2\n"
        "while time.process_time() < end: pass\n"
        "print(time.process_time(), flush=True)\n"
        "sys.stdin.read()\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", burn], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as program:
        assert program.stdout is not None and program.stdin is not None
        ran = float(program.stdout.readline())
        busy = process_busy_seconds(program.pid)
        program.stdin.close()
    assert ran >= 0.2
    assert busy >= 0.9 * ran  # on a CPU (or waiting for one) at least as long as it ran
    assert process_busy_seconds(2**22 + 12345) == 0.0  # no such process: nothing, no error
