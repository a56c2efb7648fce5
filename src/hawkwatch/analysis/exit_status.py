"""The verdict on a normal end: an exit status ``hawkwatch run`` saw, or the agent's own exit
record (pure, stdlib only).

``exit_classify`` decides every exit; this part of it, for a program that ended with an exit
code, is apart so that the supervisor can classify the common end (a clean exit, with no crash
recorded) without loading msgspec and the typed model.
"""

from __future__ import annotations

import signal

from hawkwatch.model.plain_records import EXEC_EXIT_REASON

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

REPLACED = "agent: the program replaced itself with os.exec* (its session ends there)"

Verdict = tuple[str, "int | None", "int | None", tuple[str, ...]]
"""``(kind, exit_code, signal, evidence)``, the fields of ``ExitVerdict``."""


def exited_verdict(
    returncode: int, agent_exit: Mapping[str, Any] | None, fatal_exception: str | None
) -> Verdict:
    """The verdict on exit status ``returncode`` (>= 0, or any for a program that replaced
    itself), given the agent's ``exit-state`` value and a fatal exception's type if one was
    recorded."""
    status = f"hawkwatch run saw exit status {returncode}"
    if agent_exit and agent_exit.get("reason") == EXEC_EXIT_REASON:
        return ("clean", None, None, (REPLACED, f"{status} of the program it became"))
    evidence = [f"{status} (exit code {returncode})"]
    if fatal_exception:
        evidence.append(f"uncaught {fatal_exception} recorded on the main thread")
        return ("exception", returncode, None, tuple(evidence))
    if agent_exit and agent_exit.get("reason") == "uncaught-exception":
        evidence.append(f"agent: uncaught {agent_exit.get('exception') or 'exception'}")
        return ("exception", returncode, None, tuple(evidence))
    return ("clean" if returncode == 0 else "exit-code", returncode, None, tuple(evidence))


def agent_verdict(
    agent: Mapping[str, Any], os_exit_code: int | None, fatal_exception: str | None
) -> Verdict:
    """The verdict on a session whose exit status nobody saw, from the agent's own
    ``exit-state`` value (written by atexit) and ``os._exit``'s code if it was called."""
    reason = agent.get("reason")
    code = agent.get("exit_code")
    code = code if isinstance(code, int) and not isinstance(code, bool) else None
    if reason == "uncaught-exception":
        what = agent.get("exception") or fatal_exception or "exception"
        return ("exception", code, None, (f"agent at exit: uncaught {what}",))
    if reason == EXEC_EXIT_REASON:
        return ("clean", None, None, (REPLACED,))
    if reason == "keyboard-interrupt":
        return ("killed", code, int(signal.SIGINT), ("agent at exit: KeyboardInterrupt (SIGINT)",))
    if reason == "sys.exit" and code is not None:
        kind = "clean" if code == 0 else "exit-code"
        return (kind, code, None, (f"agent at exit: sys.exit({code})",))
    if os_exit_code is not None:
        kind = "clean" if os_exit_code == 0 else "exit-code"
        return (kind, os_exit_code, None, (f"os._exit({os_exit_code}) was called",))
    if code is None and reason in (None, "unknown"):
        evidence = ("agent at exit: main returned (no sys.exit, no uncaught exception)",)
        return ("clean", 0, None, evidence)
    if code is not None:
        kind = "clean" if code == 0 else "exit-code"
        return (kind, code, None, (f"agent at exit: {reason}, exit code {code}",))
    return ("unknown", None, None, (f"agent at exit: {reason}, exit code not known",))
