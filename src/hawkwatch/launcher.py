"""``hawkwatch run``: start a program with the agent injected, supervise it, record its end.

The program runs as a child process whose ``PYTHONPATH`` starts with the agent's bootstrap
folder, so the agent starts before any user code (the way ``ddtrace-run`` works) in it and in
every Python process it starts. The supervisor forwards signals, waits, and then writes the real
exit status — including death by a signal, which the process itself can never record — into the
child's session as an ``exit-state`` record. Its own exit status is the child's.

Start-up is what every supervised run pays, so before the child starts the supervisor imports
only what checking the options and spawning need (``os.posix_spawn``, not ``subprocess`` and
its ``threading``; ``os.path``, not ``pathlib``; ``_signal``, not ``signal`` and its enums;
no ``contextlib``); the store loads while the program runs, on
the other core, together with classifying how earlier sessions ended (the agent under
``hawkwatch run`` leaves that to us). After the child ends, only writing its exit remains: a
normal end with the plain records (``agent.supervised_exit``), anything else with the typed
model (``agent.crash_recovery``).
"""

from __future__ import annotations

import os
import sys
import time

from hawkwatch.config_sources import ENV_PREFIX, config_files
from hawkwatch.errors import ConfigError, HawkwatchError
from hawkwatch.runenv import (
    BOOTSTRAP_DIR,
    CHILDREN_VAR,
    IN_PROCESS_SHARE,
    MAIN_STARTED,
    OUTSIDE_SAMPLER_VAR,
    OUTSIDE_STOPPED_VAR,
    PTRACER_VAR,
    PYTHON_VAR,
    SESSION_FILE_VAR,
    SUPERVISED_VAR,
    TIDY_VAR,
    WATCHING_MAIN,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hawkwatch run's start)
if TYPE_CHECKING:
    import signal
    from collections.abc import Callable, Mapping
    from pathlib import Path
    from types import FrameType
    from typing import Any, Final

    from hawkwatch.config import Config, LoadedConfig, ProfilerConfig
else:
    # signal's C core: the same calls, with plain ints for signals and SIG_DFL; ``signal``
    # itself builds three enums at import (~3 M instructions before the program could start)
    import _signal as signal

ENGINES: Final = ("auto", "py-spy", "in-process")

FORWARDED_SIGNALS: Final = tuple(
    getattr(signal, name)
    for name in ("SIGTERM", "SIGHUP", "SIGINT", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGWINCH")
    if hasattr(signal, name)
)


class RunOutcome:
    """How the supervised program ended, and where its session is (a plain class: the
    supervisor does not import ``dataclasses``, ~4 ms with ``inspect``)."""

    __slots__ = ("agent_failure", "discarded", "problem", "returncode", "session_path")

    def __init__(
        self,
        returncode: int,
        session_path: Path | None,
        *,
        agent_failure: str | None = None,
        discarded: bool = False,
        problem: str | None = None,
    ) -> None:
        self.returncode = returncode  # negative: killed by that signal (subprocess's convention)
        self.session_path = session_path
        self.agent_failure = agent_failure
        """Set when the program's agent said why it did not start (its warning is on stderr)."""
        self.discarded = discarded
        """The program never started (no such script or module): its empty session was removed."""
        self.problem = problem
        """What went wrong in hawkwatch itself (the exit record not written); never the
        program's."""

    def replace(self, **changes: Any) -> RunOutcome:
        values = {name: getattr(self, name) for name in self.__slots__} | changes
        return RunOutcome(values.pop("returncode"), values.pop("session_path"), **values)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RunOutcome):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"RunOutcome({inner})"

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
    base: Mapping[str, str],
    options: Mapping[str, str],
    session_file: str | os.PathLike[str],
    *,
    children: bool = False,
) -> dict[str, str]:
    """The child's environment: bootstrap on PYTHONPATH, options as HAWKWATCH_* variables;
    ``children``: Python children of the program start agents of their own too."""
    env = dict(base)
    existing = env.get("PYTHONPATH")
    env["PYTHONPATH"] = BOOTSTRAP_DIR + (os.pathsep + existing if existing else "")
    if options:
        from hawkwatch.config import option_specs

        specs = {spec.name: spec for spec in option_specs()}
        by_flat = {spec.flat_name: spec for spec in specs.values()}
        for name, value in options.items():
            spec = specs.get(name) or by_flat[name]
            env[spec.env_var] = value
    env[SUPERVISED_VAR] = "1"
    env[TIDY_VAR] = "1"  # old sessions: removed by ``tidy`` after the program ends
    env[PYTHON_VAR] = sys.executable
    env[SESSION_FILE_VAR] = os.fspath(session_file)
    if children:
        env[CHILDREN_VAR] = "1"
    else:
        env.pop(CHILDREN_VAR, None)
    return env


