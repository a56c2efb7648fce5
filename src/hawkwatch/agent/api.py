"""The agent's public functions. None of them ever raises into the calling code.

``start`` creates the process's one ``Agent``; the others act on it and do nothing when it is not
running. The runtime's process-wide hooks (``atexit``, ``os.register_at_fork``) are installed at
the first start (``runtime.install_process_hooks``).
"""

from __future__ import annotations

import threading
import time
from types import TracebackType

from hawkwatch._lazylog import lazy_logger
from hawkwatch.agent import breadcrumbs
from hawkwatch.agent.monitor import to_json
from hawkwatch.agent.plugins import default_monitors
from hawkwatch.agent.plugins.io_threads import mark_loop_thread
from hawkwatch.agent.plugins.stall_loops import heartbeat
from hawkwatch.agent.plugins.stall_loops import watch_loop as _watch_loop
from hawkwatch.agent.runtime import (
    HOLDER,
    Agent,
    MonitorFactory,
    install_process_hooks,
    new_launch_times,
)
from hawkwatch.config import load_config
from hawkwatch.model.plain_records import CUSTOM_SPAN

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

log = lazy_logger("hawkwatch")

__all__ = [
    "event",
    "heartbeat",
    "mark_loop_thread",
    "mark_ready",
    "span",
    "start",
    "stop",
    "watch_loop",
]

_holder = HOLDER


def start(app_name: str | None = None, app_version: str | None = None, **options: Any) -> bool:
    """Start monitoring this process; True when the agent is running.

    ``options`` are config options by flat name (``resources_interval_s=1.0``) or dotted name
    (``**{"resources.interval_s": 1.0}``). An unknown option or a bad value is logged, recorded
    in ``hawkwatch-error`` and replaced by its default; ``hawkwatch check-config`` is strict.
    Calling ``start`` again while running does nothing.
    """
    try:
        return start_agent(app_name, app_version, options)
    except Exception as exc:  # the firewall: monitoring never stops the app
        log.warning("hawkwatch: the agent did not start: %s: %s", type(exc).__name__, exc)
        return False


def start_agent(
    app_name: str | None,
    app_version: str | None,
    options: dict[str, Any],
    *,
    interpreter_ready: float = 0.0,
    is_supervised: bool = False,
) -> bool:
    """``start`` without the firewall, for the bootstrap of ``hawkwatch run``."""
    overrides = dict(options)
    if app_name is not None:
        overrides["app.name"] = app_name
    if app_version is not None:
        overrides["app.version"] = app_version
    with _holder.lock:
        if _holder.agent is not None and _holder.agent.is_running:
            return True
        loaded = load_config(overrides)
        if not loaded.config.enabled:
            return False
        agent = Agent(
            loaded,
            new_launch_times(interpreter_ready),
            [*default_monitors(loaded.config), *_holder.extra_factories],
            is_supervised=is_supervised,
        )
        agent.start()
        _holder.agent = agent
    install_process_hooks()
    return True


def stop() -> None:
    """Stop monitoring and close the session (monitoring can be started again)."""
    try:
        with _holder.lock:
            agent, _holder.agent = _holder.agent, None
        if agent is not None:
            agent.event("hawkwatch::Stop")
            agent.stop()
    except Exception:
        log.warning("hawkwatch: stopping the agent failed", exc_info=True)


def mark_ready() -> None:
    """Say the app is ready (listening, first window shown): ends the launch measurement."""
    agent = _holder.agent
    if agent is None:
        return
    try:
        agent.mark_ready()
    except Exception as exc:
        _report(agent, "mark_ready", exc)


def event(name: str, extra: object = None) -> None:
    """Record a ``custom-time-event`` now; ``extra`` is kept as text (JSON if not a string)."""
    agent = _holder.agent
    if agent is None:
        return
    try:
        agent.event(str(name), extra if extra is None or isinstance(extra, str) else to_json(extra))
    except Exception as exc:
        _report(agent, "event", exc)


class Span:
    """Times a block of code into a ``custom-span`` record; reusable, one timing per ``with``."""

    __slots__ = ("_started", "_t0", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._started = 0.0
        self._t0 = 0

    def __enter__(self) -> Span:
        self._started = time.time()
        self._t0 = time.perf_counter_ns()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        duration_ns = time.perf_counter_ns() - self._t0
        agent = _holder.agent
        if agent is None:
            return
        try:
            agent.write(
                CUSTOM_SPAN(  # CustomSpan's bytes, without loading the typed model
                    name=self.name,
                    start=round(self._started, 6),
                    duration_ms=round(duration_ns / 1e6, 3),
                    thread=threading.current_thread().name,
                    error=kind.__name__ if kind is not None else None,
                )
            )
            breadcrumbs.note("span", f"{self.name} {round(duration_ns / 1e6, 3)} ms")
        except Exception as exc:
            _report(agent, "span", exc)


def span(name: str) -> Span:
    """``with hawkwatch.span("rebuild-index"): ...`` records how long the block took."""
    return Span(name)


def watch_loop(loop: Any) -> None:
    """Watch an asyncio-compatible loop for stalls (uvloop; ``asyncio`` loops are found anyway).

    Works before ``start``: the loop is watched once the agent runs with ``stall.enabled``.
    """
    try:
        _watch_loop(loop)
    except Exception as exc:
        agent = _holder.agent
        if agent is not None:
            _report(agent, "watch_loop", exc)


def register_monitor(factory: MonitorFactory) -> None:
    """Add a monitor (a class or factory); started now if the agent runs, and in forked children."""
    with _holder.lock:
        _holder.extra_factories.append(factory)
        agent = _holder.agent
    if agent is not None and agent.is_running:
        agent.add_monitor(factory)


def current_agent() -> Agent | None:
    """The running agent, for the bootstrap and tests."""
    agent = _holder.agent
    return agent if agent is not None and agent.is_running else None


def _report(agent: Agent, where: str, exc: Exception) -> None:
    try:
        agent.record_error("api", where, f"{type(exc).__name__}: {exc}")
    except Exception:
        log.debug("hawkwatch: could not record an API error", exc_info=True)
