"""The in-process agent: runtime, scheduler and monitors (standard library and psutil only)."""

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