def run_program(
    command: list[str],
    module: str | None,
    options: Mapping[str, str],
    *,
    children: bool = False,
) -> RunOutcome:
    """Check the options strictly, run the program to its end, record how it ended."""
    checked = _checked_config(options)
    argv = build_command(command, module)
    sampler = None
    if checked is not None and checked.config.enabled:
        sampler = OutsideSampler.for_config(checked.config.profiler)
    since = time.time()
    loaded: list[Config] = []

    def meanwhile() -> None:
        from hawkwatch.config import load_config  # nothing to check: defaults and home

        config = (checked or load_config()).config
        loaded.append(config)
        if config.enabled:
            prepare(config, since)

    scratch = _make_scratch_folder()
    try:
        session_file = os.path.join(scratch, "session")
        env = build_environment(os.environ, options, session_file, children=children)
        if sampler is not None:
            env.update(sampler.environment(scratch))
        returncode = _supervise(argv, env, sampler.start if sampler else None, meanwhile)
        if sampler is not None:
            sampler.stop()
        lines = _read_announcement(session_file).splitlines()
    finally:
        _remove_scratch_folder(scratch)
    announced, notes = (lines[0].strip(), lines[1:]) if lines else ("", [])
    if announced.startswith("!"):
        return RunOutcome(returncode, None, agent_failure=announced[1:] or "unknown cause")
    if not announced:  # no agent (switched off, not a Python program): nothing to record
        return RunOutcome(returncode, None)
    from pathlib import Path  # loaded by ``prepare`` while the program ran, normally

    (config,) = loaded
    session_path = Path(announced)
    outcome = RunOutcome(returncode, session_path)
    if never_started(returncode, notes):
        return discard_session(outcome)
    if sampler is not None:
        sampler.store(session_path, since)
    try:
        record_exit(outcome)
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - the program's status stands
        return outcome.replace(problem=f"the exit status was not recorded: {_reason(exc)}")
    tidy(config, session_path)
    upload = config.upload
    if upload.url and upload.key:  # the final snapshot, even of a program killed by a signal
        from hawkwatch.uploader import upload_within

        try:
            upload_within(session_path, upload.url, upload.key, upload.exit_wait_s)
        except KeyboardInterrupt:  # Ctrl-C: stop waiting, keep the status
            pass
    return outcome


def _checked_config(options: Mapping[str, str]) -> LoadedConfig | None:
    """The config, checked strictly before the spawn: a typo is a clear error before anything
    starts. None when there is nothing to check (``nothing_to_check``, the common case): the
    program is spawned first, and the config module and the config (the defaults) load while it
    runs (~1.5 ms less before the spawn)."""
    if nothing_to_check(options):
        return None
    from hawkwatch.config import load_config

    return load_config(dict(options), strict=True)


def nothing_to_check(options: Mapping[str, str]) -> bool:
    """Whether checking the config strictly could find nothing wrong: no option, no
    ``HAWKWATCH_*`` variable but ``HAWKWATCH_HOME`` (any text names a folder), no config file
    (``config_sources``). The config is then the defaults, with that home."""
    home = ENV_PREFIX + "HOME"
    return (
        not options
        and all(name == home or not name.startswith(ENV_PREFIX) for name in os.environ)
        and next(config_files(os.getcwd()), None) is None
    )


