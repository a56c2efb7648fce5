"""End to end: ``hawkwatch run --profile`` drives a real py-spy on a program that forks and execs.

The program spends most of its CPU in one function, forks a child that burns in another, then
execs a second Python program. What must hold whatever the machine's load: the program's output
and exit code are its own; each process's session holds py-spy windows; the dominant function
has the largest cpu share of its process; the high-load episode's tree comes from py-spy.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import pytest

from hawkwatch.analysis.calltree import build_profile_tree, top_frames
from hawkwatch.formats.cpu_profile import read_profiles
from hawkwatch.formats.hawkeye_cpu import read_highload
from hawkwatch.model.profile import PY_SPY
from hawkwatch.pyspy import find_pyspy
from hawkwatch.store import Session, list_sessions
from tests.e2e.conftest import Runner

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(find_pyspy() is None, reason="py-spy is in the test extra"),
]

APP = """
import os, sys

def inner_square_sum(n):
    total = 0
    for i in range(n):
        total += i * i
    return total

# fixed amounts of work, no clock in the loops: a clock's system call is where a loaded
# machine preempts a process, and py-spy counts a runnable thread where it waits
def dominant_parent_work(calls):
    for _ in range(calls):
        inner_square_sum(2000)

def minor_parent_work(calls):
    for _ in range(calls):
        sorted(range(300), key=lambda x: -x)

def forked_child_work(calls):
    for _ in range(calls):
        inner_square_sum(5000)

child = os.fork()
if child == 0:
    forked_child_work(6000)
    os._exit(0)
dominant_parent_work(30000)
minor_parent_work(5000)
os.waitpid(child, 0)
print("parent done", flush=True)
os.execv(sys.executable, [sys.executable, sys.argv[1]])
"""

EXECED = """
import sys

def execd_inner_loop(n):
    total = 0
    for i in range(n):
        total += i
    return total

def execd_program_work(calls):
    for _ in range(calls):
        execd_inner_loop(5000)

