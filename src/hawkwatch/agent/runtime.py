"""The agent's lifecycle: one ``Agent`` per process, behind a firewall, restarted after fork.

The runtime owns the session, its record store, the scheduler thread and the monitors. It is the
one place that catches what a monitor raises: the monitor is stopped, one ``hawkwatch-error``
record and one log line say why, and the application carries on. In a child created by
``fork()`` the parent's agent is abandoned without touching its locks or files, and a new agent
with its own session starts in the child.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

from hawkwatch.agent.exit_tracking import ExitTracker
from hawkwatch.agent.monitor import AgentContext, LaunchTimes, Monitor, time_key, to_json
from hawkwatch.agent.scheduler import Scheduler
from hawkwatch.config import Config, LoadedConfig
from hawkwatch.model import collections as c
from hawkwatch.store import RecordStore, Session, apply_retention, sessions_root
from hawkwatch.store._process import process_start_time

log = logging.getLogger(__name__)

MonitorFactory = Callable[[], Monitor]
_NO_RETENTION = 1 << 30  # Session.create keeps everything; the agent applies retention later


class Agent:
    """One process's monitoring: a session, its monitors and the scheduler that drives them."""

    def __init__(
        self,
        loaded: LoadedConfig,
        launch: LaunchTimes,
        factories: list[MonitorFactory],
        *,
        parent_session: str | None = None,
        is_supervised: bool = False,
    ) -> None:
        self.loaded = loaded
        self.config: Config = loaded.config
        self.launch = launch
        self.factories = list(factories)
        self.parent_session = parent_session
        self.is_supervised = is_supervised
        self.monitors: list[Monitor] = []
        self.exit_tracker = ExitTracker()
        self.session: Session | None = None
        self.records: RecordStore | None = None
        self.context: AgentContext | None = None
        self.scheduler = Scheduler(on_error=self._job_failed)
        self._error_keys: set[str] = set()
        self._retention_due = False
        self.is_running = False

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        """Create the session and start every monitor; raises only if the store cannot open."""
        config = self.config
        home = config.home
        is_child = self.parent_session is not None
        self.session = Session.create(
            root=sessions_root(os.path.join(home, "sessions") if home else None),
            app_name=config.app.name,
            app_version=config.app.version,
            start_time=self.launch.process_start or None,
            keep=_NO_RETENTION,  # retention runs on the scheduler thread, after start
            max_age_days=float(_NO_RETENTION),
            extra={
                "parent_session": self.parent_session,
                "supervised": self.is_supervised,
                "config_file": str(self.loaded.file) if self.loaded.file else None,
            },
        )
        self.records = self.session.open_store()
        self.context = AgentContext(
            config=config,
            session=self.session,
            records=self.records,
            launch=self.launch,
            every=self.scheduler.every,
            is_supervised=self.is_supervised,
            once=self.scheduler.once,
        )
        self.is_running = True
        self.exit_tracker.install()
        self.launch.agent_started = time.time()
        for problem in self.loaded.problems:
            self.record_error("config", "config", problem)
        self.event("App::Start")
        for factory in self.factories:
            self.add_monitor(factory)
        if not is_child and not self.is_supervised:
            self.schedule_retention()
        self.scheduler.start()

    def schedule_retention(self) -> None:
        """Tidy old sessions soon, on the scheduler thread.

        At start, except in forked children (the process that started the run does it) and
        under ``hawkwatch run``, whose bootstrap calls this once the program's own code starts:
        a program that never starts (no such script or module) must not push real sessions
        out, and the supervisor removes its empty session.
        """
        if self.is_running:
            self._retention_due = True
            self.scheduler.once(self._apply_retention, self)

    def _apply_retention(self) -> None:
        """Tidy old sessions (deferred: removing folders need not delay the program's start;
        a process too short for the scheduler to get to it does it at stop)."""
        if self.session is None or not self._retention_due:
            return
        self._retention_due = False
        sessions = self.config.sessions
        try:
            apply_retention(
                self.session.path.parent,
                keep=sessions.keep,
                max_age_days=sessions.max_age_days,
                protect=[self.session.path],
            )
        except Exception as exc:
            self.record_error("sessions", "retention", f"{type(exc).__name__}: {exc}")

    def add_monitor(self, factory: MonitorFactory) -> None:
        """Create and start one monitor behind the firewall."""
        monitor: Monitor | None = None
        try:
            monitor = factory()
            if self.context is None:
                raise RuntimeError("the agent is not started")
            monitor.start(self.context)
        except Exception as exc:
            name = getattr(monitor, "name", getattr(factory, "name", repr(factory)))
            self._disable(monitor, name, "start", exc)
            return
        self.monitors.append(monitor)

    def finish(self, default_reason: str = "unknown") -> None:
        """At interpreter exit: record App::Exit and a clean exit-state, then stop.

        ``default_reason`` names the way out when neither ``sys.exit`` nor an uncaught exception
        was seen (``multiprocessing-worker`` for a pool worker's ``os._exit``).
        """
        if not self.is_running:
            return
        info = self.exit_tracker.final_info()
        if info.reason == "unknown":
            info.reason = default_reason
        extra = to_json({"exit_code": info.exit_code, "reason": info.reason})
        self.event("App::Exit", extra)
        self.store_json(
            c.EXIT_STATE,
            {
                "clean": True,
                "exit_code": info.exit_code,
                "signal": info.signal,
                "reason": info.reason,
                "exception": info.exception,
                "source": "agent",
            },
        )
        self.stop()

    def stop(self) -> None:
        """Stop monitors and the scheduler, flush and close the store. Idempotent."""
        if not self.is_running:
            return
        self.is_running = False
        self.scheduler.stop()
        self._apply_retention()  # if the scheduler never got to it
        for monitor in reversed(self.monitors):
            self._call(monitor, "stop", monitor.stop)
        self.monitors.clear()
        self.exit_tracker.uninstall()
        if self.records is not None:
            try:
                self.records.close()
            except Exception:  # the store already logged; stopping must not fail
                log.warning("hawkwatch: closing the session store failed", exc_info=True)

    def mark_ready(self) -> None:
        """The app says it is ready (listening, first window shown): the launch ends here."""
        if self.is_running and not self.launch.ready:
            self.launch.ready = time.time()
            self.event("App::Ready")
            self.notify("ready")

    def note_main_started(self, unix_time: float) -> None:
        if self.is_running and not self.launch.main_started:
            self.launch.main_started = unix_time
            self.notify("main-started")

    def notify(self, event: str) -> None:
        """Call the monitors listening for a runtime event, behind the firewall."""
        if self.context is None:
            return
        for callback in list(self.context.listeners.get(event, [])):
            try:
                callback()
            except Exception as exc:
                owner = getattr(callback, "__self__", None)
                name = getattr(owner, "name", repr(callback))
                self._disable(owner if owner in self.monitors else None, name, "run", exc)

    # -- fork ------------------------------------------------------------------------------

    def pause_for_fork(self) -> None:
        """Before ``fork()``: stop the scheduler thread so no job is mid-way in the child."""
        if self.is_running:
            self.scheduler.stop()

    def resume_after_fork(self) -> None:
        if self.is_running:
            self.scheduler.start()

    def abandon_in_child(self) -> None:
        """In a forked child: let monitors drop hooks; touch no lock or file of the parent's."""
        self.is_running = False
        self.scheduler.reset_after_fork()
        self.exit_tracker.uninstall()
        for monitor in self.monitors:
            self._call(monitor, "after-fork", monitor.after_fork_child)
        self.monitors.clear()

    def inherit_log_state(self, parent: Agent) -> None:
        """In a forked child: what the parent already logged is recorded but not logged again."""
        self._error_keys = set(parent._error_keys)

    # -- records -------------------------------------------------------------------------

    def event(self, name: str, extra: str | None = None) -> None:
        """A ``custom-time-event`` record in MTHawkeye's shape."""
        now = time.time()
        value: dict[str, Any] = {"time": round(now, 6), "event": name}
        if extra is not None:
            value["extra"] = extra
        self.store_json(c.CUSTOM_TIME_EVENT, value, key=time_key(now))

    def store_json(self, collection: str, value: object, key: str | None = None) -> None:
        """Write a JSON record without ever blocking the caller."""
        if self.records is not None and self.is_running:
            self.records.store_nowait(collection, key or time_key(time.time()), to_json(value))

    def record_error(self, plugin: str, phase: str, message: str, trace: str | None = None) -> None:
        """One ``hawkwatch-error`` record, and one log line per plugin and phase."""
        value: dict[str, Any] = {"plugin": plugin, "phase": phase, "error": message}
        if trace:
            value["traceback"] = trace
        try:
            self.store_json(c.HAWKWATCH_ERROR, value)
        except Exception:  # a broken store must not turn an error report into a crash
            log.debug("hawkwatch: could not record an error", exc_info=True)
        if f"{plugin}:{phase}" not in self._error_keys:
            self._error_keys.add(f"{plugin}:{phase}")
            log.warning("hawkwatch: %s (%s): %s", plugin, phase, message)

    # -- firewall ------------------------------------------------------------------------

    def _job_failed(self, owner: object, exc: BaseException) -> None:
        name = getattr(owner, "name", repr(owner))
        self._disable(owner if owner in self.monitors else None, name, "run", exc)

    def _disable(self, monitor: Any, name: str, phase: str, exc: BaseException) -> None:
        trace = "".join(traceback.format_exception(exc))
        self.record_error(str(name), phase, f"{type(exc).__name__}: {exc}; monitor disabled", trace)
        if monitor is None:
            return
        self.scheduler.cancel(monitor)
        if monitor in self.monitors:
            self.monitors.remove(monitor)
        self._call(monitor, "stop", monitor.stop)

    def _call(self, monitor: Monitor, phase: str, call: Callable[[], None]) -> None:
        try:
            call()
        except Exception as exc:
            name = getattr(monitor, "name", repr(monitor))
            self.record_error(str(name), phase, f"{type(exc).__name__}: {exc}")


def new_launch_times(interpreter_ready: float = 0.0) -> LaunchTimes:
    """Launch milestones known at agent start: process start from the OS."""
    return LaunchTimes(process_start=process_start_time(), interpreter_ready=interpreter_ready)


class AgentHolder:
    """The process-wide agent slot, with the lock guarding start and stop."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.agent: Agent | None = None
        self.extra_factories: list[MonitorFactory] = []
