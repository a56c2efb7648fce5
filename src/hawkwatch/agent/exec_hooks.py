"""``os.execv`` and ``os.execve``: the program is about to be replaced, so end its session first.

An exec replaces the process image without running ``atexit``. Whatever the agent still held
(an open CPU episode, records not yet written) would be lost, and the session would read as
killed. Every ``os.exec*`` function of the standard library goes through these two, so wrapping
them is enough (``subprocess`` execs in C after its fork and is not affected).

The wrapper finishes the agent (exit reason ``exec``) and calls the function that was installed
before, the app's own wrapper included. If the exec fails (no such file, not executable), the
program carries on, and so does monitoring: in a new session that names the finished one as its
parent.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable

from hawkwatch._lazylog import lazy_logger
from hawkwatch.agent.runtime import HOLDER, Agent
from hawkwatch.model.plain_records import EXEC_EXIT_REASON
from hawkwatch.store import _worker

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any, Final

log = lazy_logger(__name__)

_MARK: Final = "__hawkwatch_exec__"


def install() -> None:
    """Wrap ``os.execv`` and ``os.execve`` unless ours is in front (the wrappers outlive the
    agent). Wrapping again an app's wrapper that calls ours is harmless: the inner one finds
    the agent finished already."""
    for name in ("execv", "execve"):
        previous = getattr(os, name, None)
        if previous is not None and not getattr(previous, _MARK, False):
            setattr(os, name, _wrapped(previous))


def _wrapped(previous: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(previous)
    def exec_wrapper(*args: Any, **kwargs: Any) -> Any:
        finished = _finish_before_exec()
        try:
            return previous(*args, **kwargs)
        except BaseException:
            _resume_after_failed_exec(finished)
            raise

    setattr(exec_wrapper, _MARK, True)
    return exec_wrapper


def _finish_before_exec() -> Agent | None:
    """Record the exit and flush every store; the agent that was finished, if any."""
    try:
        agent = HOLDER.agent
        if agent is None or not agent.is_running or not agent.is_own_process():
            return None
        agent.finish(EXEC_EXIT_REASON)
        _worker.flush_all_at_exit()
        return agent
    except Exception as exc:  # the exec must happen whatever we failed to write
        log.warning("hawkwatch: finishing before exec failed: %s: %s", type(exc).__name__, exc)
        return None


def _resume_after_failed_exec(finished: Agent | None) -> None:
    if finished is None:
        return
    try:
        with HOLDER.lock:
            if HOLDER.agent is finished:
                HOLDER.agent = finished.successor()
    except Exception as exc:
        log.warning("hawkwatch: no new session after a failed exec: %s", exc)
