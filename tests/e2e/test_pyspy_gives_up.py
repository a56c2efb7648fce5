"""End to end: ``hawkwatch run --profile`` where py-spy cannot sample the program.

py-spy fails for real: either a script in its place that fails the way py-spy does at once
(its permission error), or the real py-spy run as ``nobody`` on root's program, which the kernel
refuses as it does in a container without ptrace rights. The supervisor gives up and tells the
program; from then on the in-process sampler takes the whole budget or the fixed
``profiler.rate_hz``, in the program and in the program it execs; the session says why.

Assertions are on what was recorded: the budget and rate fields, and sample counts against
the ceiling the budget share would have allowed for the windows' recorded durations.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from hawkwatch.agent.plugins.profiler import HANDOFF_ALLOWANCE_S
from hawkwatch.config import ProfilerConfig
from hawkwatch.formats.cpu_profile import read_profiles
from hawkwatch.model.profile import IN_PROCESS, Profile
from hawkwatch.pyspy import find_pyspy
from hawkwatch.runenv import IN_PROCESS_SHARE
from hawkwatch.store import Session
from tests.e2e.conftest import Runner

pytestmark = pytest.mark.slow

WAITS_FOR_THE_SWITCH = """
import os, sys, time
from hawkwatch.agent import current_agent

def switched():
    agent = current_agent()
    return agent is not None and "outside_stopped" in agent.session.metadata.get("profiler", {})

# the supervisor gives up after py-spy's third failure; the agent looks once a second
deadline = time.monotonic() + 120
while not switched():
    if time.monotonic() > deadline:
        sys.exit("the in-process sampler never heard that py-spy gave up")
    time.sleep(0.02)

def burn_after_the_switch(calls):
    for _ in range(calls):
        sum(i * i for i in range(2000))

burn_after_the_switch(CALLS)
print("parent done", flush=True)
if len(sys.argv) > 1:
    os.execv(sys.executable, [sys.executable, sys.argv[1]])
"""

EXECED = """
def execd_burn(calls):
    for _ in range(calls):
        sum(i * i for i in range(2000))

execd_burn(CALLS)
print("execd done")
"""

FAILS_AS_PY_SPY_DOES = """#!{python}
import sys
sys.stderr.write('''Error: Failed to get process executable name. Check that the process is running.

Caused by:
    0: Permission denied (os error 13)

Stack backtrace:
   0: <E as anyhow::context::ext::StdError>::ext_context
''')
sys.exit(1)
"""
REASON = (
    "Error: Failed to get process executable name. Check that the process is running. "
    "(Permission denied (os error 13))"
)
SHARE_CEILING_HZ = 1 / (HANDOFF_ALLOWANCE_S / (ProfilerConfig().budget * IN_PROCESS_SHARE))
"""The most the budget share could pay for: every sample is charged at least the hand-over
allowance, so its mean wait is at least that over the share (4 Hz at the defaults)."""


def _py_spy_in(folder: Path, text: str) -> dict[str, str]:
    folder.mkdir()
    executable = folder / "py-spy"
    executable.write_text(text)
    executable.chmod(0o755)
    return {"PATH": f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"}


def _session(runner: Runner, script: str) -> Session:
    for session in runner.sessions():
        if Path((session.metadata.get("argv") or [""])[0]).name == script:
            return session
    raise AssertionError(f"no session of {script}: {[s.metadata for s in runner.sessions()]}")


def _after_the_switch(session: Session) -> list[Profile]:
    """The in-process windows that started once the program's sampler had switched."""
    switched = session.metadata["profiler"]["outside_stopped"]["time"]
    windows = read_profiles(session.path, session.records().records).value
    assert windows and all(w.sampler == IN_PROCESS for w in windows)
    return [w for w in windows if w.start_time >= switched]


