"""The verdict on an exit status ``hawkwatch run`` saw end normally (pure, stdlib only).

``exit_classify`` decides every exit; this part of it, for a program that ended with an exit
code, is apart so that the supervisor can classify the common end (a clean exit, with no crash
recorded) without loading msgspec and the typed model.
"""

from __future__ import annotations

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