def prepare(config: Config, spawned: float) -> None:
    """While the program runs: classify how earlier sessions' processes ended (sessions
    started before this program), when one may need it (looked at with ``os`` alone: the typed
    model loads only then), and load what writing the program's exit and tidying will need, on
    the other core rather than after the program; never raises."""
    try:
        from hawkwatch.agent.supervised_exit import (
            earlier_work,
            finish_gone_sessions,
            load_for_exit,
        )
        from hawkwatch.model.session_name import format_session_name

        if not (config.crash.enabled and config.crash.classify_earlier):
            return
        root = _sessions_root(config.home)
        # its own session is named by its start time: the slack covers /proc's clock ticks
        before = spawned - SPAWN_SLACK_S
        if earlier_work(root, format_session_name(before)):
            finish_gone_sessions(root, before=before)
        load_for_exit()
        import pathlib  # noqa: F401 - RunOutcome's path, after the program

        if tidy_will_remove(root, config.sessions.keep):
            import shutil  # noqa: F401 - tidy's rmtree (~2 ms with bz2 and lzma)

    except Exception as exc:  # noqa: BLE001 - the next agent start does it then
        print(f"hawkwatch: earlier sessions not classified: {_reason(exc)}", file=sys.stderr)


def tidy_will_remove(root: str, keep: int) -> bool:
    """Whether ``tidy`` will remove a session for ``sessions.keep``: ``root`` holds ``keep``
    entries or more before the program's own session is counted (sessions removed for their age
    alone are not foreseen: ``shutil`` then loads after the program, as it would anyway)."""
    try:
        return len(os.listdir(root)) >= keep
    except OSError:
        return False


def _sessions_root(home: str | None) -> str:
    """``store.sessions_root`` with ``os.path``: ``config.home`` or ``home_folder()``, then
    ``sessions``."""
    from hawkwatch.home import home_folder

    return os.path.join(os.path.expanduser(home) if home else home_folder(), "sessions")


def tidy(config: Config, session_path: Path) -> None:
    """Remove old sessions beyond ``sessions.keep`` / ``max_age_days`` now that the program
    ran (its agent leaves this to us unless it ran long enough to do it; never raises).
    Done after the program, not at its start: a short program's exit does not pay for it."""
    from hawkwatch.store import apply_retention

    sessions = config.sessions
    try:
        apply_retention(
            session_path.parent,
            keep=sessions.keep,
            max_age_days=sessions.max_age_days,
            protect=[session_path],
        )
    except Exception as exc:  # noqa: BLE001 - the next start tries again
        print(f"hawkwatch: old sessions not removed: {_reason(exc)}", file=sys.stderr)


# A session is named by its process's start time: on Linux exact to a clock tick (10 ms),
# elsewhere (psutil) to a second.
SPAWN_SLACK_S: Final = 0.02 if sys.platform.startswith("linux") else 1.0


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
        try:
            record_exit(outcome)  # cannot remove it: at least say how it ended
        except Exception:  # noqa: BLE001 - the program's status stands
            pass
        return outcome
    return outcome.replace(session_path=None, discarded=True)


def outcome_message(outcome: RunOutcome) -> str:
    """The supervisor's closing line on stderr."""
    if outcome.discarded:
        return (
            f"hawkwatch: the program did not start (exit status {outcome.returncode}); "
            "its empty session was removed"
        )
    if outcome.agent_failure is not None:
        return f"hawkwatch: nothing was recorded ({outcome.agent_failure}; see the warning above)"
    if outcome.session_path is None:
        return (
            "hawkwatch: the program did not start the agent (is it a Python program with "
            "hawkwatch installed?); nothing was recorded"
        )
    message = f"hawkwatch: session {outcome.session_path}; see it with 'hawkwatch report'"
    if outcome.problem is not None:
        message += f" ({outcome.problem})"
    return message


def _make_scratch_folder() -> str:
    """A private folder for the child's announcement (``_remove_scratch_folder`` afterwards).

    ``os.mkdir`` of a new name (mode 0700; it never follows a planted link) rather than
    ``tempfile``, whose imports (``shutil``, ``random``, the compression modules) cost ~2.5 ms
    before the program could start.
    """
    env = os.environ
    base = env.get("TMPDIR") or env.get("TEMP") or env.get("TMP") or "/tmp"
    for attempt in range(100):
        candidate = os.path.join(base, f"hawkwatch-run-{os.getpid()}-{time.time_ns()}-{attempt}")
        try:
            os.mkdir(candidate, 0o700)
        except FileExistsError:
            continue
        except OSError:
            break
        return candidate
    import tempfile  # no usable TMPDIR: let tempfile find a place

    return tempfile.mkdtemp(prefix="hawkwatch-run-")