def test_a_py_spy_that_fails_at_once_leaves_the_program_a_fixed_rate_profile(
    tmp_path: Path,
) -> None:
    runner = Runner(home=tmp_path / "home", cwd=tmp_path)
    app = runner.script("app.py", WAITS_FOR_THE_SWITCH.replace("CALLS", "40000"))
    execd = runner.script("execd.py", EXECED.replace("CALLS", "40000"))
    path = _py_spy_in(tmp_path / "bin", FAILS_AS_PY_SPY_DOES.format(python=sys.executable))
    done = runner.hawkwatch(
        "run", "--profile", "--children",  # the exec'd program records too
        "-c", "profiler.engine=py-spy", "-c", "profiler.rate_hz=100",
        "--", sys.executable, str(app), str(execd),
        timeout=240, **path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == "parent done\nexecd done\n"
    assert (
        f"hawkwatch: py-spy could not sample the program ({REASON}); its profile is the "
        "in-process sampler's, at profiler.rate_hz"
    ) in done.stderr

    parent = _session(runner, "app.py")
    outside = parent.metadata["profiler_outside"]
    assert (outside["windows"], outside["gave_up"]) == (0, REASON)
    for session in (parent, _session(runner, "execd.py")):
        noted = session.metadata["profiler"]
        assert noted["outside"] == "py-spy"
        assert noted["outside_stopped"]["reason"] == REASON
        assert noted["rate_hz"] == 100  # py-spy's, while it was to sample; now this sampler's
        windows = _after_the_switch(session)
        assert windows, f"no window after the switch in {session.path}"
        assert all(w.budget == 0.0 for w in windows)  # a fixed rate set them, not a budget
        samples = sum(w.samples for w in windows)
        duration = sum(w.duration_s for w in windows)
        assert samples > 3 * SHARE_CEILING_HZ * duration, (samples, duration)

    report = runner.hawkwatch("report", str(parent.path), "--json")
    assert report.returncode == 0, report.stderr
    note = json.loads(report.stdout)["cpu"]["outside_note"]
    assert note == (
        f"py-spy could not sample this process ({REASON}); the profile is the in-process "
        "sampler's, at the fixed profiler.rate_hz (100 Hz)"
    )
    console = runner.hawkwatch("report", str(parent.path), COLUMNS="300")
    assert note in console.stdout
    exported = runner.hawkwatch("profile", str(parent.path), "--format", "collapsed")
    assert exported.returncode == 0, exported.stderr
    assert note in exported.stderr and "burn_after_the_switch" in exported.stdout


@pytest.mark.skipif(
    find_pyspy() is None or os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs py-spy, root and setpriv (py-spy is run as nobody)",
)
def test_the_real_py_spy_refused_by_the_kernel_leaves_the_whole_budget(tmp_path: Path) -> None:
    runner = Runner(home=tmp_path / "home", cwd=tmp_path)
    app = runner.script("app.py", WAITS_FOR_THE_SWITCH.replace("CALLS", "20000"))
    path = _py_spy_in(
        tmp_path / "bin",
        "#!/bin/sh\nexec setpriv --reuid=65534 --regid=65534 --clear-groups "
        f'{find_pyspy()} "$@"\n',
    )
    done = runner.hawkwatch(
        "run", "--profile", "-c", "profiler.engine=py-spy",
        "--", sys.executable, str(app), timeout=240, **path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    session = runner.only_session()
    reason = session.metadata["profiler_outside"]["gave_up"]
    assert reason.startswith("Permission Denied"), session.metadata["profiler_outside"]
    noted = session.metadata["profiler"]
    assert noted["outside_stopped"]["reason"] == reason
    full = ProfilerConfig().budget
    assert (noted["budget"], noted["rate_hz"]) == (full, 0.0)
    windows = _after_the_switch(session)
    assert windows and all(w.budget == full for w in windows)  # not the share (0.001)
    every = read_profiles(session.path, session.records().records).value
    switched = noted["outside_stopped"]["time"]
    before = [w for w in every if w.start_time < switched]
    assert all(w.budget == pytest.approx(full * IN_PROCESS_SHARE) for w in before)
