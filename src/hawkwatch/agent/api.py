"""The agent's public functions. None of them ever raises into the calling code.

``start`` creates the process's one ``Agent``; the others act on it and do nothing when it is not
running. Process-wide hooks (``atexit``, ``os.register_at_fork``) are installed once, at the
first start: at exit the agent records App::Exit and a clean exit-state; before ``fork()`` its
thread is paused; in the child a new agent with its own session replaces the parent's.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
import threading
import time
from types import TracebackType
from typing import Any

from hawkwatch.agent import breadcrumbs
from hawkwatch.agent.monitor import LaunchTimes, time_key, to_json
from hawkwatch.agent.plugins import default_monitors
from hawkwatch.agent.plugins.stall_loops import heartbeat
from hawkwatch.agent.plugins.stall_loops import watch_loop as _watch_loop
from hawkwatch.agent.runtime import Agent, AgentHolder, MonitorFactory, new_launch_times
from hawkwatch.config import load_config
from hawkwatch.model import collections as c
from hawkwatch.store._process import process_start_time

log = logging.getLogger("hawkwatch")

__all__ = ["event", "heartbeat", "mark_ready", "span", "start", "stop", "watch_loop"]

_holder = AgentHolder()
_hooks_installed = False


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
    _install_process_hooks()
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
            record: dict[str, Any] = {
                "name": self.name,
                "start": round(self._started, 6),
                "duration_ms": round(duration_ns / 1e6, 3),
                "thread": threading.current_thread().name,
            }
            if kind is not None:
                record["error"] = kind.__name__
            agent.store_json(c.CUSTOM_SPAN, record, key=time_key(self._started))
            breadcrumbs.note("span", f"{self.name} {record['duration_ms']} ms")  # issue 15
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


# -- process-wide hooks ----------------------------------------------------------------------


def _install_process_hooks() -> None:
    global _hooks_installed
    if _hooks_installed:
        return
    _hooks_installed = True
    atexit.register(_at_exit)
    os.register_at_fork(
        before=_before_fork,
        after_in_parent=_after_fork_in_parent,
        after_in_child=_after_fork_in_child,
    )


def _at_exit() -> None:
    agent = _holder.agent
    if agent is None:
        return
    try:
        agent.finish()
    except Exception:
        log.warning("hawkwatch: recording the exit failed", exc_info=True)


def _before_fork() -> None:
    agent = _holder.agent
    if agent is not None:
        try:
            agent.pause_for_fork()
        except Exception:
            log.debug("hawkwatch: pausing for fork failed", exc_info=True)


def _after_fork_in_parent() -> None:
    agent = _holder.agent
    if agent is not None:
        try:
            agent.resume_after_fork()
        except Exception:
            log.debug("hawkwatch: resuming after fork failed", exc_info=True)


def _after_fork_in_child() -> None:
    _holder.lock = threading.Lock()  # the parent may have held it; never acquire the old one
    old = _holder.agent
    _holder.agent = None
    if old is None or not old.is_running:
        return
    try:
        old.abandon_in_child()
        agent = Agent(
            old.loaded,
            LaunchTimes(process_start=process_start_time()),
            [*default_monitors(old.config), *_holder.extra_factories],
            parent_session=old.session.name if old.session else None,
        )
        agent.inherit_log_state(old)
        agent.start()
        _holder.agent = agent
        _finish_with_multiprocessing(agent)
    except Exception as exc:
        log.warning("hawkwatch: the agent did not restart in the forked child: %s", exc)


def _finish_with_multiprocessing(agent: Agent) -> None:
    """Record the exit of a ``multiprocessing`` worker, which leaves through ``os._exit``.

    Its bootstrap clears the finalizer registry after the fork and then runs the after-fork
    callbacks, so the finalizer is registered from one of those; it runs in the worker's exit
    function. In a plain ``os.fork`` child the callback is simply never called.
    """
    if "multiprocessing.util" not in sys.modules:
        return
    from multiprocessing import util

    def register_finalizer(_agent: Agent) -> None:
        util.Finalize(None, _agent.finish, args=("multiprocessing-worker",), exitpriority=-100)

    util.register_after_fork(agent, register_finalizer)
