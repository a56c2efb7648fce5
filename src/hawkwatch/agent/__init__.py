"""The in-process agent: runtime, scheduler and monitors (standard library and psutil only).

The names below load on first use, so that importing one of the agent's modules (the
supervisor of ``hawkwatch run`` reads dead sessions with ``crash_recovery``) does not start
up the whole agent.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from hawkwatch.agent.api import (
        Span,
        current_agent,
        event,
        mark_ready,
        register_monitor,
        span,
        start,
        stop,
    )
    from hawkwatch.agent.monitor import AgentContext, LaunchTimes, Monitor

_LAZY = {
    "AgentContext": "hawkwatch.agent.monitor",
    "LaunchTimes": "hawkwatch.agent.monitor",
    "Monitor": "hawkwatch.agent.monitor",
    "Span": "hawkwatch.agent.api",
    "current_agent": "hawkwatch.agent.api",
    "event": "hawkwatch.agent.api",
    "mark_ready": "hawkwatch.agent.api",
    "register_monitor": "hawkwatch.agent.api",
    "span": "hawkwatch.agent.api",
    "start": "hawkwatch.agent.api",
    "stop": "hawkwatch.agent.api",
}

__all__ = [
    "AgentContext",
    "LaunchTimes",
    "Monitor",
    "Span",
    "current_agent",
    "event",
    "mark_ready",
    "register_monitor",
    "span",
    "start",
    "stop",
]


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'hawkwatch.agent' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value
