"""``hawkwatch run``: start a program with the agent injected, supervise it, record its end.

The program runs as a child process whose ``PYTHONPATH`` starts with the agent's bootstrap
folder, so the agent starts before any user code (the way ``ddtrace-run`` works) in it and in
every Python process it starts. The supervisor forwards signals, waits, and then writes the real
exit status — including death by a signal, which the process itself can never record — into the
child's session as an ``exit-state`` record. Its own exit status is the child's.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

from hawkwatch.errors import ConfigError, HawkwatchError
from hawkwatch.runenv import (
    BOOTSTRAP_DIR,
    MAIN_STARTED,
    PYTHON_VAR,
    SESSION_FILE_VAR,
    SUPERVISED_VAR,
    WATCHING_MAIN,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~6 ms)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path
    from types import FrameType

# The supervisor is on every run's start path: what it needs before the program starts is the
# standard library's process handling only. The config module (for a strict check, when there
# is anything to check) and the store (for the exit-state, imported while the program runs)
# come later.

FORWARDED_SIGNALS = tuple(
    getattr(signal, name)
    for name in ("SIGTERM", "SIGHUP", "SIGINT", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGWINCH")
    if hasattr(signal, name)
)


class RunOutcome:
    """How the supervised program ended, and where its session is."""

    __slots__ = ("discarded", "returncode", "session_path")

    def __init__(self, returncode: int, session_path: Path | None, discarded: bool = False) -> None:
        self.returncode = returncode  # negative: killed by that signal (subprocess's convention)
        self.session_path = session_path
        self.discarded = discarded  # the program never started: its empty session was removed

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
    base: Mapping[str, str], options: Mapping[str, str], session_file: str | os.PathLike[str]
) -> dict[str, str]:
    """The child's environment: bootstrap on PYTHONPATH, options as HAWKWATCH_* variables."""
    env = dict(base)
    existing = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(BOOTSTRAP_DIR) + (os.pathsep + existing if existing else "")
    if options:
        from hawkwatch.config import option_specs

        specs = {spec.name: spec for spec in option_specs()}
        by_flat = {spec.flat_name: spec for spec in specs.values()}
        for name, value in options.items():
            spec = specs.get(name) or by_flat[name]
            env[spec.env_var] = value
    env[SUPERVISED_VAR] = "1"
    env[PYTHON_VAR] = sys.executable
    env[SESSION_FILE_VAR] = os.fspath(session_file)
    return env


def run_program(command: list[str], module: str | None, options: Mapping[str, str]) -> RunOutcome:
    """Check the options strictly, run the program to its end, record how it ended."""
    if has_options_to_check(options, os.environ, os.getcwd()):
        from hawkwatch.config import load_config

        load_config(dict(options), strict=True)  # a typo is a clear error before anything starts
    argv = build_command(command, module)
    session_file = _announcement_file()
    try:
        env = build_environment(os.environ, options, session_file)
        returncode = _supervise(argv, env)
        try:
            with open(session_file, encoding="utf-8") as f:
                announced = f.read().splitlines()
        except OSError:
            announced = []
    finally:
        with contextlib.suppress(OSError):
            os.unlink(session_file)
    if not announced or not announced[0].strip():
        return RunOutcome(returncode, None)
    from pathlib import Path

    outcome = RunOutcome(returncode, Path(announced[0].strip()))
    if never_started(returncode, announced[1:]):
        return discard_session(outcome)
    record_exit(outcome)
    return outcome


def has_options_to_check(options: Mapping[str, str], environ: Mapping[str, str], cwd: str) -> bool:
    """Whether any option is set at all: ``-o``, ``HAWKWATCH_*`` or a file the agent would read.

    Only then is the config module imported for the strict check (the usual run has none). A
    ``hawkwatch.toml`` of any kind (even a folder) counts, so the check can report it; a
    ``pyproject.toml`` counts when it mentions hawkwatch at all.
    """
    if options or any(name.startswith("HAWKWATCH_") for name in environ):
        return True
    folder = os.path.abspath(cwd)
    while True:
        if os.path.lexists(os.path.join(folder, "hawkwatch.toml")):
            return True
        project = os.path.join(folder, "pyproject.toml")
        if os.path.isfile(project):
            try:
                with open(project, "rb") as f:
                    if b"hawkwatch" in f.read():
                        return True
            except OSError:
                return True  # let the config module say what is wrong with it
        parent = os.path.dirname(folder)
        if parent == folder:
            return False
        folder = parent


def never_started(returncode: int, notes: list[str]) -> bool:
    """The program failed before its own code ran (no such script or module).

    Known only when the bootstrap could watch for the main module's start; a program killed by
    a signal or that ended cleanly is never taken for one that did not start.
    """
    return returncode > 0 and WATCHING_MAIN in notes and MAIN_STARTED not in notes


def discard_session(outcome: RunOutcome) -> RunOutcome:
    """Remove the empty session of a program that never started, so that it does not count
    towards retention and push the sessions of real runs out."""
    import shutil

    assert outcome.session_path is not None
    try:
        shutil.rmtree(outcome.session_path)
    except OSError:
        record_exit(outcome)  # cannot remove it: at least say how it ended
        return outcome
    return RunOutcome(outcome.returncode, None, discarded=True)


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
    import json

    from hawkwatch.model import collections as c
    from hawkwatch.store import RecordStore

    store = RecordStore(outcome.session_path)  # the writer is gone: this also recovers its buffer
    try:
        store.store(c.EXIT_STATE, f"{time.time():.6f}", json.dumps(value, separators=(",", ":")))
    finally:
        store.close()


_SIGNAL_NUMBERS = frozenset(int(s) for s in signal.Signals)


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


def _announcement_file() -> str:
    """A new private file for the program to announce its session in (no tempfile import)."""
    folder = os.environ.get("TMPDIR") or "/tmp"
    for _ in range(100):
        path = os.path.join(folder, f"hawkwatch-run-{os.getpid()}-{os.urandom(6).hex()}")
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            continue
        except OSError as exc:
            raise HawkwatchError(f"{folder}: cannot create a file for the run: {exc}") from exc
        return path
    raise HawkwatchError(f"{folder}: cannot create a file for the run")


def _supervise(argv: list[str], env: dict[str, str]) -> int:
    try:
        child = subprocess.Popen(argv, env=env)
    except OSError as exc:
        raise HawkwatchError(f"cannot start {argv[0]!r}: {exc.strerror}") from exc
    with contextlib.suppress(Exception):
        import hawkwatch.store  # noqa: F401  (for the exit-state, while the program starts up)

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
