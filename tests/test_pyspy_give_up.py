"""The recorder gives up on a py-spy that cannot sample, and says so in the stopped file.

Real processes throughout: a sleeping Python program, and as py-spy either the real one run
without the rights to read the program (as ``nobody``), or a script that fails as py-spy does.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hawkwatch.pyspy import (
    FAILURES_TO_GIVE_UP,
    FAILURES_TO_GIVE_UP_LATER,
    Recorder,
    RecorderOptions,
    error_line,
    find_pyspy,
)
from tests.builders import wait_for

DENIED = (
    "Permission Denied: Try running again with elevated permissions by going "
    "'sudo env \"PATH=$PATH\" !!'"
)
"""What py-spy 0.4 prints when it may not read the program (another user's process, Yama)."""

BACKTRACE = b"""Error: Failed to get process executable name. Check that the process is running.

Caused by:
    0: Permission denied (os error 13)
    1: Permission denied (os error 13)

Stack backtrace:
   0: <E as anyhow::context::ext::StdError>::ext_context
   1: py_spy::python_process_info::PythonProcessInfo::new
"""
"""What py-spy 0.4 prints when it lacks CAP_SYS_PTRACE beside a target that has it."""


@pytest.fixture
def program() -> Iterator[int]:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        yield sleeper.pid
    finally:
        os.kill(sleeper.pid, signal.SIGKILL)
        sleeper.wait()


def fake_py_spy(folder: Path, body: str) -> str:
    path = folder / "py-spy"
    path.write_text(f"#!{sys.executable}\nimport os, sys\n{body}")
    path.chmod(0o755)
    return str(path)


def recorded(pid: int, executable: str, stopped: Path, window_s: float = 1.0) -> Recorder:
    recorder = Recorder(
        pid, RecorderOptions(window_s=window_s, executable=executable, stopped_file=str(stopped))
    )
    recorder.start()
    assert wait_for(lambda: not recorder._thread.is_alive(), timeout_s=120)
    recorder.stop()
    return recorder


def test_py_spy_errors_come_as_one_line_without_the_backtrace() -> None:
    assert error_line(DENIED.encode() + b"\n") == DENIED
    assert error_line(BACKTRACE) == (
        "Error: Failed to get process executable name. Check that the process is running. "
        "(Permission denied (os error 13))"
    )
    assert error_line(b"\n  \n") == ""


def test_a_py_spy_that_exits_at_once_is_given_up_and_the_program_told(
    tmp_path: Path, program: int
) -> None:
    executable = fake_py_spy(tmp_path, f"sys.stderr.write({DENIED!r} + '\\n')\nsys.exit(1)\n")
    stopped = tmp_path / "outside-stopped"
    recorder = recorded(program, executable, stopped)
    assert recorder.windows == []
    assert recorder.errors == [DENIED] * FAILURES_TO_GIVE_UP
    assert recorder.gave_up == DENIED
    assert stopped.read_text() == DENIED
    assert not Path(f"{stopped}.tmp").exists()


def test_a_py_spy_that_cannot_start_at_all_is_given_up(tmp_path: Path, program: int) -> None:
    stopped = tmp_path / "outside-stopped"
    recorder = recorded(program, str(tmp_path / "no-such-py-spy"), stopped)
    assert recorder.gave_up is not None and recorder.gave_up.startswith("FileNotFoundError")
    assert stopped.read_text() == recorder.gave_up


@pytest.mark.skipif(find_pyspy() is None, reason="py-spy is in the test extra")
def test_a_py_spy_that_dies_after_sampling_is_given_up_after_more_failures(
    tmp_path: Path, program: int
) -> None:
    """The first run is the real py-spy (one window); every later one dies as if killed."""
    count = tmp_path / "runs"
    executable = fake_py_spy(
        tmp_path,
        f"count = {str(count)!r}\n"
        "runs = int(open(count).read()) if os.path.exists(count) else 0\n"
        "open(count, 'w').write(str(runs + 1))\n"
        f"if runs == 0:\n    os.execv({find_pyspy()!r}, [{find_pyspy()!r}, *sys.argv[1:]])\n"
        "os.kill(os.getpid(), 9)\n",
    )
    stopped = tmp_path / "outside-stopped"
    recorder = recorded(program, executable, stopped)
    assert len(recorder.windows) == 1, recorder.errors
    assert recorder.errors == ["py-spy exit -9"] * FAILURES_TO_GIVE_UP_LATER
    assert stopped.read_text() == "py-spy exit -9"


@pytest.mark.skipif(
    find_pyspy() is None or os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs py-spy, root and setpriv (py-spy is run as nobody)",
)
def test_the_real_py_spy_without_the_right_to_read_the_program_is_given_up(
    tmp_path: Path, program: int
) -> None:
    """py-spy run as ``nobody`` on root's program: the kernel refuses it, as in a container
    without ptrace rights."""
    wrapper = tmp_path / "py-spy"
    wrapper.write_text(
        "#!/bin/sh\nexec setpriv --reuid=65534 --regid=65534 --clear-groups "
        f"{find_pyspy()} \"$@\"\n"
    )
    wrapper.chmod(0o755)
    stopped = tmp_path / "outside-stopped"
    recorder = recorded(program, str(wrapper), stopped)
    assert recorder.windows == []
    assert recorder.gave_up is not None and "Permission Denied" in recorder.gave_up
    assert stopped.read_text() == recorder.gave_up


def test_a_stopped_recorder_does_not_say_py_spy_gave_up(tmp_path: Path, program: int) -> None:
    """Stopping (the program ended) is not giving up: no file, no reason."""
    executable = fake_py_spy(tmp_path, "import time\ntime.sleep(600)\n")
    stopped = tmp_path / "outside-stopped"
    recorder = Recorder(
        program, RecorderOptions(window_s=1.0, executable=executable, stopped_file=str(stopped))
    )
    recorder.start()
    recorder.stop()
    assert recorder.gave_up is None and not stopped.exists()