def _remove_scratch_folder(folder: str) -> None:
    try:
        for name in os.listdir(folder):
            os.unlink(os.path.join(folder, name))
        os.rmdir(folder)
    except OSError:
        pass


def _read_announcement(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(4096).decode("utf-8", "replace").strip()
    except OSError:
        return ""


def _reason(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 300 else text[:300] + "…"


class OutsideSampler:
    """py-spy on the program from outside (``profiler.engine``); failures stay out of the run:
    they are noted in the session's ``session.json`` and the in-process windows stand."""

    def __init__(self, options: Any) -> None:
        self.options = options
        self.recorder: Any = None
        self.pid = 0

    @classmethod
    def for_config(cls, config: ProfilerConfig) -> OutsideSampler | None:
        if config.engine not in ENGINES:
            raise ConfigError(
                f"profiler.engine = {config.engine!r}: use one of {', '.join(ENGINES)}"
            )
        if not config.enabled or config.engine == "in-process":
            return None
        from hawkwatch.pyspy import RecorderOptions, default_rate, find_pyspy

        executable = find_pyspy()
        problem = None
        if not sys.platform.startswith("linux"):  # elsewhere py-spy needs root
            problem = "the py-spy engine runs on Linux only"
        elif executable is None:
            problem = "py-spy is not installed: pip install 'hawkwatch[profile]'"
        if problem is not None or executable is None:
            if config.engine == "py-spy":
                raise ConfigError(f"profiler.engine = 'py-spy' but {problem}")
            return None
        budget = config.budget * (1 - IN_PROCESS_SHARE)  # the in-process sampler keeps the rest
        rate = default_rate(budget, config.rate_hz, config.max_rate_hz, config.min_rate_hz)
        return cls(
            RecorderOptions(
                rate_hz=rate,
                window_s=config.window_s,
                nonblocking=config.pyspy_nonblocking,
                executable=executable,
                budget=0.0 if config.rate_hz > 0 else budget,
                min_rate_hz=config.min_rate_hz,
                max_rate_hz=config.max_rate_hz,
            )
        )

    def environment(self, scratch: str) -> dict[str, str]:
        """What the program is told: py-spy samples it (its sampler keeps its budget share),
        and which file in ``scratch`` says py-spy stopped (``runenv.OUTSIDE_STOPPED_VAR``)."""
        # absolute: the program may change its working folder (a relative TMPDIR)
        self.options.stopped_file = os.path.abspath(os.path.join(scratch, "outside-stopped"))
        return {
            PTRACER_VAR: str(os.getpid()),
            OUTSIDE_SAMPLER_VAR: "py-spy",
            OUTSIDE_STOPPED_VAR: self.options.stopped_file,
        }

    def start(self, pid: int) -> None:
        from hawkwatch.pyspy import Recorder

        self.pid = pid
        self.recorder = Recorder(pid, self.options)
        try:
            self.recorder.start()
        except Exception as exc:  # the program must not wait for samples that never come
            self.recorder.give_up(f"not started: {type(exc).__name__}: {exc}")
            raise

    def stop(self) -> None:
        if self.recorder is not None:
            self.recorder.stop()

    def store(self, session_path: Path, since: float) -> None:
        recorder = self.recorder
        if recorder is None:
            return
        note: dict[str, Any] = {
            "engine": "py-spy",
            "rate_hz": self.options.rate_hz,
            "rates_hz": [w.rate_hz for w in recorder.windows],
            "cost_per_sample_s": [w.cost_s for w in recorder.windows],
            "nonblocking": self.options.nonblocking,
            "windows": len(recorder.windows),
            "errors": recorder.errors[-5:],
            "gave_up": recorder.gave_up,
        }
        try:
            from hawkwatch.pyspy_store import store_windows

            written = store_windows(recorder.windows, session_path, self.pid, since)
            note["sessions"] = len(written)
        except Exception as exc:  # noqa: BLE001 (never into the run's exit: noted)
            note["errors"] = [*note["errors"], f"storing: {type(exc).__name__}: {exc}"][-5:]
        try:
            from hawkwatch.store import Session

            session = Session(session_path)
            metadata = session.metadata
            metadata["profiler_outside"] = note
            session.write_metadata(metadata)
        except Exception:  # noqa: BLE001 - the note is lost, the run's status stands
            pass
        if recorder.gave_up is not None:
            fixed = self.options.budget <= 0  # py-spy's budget is 0 when profiler.rate_hz is set
            at = "profiler.rate_hz" if fixed else "the whole profiler.budget"
            print(
                f"hawkwatch: py-spy could not sample the program ({recorder.gave_up}); "
                f"its profile is the in-process sampler's, at {at}",
                file=sys.stderr,
            )


def record_exit(outcome: RunOutcome) -> None:
    """Append the supervisor's ``exit-state`` to the (now dead) program's session and classify
    its exit (once: a later agent start skips a session done here). A normal end is written
    with the store and the plain records alone; any other (a signal, a crash, a faulthandler
    dump to turn into a crash record) by ``crash_recovery`` (issue 15), with the typed model."""
    from hawkwatch.agent.supervised_exit import write_exit

    assert outcome.session_path is not None
    if write_exit(outcome.session_path, outcome.returncode):
        return
    from hawkwatch.agent.crash_recovery import finish_session

    finish_session(outcome.session_path, outcome.returncode, source="supervisor")


# signal.Signals' members: the SIG names the platform defines, without SIG_DFL and the like
_SIGNAL_NUMBERS: Final = frozenset(
    number
    for name, number in vars(signal).items()
    if name.isupper() and name.startswith("SIG") and not name.startswith("SIG_")
)


def exit_like(outcome: RunOutcome) -> int:
    """Leave as the child did: same exit code, or killed by the same signal."""
    number = outcome.signal
    if number is None:
        return outcome.returncode
    if number in _SIGNAL_NUMBERS and number != signal.SIGKILL:
        signal.signal(number, signal.SIG_DFL)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):  # closed, or None
            pass
    os.kill(os.getpid(), number)
    return 128 + number  # reached only if the signal does not end this process


def _supervise(
    argv: list[str],
    env: dict[str, str],
    started: Callable[[int], None] | None = None,
    meanwhile: Callable[[], None] | None = None,
) -> int:
    """Start the program, forward signals to it, wait; its status in ``subprocess``'s
    convention (negative: killed by that signal)."""
    pid = _spawn(argv, env)
    if started is not None:
        try:
            started(pid)
        except Exception as exc:  # noqa: BLE001 (the program runs on, profiled in-process)
            print(f"hawkwatch: out-of-process sampler not started: {exc}", file=sys.stderr)

    def forward(signum: int, _frame: FrameType | None) -> None:
        if signum == signal.SIGINT and _terminal_sends_sigint_to_child():
            return  # Ctrl-C already reached the child through the terminal
        try:
            os.kill(pid, signum)
        except ProcessLookupError:  # gone already: waitpid reports it
            pass

    previous = {number: signal.signal(number, forward) for number in FORWARDED_SIGNALS}
    try:
        if meanwhile is not None:
            meanwhile()
        while True:
            try:
                _, status = os.waitpid(pid, 0)
            except KeyboardInterrupt:
                continue
            except ChildProcessError:  # SIGCHLD ignored: gone, status unknown (as subprocess)
                return 0
            return os.waitstatus_to_exitcode(status)
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


# What ``subprocess.Popen(restore_signals=True)`` resets in the child: Python ignores them.
_RESET_IN_CHILD: Final = tuple(
    getattr(signal, name) for name in ("SIGPIPE", "SIGXFZ", "SIGXFSZ") if hasattr(signal, name)
)


def _spawn(argv: list[str], env: dict[str, str]) -> int:
    """The program's pid. ``os.posix_spawnp`` (vfork and exec, as ``subprocess`` does when it
    can) without importing ``subprocess``, ``threading`` and ``selectors`` (~3 ms before the
    program could start). File descriptors: Python opens its own non-inheritable, so the
    program gets exactly what the supervisor inherited, as when it is run directly."""
    try:
        return os.posix_spawnp(argv[0], argv, env, setsigdef=_RESET_IN_CHILD)
    except OSError as exc:
        raise HawkwatchError(f"cannot start {argv[0]!r}: {exc.strerror}") from exc


def _terminal_sends_sigint_to_child() -> bool:
    try:
        return os.isatty(0) and os.tcgetpgrp(0) == os.getpgrp()
    except OSError:
        return False