execd_program_work(8000)
print("execd done")
sys.exit(3)
"""


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("pyspy")
    runner = Runner(home=base / "home", cwd=base)
    app = runner.script("app.py", APP)
    execd = runner.script("execd.py", EXECED)
    result = runner.hawkwatch(
        "run", "--profile", "--children",  # the exec'd program records too
        "-c", "profiler.engine=py-spy",
        "-c", "profiler.rate_hz=100",
        "-c", "cpu.highload_min_duration_s=1",
        # a low bar: the episode must exist even when a loaded machine gives the burn little CPU
        "-c", "cpu.highload_threshold=0.2",
        "-c", "cpu.check_interval_s=0.2",
        "-c", "cpu.check_interval_busy_s=0.25",
        "--", sys.executable, str(app), str(execd),
        timeout=180,
    )  # fmt: skip
    return runner, result


def _functions(session: Session) -> tuple[list[str], dict[str, float]]:
    profiles = read_profiles(session.path, session.records().records).value
    outside = [p for p in profiles if p.sampler == PY_SPY]
    assert outside, f"no py-spy window in {session.path}: {session.metadata}"
    tree = build_profile_tree(profiles, "cpu")
    assert tree.sampler == PY_SPY
    costs = top_frames(tree.roots, 10, by_function=True)
    names = [c.frame.func for c in costs if not isinstance(c.frame, int)]
    shares = {
        c.frame.func: c.self_proportion for c in costs if not isinstance(c.frame, int)
    }
    return names, shares


def test_the_programs_output_and_exit_code_are_its_own(ran) -> None:
    _, result = ran
    assert result.returncode == 3, result.stderr
    assert result.stdout == "parent done\nexecd done\n"
    assert "py-spy" not in result.stderr  # nothing of py-spy's own chatter reaches the user


def test_the_dominant_function_gets_the_largest_share_in_each_process(ran) -> None:
    runner, _ = ran
    found = list_sessions(runner.root)
    assert len(found) == 3  # the program, its forked child, the program it exec'd
    by_role: dict[str, Session] = {}
    for session in found:
        argv = session.metadata.get("argv") or [""]
        if Path(argv[0]).name == "execd.py":
            by_role["execd"] = session
        elif session.metadata.get("supervised"):
            by_role["parent"] = session
        else:
            by_role["child"] = session
    assert set(by_role) == {"parent", "child", "execd"}, [s.metadata for s in found]

    names, shares = _functions(by_role["parent"])
    # inner_square_sum is called by dominant_parent_work (3 s) and is where its time goes
    assert names[0] == "inner_square_sum", shares
    assert shares["inner_square_sum"] > 0.4
    names, shares = _functions(by_role["child"])
    assert names[0] == "inner_square_sum", shares
    names, shares = _functions(by_role["execd"])
    assert names[0] == "execd_inner_loop", shares

    note = by_role["parent"].metadata["profiler_outside"]
    assert note["engine"] == "py-spy" and note["windows"] >= 1
    # profiler.rate_hz fixes the rate: every window kept it, whatever a sample cost
    assert note["rates_hz"] == [100] * note["windows"]
    assert len(note["cost_per_sample_s"]) == note["windows"]
    assert note["gave_up"] is None


def test_beside_a_working_py_spy_each_in_process_sampler_keeps_its_share(ran) -> None:
    """py-spy sampled every process: none was told it gave up, so each in-process sampler
    kept its budget share (its windows say so) and left the fixed rate to py-spy."""
    from hawkwatch.config import ProfilerConfig
    from hawkwatch.model.profile import IN_PROCESS
    from hawkwatch.runenv import IN_PROCESS_SHARE

    runner, result = ran
    assert "could not sample" not in result.stderr
    share = ProfilerConfig().budget * IN_PROCESS_SHARE
    for session in list_sessions(runner.root):
        noted = session.metadata["profiler"]
        assert "outside_stopped" not in noted, session.metadata
        assert (noted["outside"], noted["rate_hz"]) == ("py-spy", 0.0)
        assert noted["budget"] == pytest.approx(share)
        windows = read_profiles(session.path, session.records().records).value
        inside = [w for w in windows if w.sampler == IN_PROCESS]
        assert all(w.budget == pytest.approx(share) for w in inside)
    (parent,) = [s for s in list_sessions(runner.root) if s.metadata.get("supervised")]
    report = runner.hawkwatch("report", str(parent.path), "--json")
    assert json.loads(report.stdout)["cpu"]["outside_note"] is None


def test_the_episode_tree_comes_from_py_spy(ran) -> None:
    runner, _ = ran
    (parent,) = [s for s in list_sessions(runner.root) if s.metadata.get("supervised")]
    records = parent.records().records
    episodes = read_highload(parent.path, records, is_hawkwatch=True).value
    assert episodes, "a 3.5 s burn over a 1 s minimum is an episode"
    longest = max(episodes, key=lambda e: e.lasting_s)
    assert longest.sampler == PY_SPY
    tree_text = json.dumps([r.frame.text for r in longest.roots if not isinstance(r.frame, int)])
    assert "app.py" in tree_text
    assert not any(r.frame.func.startswith("thread ") for r in longest.roots)


PRINTS_PID_AND_WAITS = (
    "import os, time\nprint(os.getpid(), flush=True)\nwhile True: time.sleep(0.01)\n"
)


def test_py_spy_dies_with_a_sigkilled_supervisor(tmp_path: Path) -> None:
    """A real py-spy, made to sample for an hour, must not outlive a SIGKILLed supervisor: it
    would go on pausing the program at every sample with no one left to stop it."""
    import os
    import shutil
    import signal
    import subprocess

    import psutil

    from tests.builders import wait_for

    real = find_pyspy()
    wrapper = tmp_path / "bin" / "py-spy"
    wrapper.parent.mkdir()
    wrapper.write_text(
        f"#!{sys.executable}\nimport os, sys\n"
        "args = sys.argv[1:]\nargs[args.index('--duration') + 1] = '3600'\n"
        f"os.execv({real!r}, [{real!r}, *args])\n"
    )
    wrapper.chmod(0o755)
    runner = Runner(home=tmp_path / "home", cwd=tmp_path)
    env = runner.env(PATH=f"{wrapper.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    hawkwatch = shutil.which("hawkwatch", path=str(Path(sys.executable).parent))
    assert hawkwatch is not None
    supervisor = subprocess.Popen(
        [hawkwatch, "run", "--profile", "-c", "profiler.engine=py-spy", "--",
         sys.executable, "-c", PRINTS_PID_AND_WAITS],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert supervisor.stdout is not None
    program = int(supervisor.stdout.readline())
    try:
        # a py-spy started before the interpreter was up fails and is started again: wait
        # for one that found the program's interpreter (it says so in its log) and samples it
        spies: list[psutil.Process] = []

        def sampling() -> bool:
            with contextlib.suppress(psutil.Error, OSError, ValueError):
                for child in psutil.Process(supervisor.pid).children():
                    command = child.cmdline()
                    if child.name() != "py-spy" or "3600" not in command:
                        continue
                    log = Path(command[command.index("--output") + 1]).with_suffix(".log")
                    if "Sampling process" in log.read_text() and child.is_running():
                        spies[:] = [child]
            return bool(spies)

        assert wait_for(sampling, timeout_s=60), "the supervisor never ran py-spy on the program"
        (spy,) = spies
        os.kill(supervisor.pid, signal.SIGKILL)
        supervisor.wait()

        def gone() -> bool:
            try:
                return spy.status() == psutil.STATUS_ZOMBIE
            except psutil.NoSuchProcess:
                return True

        assert wait_for(gone, timeout_s=60), "py-spy outlived the supervisor"
        assert psutil.pid_exists(program)  # the program itself goes on
    finally:
        supervisor.stdout.close()
        with contextlib.suppress(ProcessLookupError):
            os.kill(program, signal.SIGKILL)
