"""hawkwatch: application performance monitoring for Python.

The agent's whole public surface: ``start``, ``stop``, ``mark_ready``, ``event``, ``span``,
and for the stall monitor ``watch_loop`` and ``heartbeat``.
None of them raises into the calling code. They are loaded on first use, so that importing
``hawkwatch.store`` or running the ``hawkwatch`` command does not import the agent.
"""

from __future__ import annotations

from hawkwatch._version import __version__
from hawkwatch.errors import HawkwatchError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the CLI's start-up)
if TYPE_CHECKING:
    from typing import Any

    from hawkwatch.agent.api import event, heartbeat, mark_ready, span, start, stop, watch_loop

__all__ = [
    "HawkwatchError",
    "__version__",
    "event",
    "heartbeat",
    "mark_ready",
    "span",
    "start",
    "stop",
    "watch_loop",
]

_AGENT_API = frozenset({"event", "heartbeat", "mark_ready", "span", "start", "stop", "watch_loop"})


def __getattr__(name: str) -> Any:
    if name in _AGENT_API:
        from hawkwatch.agent import api

        value = getattr(api, name)
        globals()[name] = value  # later look-ups skip this function
        return value
    raise AttributeError(f"module 'hawkwatch' has no attribute {name!r}")
