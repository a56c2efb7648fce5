"""``hawkwatch run`` when hawkwatch fails: the program's exit code and output never change."""

from __future__ import annotations

import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import HAWKWATCH_SCRIPT, Runner
from tests.smallfs import fill, small_filesystem

# 60k events: on a full disk they overflow the 150 KB buffer several times over.
EVENTS_APP = """
import sys, hawkwatch
print("hello", flush=True)
for i in range(60_000):
    hawkwatch.event("e", extra=str(i))
print("bye")
sys.exit(3)
"""


def hawkwatch_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "hawkwatch" in line]


@pytest.mark.parametrize("free_kb", [0, 40, 100, 2048])
def test_a_full_disk_never_changes_the_program(
    runner: Runner, tmp_path: Path, free_kb: int
) -> None:
    script = runner.script("app.py", EVENTS_APP)
    with small_filesystem(tmp_path / "fs", 4096) as fs:
        (fs / "home").mkdir()
        fill(fs, free_kb * 1024)
        result = subprocess.run(
            [str(HAWKWATCH_SCRIPT), "run", "--", sys.executable, str(script)],
            cwd=runner.cwd,
            env=runner.env(HAWKWATCH_HOME=str(fs / "home")),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 3, result.stderr[-2000:]  # not 135 (SIGBUS), not 1
        assert result.stdout == "hello\nbye\n"
        assert "Traceback" not in result.stderr
        lines = hawkwatch_lines(result.stderr)
        assert 1 <= len(lines) <= 4, lines  # a few lines, never one per event
        assert any("No space left on device" in line or "session" in line for line in lines)


def test_the_exit_status_stands_when_the_exit_record_cannot_be_written(runner: Runner) -> None:
    # The program replaces its records.mtlog by a directory: the supervisor's exit record fails.
    script = runner.script(
        "app.py",
        "import os, sys, hawkwatch\n"
        "from hawkwatch.agent.api import current_agent\n"
        "path = current_agent().session.path\n"
        "hawkwatch.stop()\n"
        "os.remove(path / 'records.mtlog'); os.mkdir(path / 'records.mtlog')\n"
        "print('done')\n"
        "sys.exit(5)\n",
    )
    result = runner.hawkwatch("run", "--", sys.executable, str(script))
    assert result.returncode == 5, result.stderr
    assert result.stdout == "done\n"
    assert "the exit status was not recorded" in result.stderr
    assert "records.mtlog: " in result.stderr
    assert "Traceback" not in result.stderr


def test_a_signal_death_is_passed_on_when_the_exit_record_fails(runner: Runner) -> None:
    script = runner.script(
        "app.py",
        "import os, signal, hawkwatch\n"
        "from hawkwatch.agent.api import current_agent\n"
        "path = current_agent().session.path\n"
        "hawkwatch.stop()\n"
        "os.remove(path / 'records.mtlog'); os.mkdir(path / 'records.mtlog')\n"
        "os.kill(os.getpid(), signal.SIGTERM)\n",
    )
    result = subprocess.run(
        ["sh", "-c", f"{shlex.quote(str(HAWKWATCH_SCRIPT))} run -- {sys.executable} {script}"],
        cwd=runner.cwd,
        env=runner.env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 128 + signal.SIGTERM, result.stderr


def test_with_stderr_closed_nothing_reaches_the_programs_stdout(runner: Runner) -> None:
    script = runner.script("app.py", "print('only this')\n")
    command = f"{shlex.quote(str(HAWKWATCH_SCRIPT))} run -- {sys.executable} {script} 2>&-"
    result = subprocess.run(
        ["sh", "-c", command],
        cwd=runner.cwd,
        env=runner.env(),
        stdout=subprocess.PIPE,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0
    assert result.stdout == "only this\n"


def test_when_the_agent_gives_the_cause_run_does_not_guess_another(runner: Runner) -> None:
    blocker = runner.cwd / "not-a-folder"
    blocker.write_text("a file where the hawkwatch home should be")
    script = runner.script("app.py", "print('ran')\n")
    result = runner.hawkwatch(
        "run", "--", sys.executable, str(script), HAWKWATCH_HOME=str(blocker / "home")
    )
    assert result.returncode == 0
    assert result.stdout == "ran\n"
    assert "the agent did not start" in result.stderr
    assert "is it a Python program" not in result.stderr
    assert "nothing was recorded" in result.stderr


def test_a_read_only_home_never_changes_the_program(runner: Runner, tmp_path: Path) -> None:
    script = runner.script("app.py", EVENTS_APP)
    with small_filesystem(tmp_path / "fs", 1024) as fs:
        (fs / "home").mkdir()
        remount = subprocess.run(
            ["mount", "-o", "remount,ro", str(fs)], capture_output=True, text=True, check=False
        )
        if remount.returncode != 0:
            pytest.skip(f"cannot remount read-only: {remount.stderr.strip()}")
        result = subprocess.run(
            [str(HAWKWATCH_SCRIPT), "run", "--", sys.executable, str(script)],
            cwd=runner.cwd,
            env=runner.env(HAWKWATCH_HOME=str(fs / "home")),
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert result.returncode == 3
    assert result.stdout == "hello\nbye\n"
    lines = hawkwatch_lines(result.stderr)
    assert len(lines) == 2, lines
    assert "Read-only file system" in lines[0]
    assert lines[1] == (
        "hawkwatch: nothing was recorded (the agent did not start; see the warning above)"
    )
