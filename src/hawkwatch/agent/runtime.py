"""The agent's lifecycle: one ``Agent`` per process, behind a firewall, restarted after fork.

The runtime owns the session, its record store, the scheduler thread and the monitors. It is the
one place that catches what a monitor raises: the monitor is stopped, one ``hawkwatch-error``
record and one log line say why, and the application carries on.

It is also the one place that registers process-wide hooks (``atexit``, ``os.register_at_fork``,
the ``os.exec*`` wrappers of ``exec_hooks``; ``install_process_hooks``). Before ``fork()`` every
monitor's ``before_fork`` runs and every agent thread ends (the OS thread too, so Python 3.12+
sees no extra thread); in the parent they resume; in the child the parent's agent is abandoned
without touching its locks or files, and a new agent with its own session starts. At exit the
agent records App::Exit and closes its store with ``SIGINT`` deferred, so an interrupt during
shutdown never prints a traceback of ours; before an exec it does the same (``exec_hooks``).
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType

from hawkwatch._lazylog import lazy_logger
from hawkwatch.agent import breadcrumbs
from hawkwatch.agent.exit_tracking import ExitTracker, InterruptsDeferred
from hawkwatch.agent.monitor import AgentContext, LaunchTimes, Monitor
from hawkwatch.agent.scheduler import Scheduler
from hawkwatch.config import Config, LoadedConfig
from hawkwatch.model.plain_records import (
    CUSTOM_TIME_EVENT,
    EXIT_STATE,
    HAWKWATCH_ERROR,
    json_value,
)
from hawkwatch.store import RecordStore, Session, _worker
from hawkwatch.store._process import process_start_time
from hawkwatch.store.session import remove_old_sessions

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any, Final

    from hawkwatch.store.records import WritableRecord

log = lazy_logger(__name__)

MonitorFactory = Callable[[], Monitor]
ERRORS_PER_MINUTE: Final = 10  # hawkwatch-error records per plugin and minute; the rest are counted
THREAD_PREFIX: Final = "hawkwatch-"
THREAD_EXIT_WAIT_S: Final = 0.1  # before fork: how long to wait for a stopped thread's OS thread


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
        self._error_budget: dict[str, tuple[float, int]] = {}  # plugin -> (minute start, count)
        self.errors_dropped = 0
        self.pid = os.getpid()
        self._retention_due = False
        self.retention_delay_s = 0.0  # how long after ``schedule_retention`` it runs
        self.supervisor_tidies = False  # ``hawkwatch run`` removes old sessions after the exit
        self.is_running = False

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        """Create the session and start every monitor; raises only if the store cannot open."""
        config = self.config
        home = config.home
        is_child = self.parent_session is not None
        self.session = Session.create(
            root=os.path.join(home, "sessions") if home else None,
            app_name=config.app.name,
            app_version=config.app.version,
            start_time=self.launch.process_start or None,
            keep=None,  # retention runs on the scheduler thread, after start (not listed now)
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
        out, and the supervisor removes its empty session. There it runs
        ``retention_delay_s`` later, and not at stop: the supervisor tidies after the program
        ends (``supervisor_tidies``), so a short program never pays for it.
        """
        if self.is_running:
            self._retention_due = True
            self.scheduler.once(self._apply_retention, self, self.retention_delay_s)

    def _apply_retention(self) -> None:
        """Tidy old sessions (deferred: removing folders need not delay the program's start;
        a process too short for the scheduler to get to it does it at stop)."""
        if self.session is None or not self._retention_due:
            return
        self._retention_due = False
        sessions = self.config.sessions
        try:
            remove_old_sessions(
                os.path.dirname(self.session.folder),
                keep=sessions.keep,
                max_age_days=sessions.max_age_days,
                protect=self.session.folder,
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
        # ``to_json``'s text, without importing ``json`` at exit
        extra = f'{{"exit_code":{json_value(info.exit_code)},"reason":{json_value(info.reason)}}}'
        self.event("App::Exit", extra)
        self.write(  # the typed model's records, written without loading it (plain_records)
            EXIT_STATE(
                clean=True,
                exit_code=info.exit_code,
                signal=info.signal,
                signal_name=None,
                reason=info.reason,
                exception=info.exception,
                source="agent",
                time=round(time.time(), 6),
            )
        )
        self.stop()

    def stop(self) -> None:
        """Stop monitors and the scheduler, flush and close the store. Idempotent."""
        if not self.is_running:
            return
        self.is_running = False
        self.scheduler.stop()
        if not self.supervisor_tidies:
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

    def before_fork(self) -> int:
        """Before ``fork()``: stop the scheduler and every monitor's threads, so no job is
        mid-way in the child and the process forks single-threaded if the app is.

        Returns how many unnamed OS threads (faulthandler's) the monitors ended: a monitor's
        ``before_fork`` may return that count.
        """
        ended = 0
        if self.is_running:
            self.scheduler.stop()
            for monitor in list(self.monitors):
                before_fork = getattr(monitor, "before_fork", None)
                if before_fork is not None:
                    result = self._call(monitor, "before-fork", before_fork)
                    ended += result if isinstance(result, int) else 0
        return ended

    def after_fork_in_parent(self) -> None:
        if self.is_running:
            for monitor in list(self.monitors):
                self._call(
                    monitor, "after-fork", getattr(monitor, "after_fork_in_parent", _nothing)
                )
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

    def successor(self) -> Agent:
        """A new agent with a session of its own naming this one's: in a forked child, or
        after an exec that failed (``exec_hooks``)."""
        late = [f for f in HOLDER.extra_factories if f not in self.factories]
        agent = Agent(
            self.loaded,
            LaunchTimes(process_start=process_start_time()),
            [*self.factories, *late],
            parent_session=self.session.name if self.session else None,
        )
        agent.inherit_log_state(self)
        agent.start()
        return agent

    # -- records -------------------------------------------------------------------------

    def event(self, name: str, extra: str | None = None) -> None:
        """A ``custom-time-event`` record in MTHawkeye's shape."""
        breadcrumbs.note("event", name)  # crash records show the last events (issue 15)
        self.write(CUSTOM_TIME_EVENT(time=round(time.time(), 6), event=name, extra=extra))

    def write(self, record: WritableRecord) -> None:
        """Write a typed record without ever blocking the caller."""
        if self.records is not None and self.is_running and self.is_own_process():
            self.records.write_nowait(record)

    def is_own_process(self) -> bool:
        """False in a child forked without fork hooks (``libc.fork()``): it goes quiet for good,
        never writing into the parent's session."""
        if os.getpid() == self.pid:
            return True
        if self.is_running:
            self.is_running = False
            log.warning(
                "hawkwatch: this process (pid %d) was forked from %d without fork hooks; "
                "it no longer writes into the parent's session",
                os.getpid(),
                self.pid,
            )
        return False

    def record_error(self, plugin: str, phase: str, message: str, trace: str | None = None) -> None:
        """One ``hawkwatch-error`` record (at most ``ERRORS_PER_MINUTE`` per plugin and minute,
        the others counted in ``errors_dropped``), and one log line per plugin and phase."""
        now = time.monotonic()
        since, count = self._error_budget.get(plugin, (now, 0))
        if now - since >= 60.0:
            since, count = now, 0
        self._error_budget[plugin] = (since, count + 1)
        if count < ERRORS_PER_MINUTE:
            error = HAWKWATCH_ERROR(
                plugin=plugin,
                phase=phase,
                error=message,
                traceback=trace or None,
                time=round(time.time(), 6),
            )
            try:
                self.write(error)
            except Exception:  # a broken store must not turn an error report into a crash
                log.debug("hawkwatch: could not record an error", exc_info=True)
        else:
            self.errors_dropped += 1
        if f"{plugin}:{phase}" not in self._error_keys:
            self._error_keys.add(f"{plugin}:{phase}")
            log.warning("hawkwatch: %s (%s): %s", plugin, phase, message)

    # -- firewall ------------------------------------------------------------------------

    def _job_failed(self, owner: object, exc: BaseException) -> None:
        name = getattr(owner, "name", repr(owner))
        self._disable(owner if owner in self.monitors else None, name, "run", exc)

    def _disable(self, monitor: Any, name: str, phase: str, exc: BaseException) -> None:
        trace = _format_exception(exc)
        self.record_error(str(name), phase, f"{type(exc).__name__}: {exc}; monitor disabled", trace)
        if monitor is None:
            return
        self.scheduler.cancel(monitor)
        if monitor in self.monitors:
            self.monitors.remove(monitor)
        self._call(monitor, "stop", monitor.stop)

    def _call(self, monitor: Monitor, phase: str, call: Callable[[], object]) -> object:
        try:
            return call()
        except Exception as exc:
            name = getattr(monitor, "name", repr(monitor))
            self.record_error(str(name), phase, f"{type(exc).__name__}: {exc}")
            return None


def _format_exception(exc: BaseException) -> str:
    """The traceback's text; ``traceback`` (with ``linecache`` and ``tokenize``, ~1.5 ms) is
    imported at the first error, as ``logging`` is at the first log line (``_lazylog``)."""
    import traceback

    return "".join(traceback.format_exception(exc))


def new_launch_times(interpreter_ready: float = 0.0) -> LaunchTimes:
    """Launch milestones known at agent start: process start from the OS."""
    return LaunchTimes(process_start=process_start_time(), interpreter_ready=interpreter_ready)


def _nothing() -> None:
    """The default of an optional monitor lifecycle method."""


class AgentHolder:
    """The process-wide agent slot, with the lock guarding start and stop."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.agent: Agent | None = None
        self.extra_factories: list[MonitorFactory] = []


HOLDER: Final = AgentHolder()


def report_error(plugin: str, phase: str, exc: BaseException | str) -> None:
    """Leave a trace of an exception agent code chose to survive: a ``hawkwatch-error`` record
    in the running agent (rate-limited per plugin), else a debug log line. Never raises."""
    try:
        message = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
        agent = HOLDER.agent
        if agent is not None and agent.is_running:
            trace = None if isinstance(exc, str) else _format_exception(exc)
            agent.record_error(plugin, phase, message, trace)
        else:
            log.debug("hawkwatch: %s (%s): %s", plugin, phase, message)
    except Exception:  # the error path of the error path: nothing more can be done
        return


# -- process-wide hooks: the only atexit and at-fork registrations of the agent ---------------

_hooks_installed = False


def install_process_hooks() -> None:
    """Register the ``atexit`` and ``os.register_at_fork`` hooks, once per process; wrap
    ``os.execv``/``os.execve`` at each start, in front of whatever the app has put there since."""
    global _hooks_installed
    from hawkwatch.agent import exec_hooks  # it needs this module loaded first

    exec_hooks.install()
    if _hooks_installed:
        return
    _hooks_installed = True
    atexit.register(at_exit)
    os.register_at_fork(
        before=_before_fork,
        after_in_parent=_after_fork_in_parent,
        after_in_child=_after_fork_in_child,
    )


def at_exit() -> None:
    """Record the exit and flush the store; an interrupt meanwhile is deferred, never raised."""
    try:
        with InterruptsDeferred():
            agent = HOLDER.agent
            if agent is not None and agent.is_own_process():
                _guarded("exit", agent.finish)
            _guarded("exit", _worker.flush_all_at_exit)
    except BaseException:
        return


def _guarded(phase: str, call: Callable[[], object]) -> None:
    try:
        call()
    except Exception as exc:
        log.warning("hawkwatch: %s failed: %s: %s", phase, type(exc).__name__, exc)


def _before_fork() -> None:
    had_logging = "logging" in sys.modules
    threads, tasks = _own_threads(), _os_thread_count()
    unnamed = 0
    agent = HOLDER.agent
    if agent is not None and agent.is_own_process():
        try:
            unnamed = agent.before_fork()
        except Exception as exc:
            log.warning("hawkwatch: before fork failed: %s: %s", type(exc).__name__, exc)
    _guarded("before fork", _worker.before_fork)
    _wait_until_threads_gone(threads, tasks - len(threads) - unnamed if tasks else 0)
    if not had_logging:
        _stand_in_for_logging_before_fork()


def _stand_in_for_logging_before_fork() -> None:
    """Take ``logging``'s lock if it was imported while this fork's before-hooks ran.

    The agent imports ``logging`` at its first message, which may come from one of its threads
    as it is being stopped for the fork. ``logging`` then registers its fork hooks too late for
    this fork's before-hook but in time for its after-hooks, which release a lock never taken:
    "cannot release un-acquired lock" on the app's stderr, in parent and child. Taking the lock
    here, as that hook would have, pairs them. Skipped while the module is still being executed
    (its hooks may not be registered yet, and a lock nobody releases would hang logging).
    """
    logging = sys.modules.get("logging")
    spec = getattr(logging, "__spec__", None)
    if logging is None or getattr(spec, "_initializing", False):
        return
    take = getattr(logging, "_prepareFork", None) or getattr(logging, "_acquireLock", None)
    if callable(take):
        _guarded("before fork", take)


def _after_fork_in_parent() -> None:
    """Resume the agent's threads once ``os.fork`` has returned.

    Python 3.13+ decides whether to warn that the process is multi-threaded after running these
    hooks, so there the threads are restarted by a one-shot profile hook at the forking thread's
    next call or return (the app's first step after ``fork()``). If the thread is profiled
    already (a profiler, coverage), they restart now.
    """
    caller = _fork_caller() if sys.version_info >= (3, 13) else None
    if caller is None or sys.getprofile() is not None:
        _resume_in_parent()
        return
    at_fork = caller.f_lasti  # the caller stays on its call of os.fork while hooks run

    def resume_once(frame: FrameType, event: str, arg: object) -> None:
        if caller.f_lasti == at_fork and frame is not caller:
            return  # still inside os.fork: another at-fork hook
        sys.setprofile(None)
        _resume_in_parent()

    sys.setprofile(resume_once)


def _fork_caller() -> FrameType | None:
    try:
        return sys._getframe(2)  # os.fork's caller: this hook's caller's caller
    except ValueError:
        return None


def _resume_in_parent() -> None:
    _guarded("after fork", _worker.after_fork_in_parent)
    agent = HOLDER.agent
    if agent is not None and agent.is_own_process():
        _guarded("after fork", agent.after_fork_in_parent)


def _after_fork_in_child() -> None:
    _guarded("after fork", _worker.after_fork_in_child)
    HOLDER.lock = threading.Lock()  # the parent may have held it; never acquire the old one
    old, HOLDER.agent = HOLDER.agent, None
    if old is None or not old.is_running:
        return
    try:
        old.abandon_in_child()
        agent = old.successor()
        HOLDER.agent = agent
        _finish_with_multiprocessing(agent)
    except Exception as exc:
        log.warning("hawkwatch: the agent did not restart in the forked child: %s", exc)


def _own_threads() -> list[int]:
    """Native ids of the agent's running threads (named ``hawkwatch-…``)."""
    return [
        t.native_id
        for t in threading.enumerate()
        if t.name.startswith(THREAD_PREFIX) and t.native_id is not None
    ]


def _os_thread_count() -> int:
    """Threads of this process as the OS counts them (Linux ``/proc``); 0 when unknown."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 0


def _wait_until_threads_gone(native_ids: list[int], expected_count: int) -> None:
    """Wait briefly until the OS has reaped the threads just stopped.

    ``Thread.join`` (and faulthandler's cancel) return before the OS thread is gone; Python
    3.12+ counts OS threads when it decides to warn that a forking process is multi-threaded.
    Linux only (``/proc``); threads that do not end within ``THREAD_EXIT_WAIT_S`` are left alone.
    """
    if not native_ids and expected_count <= 0:
        return
    deadline = time.monotonic() + THREAD_EXIT_WAIT_S
    pending = [f"/proc/self/task/{tid}" for tid in native_ids]
    while time.monotonic() < deadline:
        pending = [path for path in pending if os.path.exists(path)]
        if not pending and (expected_count <= 0 or _os_thread_count() <= expected_count):
            return
        time.sleep(0.0002)


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
