"""``hawkwatch run``: start a program with the agent injected, supervise it, record its end.

The program runs as a child process whose ``PYTHONPATH`` starts with the agent's bootstrap
folder, so the agent starts before any user code (the way ``ddtrace-run`` works) in it and in
every Python process it starts. The supervisor forwards signals, waits, and then writes the real
exit status — including death by a signal, which the process itself can never record — into the
child's session as an ``exit-state`` record. Its own exit status is the child's.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Final

from hawkwatch.config import load_config, option_specs
from hawkwatch.errors import ConfigError, HawkwatchError
from hawkwatch.model import collections as c
from hawkwatch.runenv import BOOTSTRAP_DIR, PYTHON_VAR, SESSION_FILE_VAR, SUPERVISED_VAR
from hawkwatch.store import RecordStore

FORWARDED_SIGNALS: Final = tuple(
    getattr(signal, name)
    for name in ("SIGTERM", "SIGHUP", "SIGINT", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGWINCH")
    if hasattr(signal, name)
)


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """How the supervised program ended, and where its session is."""

    returncode: int  # negative: killed by that signal (subprocess's convention)
    session_path: Path | None

    @property
    def exit_code(self) -> int | None:
        return self.returncode if self.returncode >= 0 else None

    @property
    def signal(self) -> int | None:
        return -self.returncode if self.returncode < 0 else None


def build_command(command: list[str], module: str | None) -> list[str]:
    """The argv to start: ``-m module`` and ``script.py`` run under this Python."""
    if module:
        return [sys.executable, "-m", module, *command]
    if not command:
        raise ConfigError("nothing to run; use 'hawkwatch run -- python app.py' or '-m module'")
    first = command[0]
    if first.endswith(".py") and not os.access(first, os.X_OK):
        return [sys.executable, *command]
    return list(command)


def build_environment(
    base: Mapping[str, str], options: Mapping[str, str], session_file: Path
) -> dict[str, str]:
    """The child's environment: bootstrap on PYTHONPATH, options as HAWKWATCH_* variables."""
    env = dict(base)
    existing = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(BOOTSTRAP_DIR) + (os.pathsep + existing if existing else "")
    specs = {spec.name: spec for spec in option_specs()}
    by_flat = {spec.flat_name: spec for spec in specs.values()}
    for name, value in options.items():
        spec = specs.get(name) or by_flat[name]
        env[spec.env_var] = value
    env[SUPERVISED_VAR] = "1"
    env[PYTHON_VAR] = sys.executable
    env[SESSION_FILE_VAR] = str(session_file)
    return env


def run_program(command: list[str], module: str | None, options: Mapping[str, str]) -> RunOutcome:
    """Check the options strictly, run the program to its end, record how it ended."""
    load_config(dict(options), strict=True)  # a typo is a clear error before anything starts
    argv = build_command(command, module)
    with tempfile.TemporaryDirectory(prefix="hawkwatch-run-") as scratch:
        session_file = Path(scratch) / "session"
        env = build_environment(os.environ, options, session_file)
        returncode = _supervise(argv, env)
        try:
            announced = session_file.read_text(encoding="utf-8").strip()
        except OSError:
            announced = ""
    outcome = RunOutcome(returncode, Path(announced) if announced else None)
    if outcome.session_path is not None:
        record_exit(outcome)
    return outcome


def record_exit(outcome: RunOutcome) -> None:
    """Append the supervisor's ``exit-state`` to the (now dead) program's session."""
    assert outcome.session_path is not None
    number = outcome.signal
    value = {
        "clean": outcome.returncode >= 0,
        "exit_code": outcome.exit_code,
        "signal": number,
        "signal_name": signal.Signals(number).name if number in _SIGNAL_NUMBERS else None,
        "source": "supervisor",
    }
    store = RecordStore(outcome.session_path)  # the writer is gone: this also recovers its buffer
    try:
        store.store(c.EXIT_STATE, f"{time.time():.6f}", json.dumps(value, separators=(",", ":")))
    finally:
        store.close()
    # Issue 15: turn a faulthandler dump into a crash record and classify the exit, now that
    # the status is known (once: a later agent start skips a session done here).
    from hawkwatch.agent.crash_recovery import finish_session

    finish_session(outcome.session_path, outcome.returncode, source="supervisor")


_SIGNAL_NUMBERS: Final = frozenset(int(s) for s in signal.Signals)


def exit_like(outcome: RunOutcome) -> int:
    """Leave as the child did: same exit code, or killed by the same signal."""
    number = outcome.signal
    if number is None:
        return outcome.returncode
    if number in _SIGNAL_NUMBERS and number != signal.SIGKILL:
        signal.signal(number, signal.SIG_DFL)
    sys.stdout.flush()
    sys.stderr.flush()
    os.kill(os.getpid(), number)
    return 128 + number  # reached only if the signal does not end this process


def _supervise(argv: list[str], env: dict[str, str]) -> int:
    try:
        child = subprocess.Popen(argv, env=env)
    except OSError as exc:
        raise HawkwatchError(f"cannot start {argv[0]!r}: {exc.strerror}") from exc

    def forward(signum: int, _frame: FrameType | None) -> None:
        if signum == signal.SIGINT and _terminal_sends_sigint_to_child():
            return  # Ctrl-C already reached the child through the terminal
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signum)

    previous = {number: signal.signal(number, forward) for number in FORWARDED_SIGNALS}
    try:
        while True:
            try:
                return child.wait()
            except KeyboardInterrupt:
                continue
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _terminal_sends_sigint_to_child() -> bool:
    try:
        return os.isatty(0) and os.tcgetpgrp(0) == os.getpgrp()
    except OSError:
        return False
