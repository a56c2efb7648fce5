"""The agent's public calls as ``import hawkwatch`` offers them: cheap, and never importing.

``hawkwatch.event()`` and its siblings may be called from any thread at any time, so they must not
import the agent lazily: a ``fork()`` while another thread is inside that import leaves the
child's import lock held by a thread that does not exist there, and the child's first call waits
forever. When the agent is not loaded it cannot be running, so these calls do nothing; when it is,
they hand over to ``hawkwatch.agent.api``. Only ``start`` and ``watch_loop``, calls made once
while setting up, import it.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hawkwatch run's start)
if TYPE_CHECKING:
    from types import TracebackType
    from typing import Any

_API = "hawkwatch.agent.api"


def _loaded(name: str) -> Any:
    """``hawkwatch.agent.api.<name>`` if that module is loaded (and got that far), else None."""
    module = sys.modules.get(_API)
    return getattr(module, name, None) if module is not None else None


def start(app_name: str | None = None, app_version: str | None = None, **options: Any) -> bool:
    """Start monitoring this process; True when the agent is running (``docs/agent.md``)."""
    from hawkwatch.agent import api

    return api.start(app_name, app_version, **options)


def watch_loop(loop: Any) -> None:
    """Watch an asyncio-compatible loop for stalls (uvloop); works before ``start``."""
    from hawkwatch.agent import api

    api.watch_loop(loop)


def stop() -> None:
    """Stop monitoring and close the session."""
    call = _loaded("stop")
    if call is not None:
        call()


def mark_ready() -> None:
    """Say the app is ready: ends the launch measurement."""
    call = _loaded("mark_ready")
    if call is not None:
        call()


def event(name: str, extra: object = None) -> None:
    """Record a ``custom-time-event`` now."""
    call = _loaded("event")
    if call is not None:
        call(name, extra)


def heartbeat() -> None:
    """Say that this thread's custom loop is alive; call it once per iteration."""
    call = _loaded("heartbeat")
    if call is not None:
        call()


class _NoSpan:
    """What ``span`` returns while the agent is not loaded: times nothing."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> _NoSpan:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None


def span(name: str) -> Any:
    """``with hawkwatch.span("rebuild-index"): ...`` records how long the block took."""
    call = _loaded("span")
    return call(name) if call is not None else _NoSpan(name)


def mark_loop_thread(thread: Any = None) -> None:
    """Treat ``thread`` (default: the calling one) as an event loop's for the file-I/O canary;
    works before ``start`` (a set-up call: it imports the canary's small thread registry)."""
    from hawkwatch.agent.plugins import io_threads

    io_threads.mark_loop_thread(thread)
