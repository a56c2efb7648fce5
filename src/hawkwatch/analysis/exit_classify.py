"""How a process ended, decided from evidence (pure): the exit vocabulary and its reasons.

KSCrash and Matrix call an exit without a crash report an OOM by elimination, which gives false
positives. Here every kind needs its own evidence, listed in the result: an exit status seen by
the supervisor, the agent's own exit record, faulthandler's dump, a ``crash`` record, a hang
marker, the memory cgroup's ``oom_kill`` counter grown since the process started, the kernel's
OOM line naming the pid, a new boot id. Without evidence for more, a process whose atexit
handlers never ran is ``killed`` (it was ended from outside) and one with no agent evidence at
all is ``unknown``; the evidence says why.
"""

from __future__ import annotations

import signal
from typing import Any, Final

import msgspec

from hawkwatch.analysis.exit_status import agent_verdict, exited_verdict
from hawkwatch.model.plain_records import EXEC_EXIT_REASON
from hawkwatch.model.records.crash import ExitKind

FATAL_SIGNALS: Final = frozenset(
    int(getattr(signal, name))
    for name in ("SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGABRT")
    if hasattr(signal, name)
)


class ExitFacts(msgspec.Struct, frozen=True):
    """What is known about one session's end; None / empty where nothing was found."""

    returncode: int | None = None
    """The exit status ``hawkwatch run`` saw (negative: killed by that signal)."""
    agent_exit: dict[str, Any] | None = None
    """The agent's ``exit-state`` value (written by atexit)."""
    os_exit_code: int | None = None
    """``os._exit(code)`` was called (the agent's exit-intent file)."""
    fatal_signal: str | None = None
    """Faulthandler's dump names this fatal signal (``SIGSEGV``)."""
    fatal_exception: str | None = None
    """A fatal ``crash`` record of this exception type (uncaught on the main thread)."""
    hang: bool = False
    """A loop was stalled when the process disappeared (hang marker)."""
    oom_kill_before: int | None = None
    oom_kill_after: int | None = None
    oom_cgroup: str | None = None
    kernel_oom_line: str | None = None
    memory_level: int | None = None
    boot_id_then: str | None = None
    boot_id_now: str | None = None
    has_agent_evidence: bool = True
    """The session had a hawkwatch agent that records its start (MTHawkeye folders do not)."""
    fatal_signals_watched: bool = True
    """faulthandler wrote into the session (False: the app had enabled its own first)."""
    notes: tuple[str, ...] = ()


class ExitVerdict(msgspec.Struct, frozen=True):
    kind: ExitKind
    exit_code: int | None
    signal: int | None
    evidence: tuple[str, ...]


def signal_name(number: int | None) -> str:
    if number is None:
        return "?"
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def signal_number(name: str | None) -> int | None:
    try:
        return int(signal.Signals[name]) if name else None
    except KeyError:
        return None


def classify_exit(facts: ExitFacts) -> ExitVerdict:
    """The exit kind of one session, with the evidence that decided it."""
    if facts.returncode is not None:
        return _supervised(facts, facts.returncode)
    return _unsupervised(facts)


def _oom_evidence(facts: ExitFacts) -> list[str]:
    found: list[str] = []
    before, after = facts.oom_kill_before, facts.oom_kill_after
    if before is not None and after is not None and after > before:
        where = f" of {facts.oom_cgroup}" if facts.oom_cgroup else ""
        found.append(f"memory cgroup{where} oom_kill counter grew {before} -> {after}")
    if facts.kernel_oom_line:
        found.append(f"kernel log: {facts.kernel_oom_line}")
    if found and facts.memory_level is not None:
        found.append(f"last memory level {facts.memory_level}% of the limit")
    return found


def _supervised(facts: ExitFacts, returncode: int) -> ExitVerdict:
    replaced = bool(facts.agent_exit and facts.agent_exit.get("reason") == EXEC_EXIT_REASON)
    if returncode >= 0 or replaced:
        return ExitVerdict(*exited_verdict(returncode, facts.agent_exit, facts.fatal_exception))  # type: ignore[arg-type]
    number = -returncode
    name = signal_name(number)
    evidence = [f"hawkwatch run saw the process killed by {name}"]
    if facts.fatal_signal or number in FATAL_SIGNALS:
        if facts.fatal_signal:
            evidence.append(f"faulthandler dump: fatal {facts.fatal_signal}")
        return ExitVerdict("fatal-signal", None, number, tuple(evidence))
    oom = _oom_evidence(facts)
    if number == signal.SIGKILL and oom:
        return ExitVerdict("oom-killed", None, number, tuple(evidence + oom))
    if facts.hang:
        evidence.append("a watched loop was stalled when it died (hang marker)")
        return ExitVerdict("hang-killed", None, number, tuple(evidence))
    if number == signal.SIGKILL:
        evidence.append("no OOM evidence (cgroup oom_kill unchanged or unreadable, no kernel line)")
    return ExitVerdict("killed", None, number, tuple(evidence))


def _unsupervised(facts: ExitFacts) -> ExitVerdict:
    evidence: tuple[str, ...]
    agent = facts.agent_exit
    if agent is not None:
        return _from_agent_record(agent, facts)
    if facts.os_exit_code is not None:
        code = facts.os_exit_code
        evidence = (f"os._exit({code}) was called",)
        return ExitVerdict("clean" if code == 0 else "exit-code", code, None, evidence)
    if facts.fatal_signal:
        number = signal_number(facts.fatal_signal)
        evidence = (f"faulthandler dump: fatal {facts.fatal_signal}",)
        return ExitVerdict("fatal-signal", None, number, evidence)
    oom = _oom_evidence(facts)
    if oom:
        return ExitVerdict("oom-killed", None, int(signal.SIGKILL), tuple(oom))
    if facts.hang:
        evidence = ("a watched loop was stalled when the process disappeared (hang marker)",)
        return ExitVerdict("hang-killed", None, None, evidence)
    if facts.boot_id_then and facts.boot_id_now and facts.boot_id_then != facts.boot_id_now:
        evidence = (f"boot id changed {facts.boot_id_then[:8]}… -> {facts.boot_id_now[:8]}…",)
        return ExitVerdict("reboot", None, None, evidence)
    if facts.fatal_exception:
        evidence = (
            f"uncaught {facts.fatal_exception} recorded on the main thread",
            "atexit never ran (killed while ending)",
        )
        return ExitVerdict("exception", None, None, evidence)
    if not facts.has_agent_evidence:
        return ExitVerdict("unknown", None, None, ("no exit record and no agent evidence",))
    if not facts.fatal_signals_watched:
        evidence = (
            "atexit never ran and no exit record, but faulthandler belonged to the app, so a "
            "fatal signal would have left no dump here: killed or crashed, not known which",
        )
        return ExitVerdict("unknown", None, None, evidence)
    return ExitVerdict(
        "killed",
        None,
        None,
        (
            "atexit never ran, no os._exit, no fatal-signal dump, no uncaught exception: "
            "ended from outside by a signal it does not handle (SIGKILL, or SIGTERM/SIGHUP "
            "without a handler)",
            "no OOM evidence (cgroup oom_kill unchanged or unreadable, no kernel line)",
            "same boot",
        ),
    )


def _from_agent_record(agent: dict[str, Any], facts: ExitFacts) -> ExitVerdict:
    return ExitVerdict(*agent_verdict(agent, facts.os_exit_code, facts.fatal_exception))  # type: ignore[arg-type]
