"""What a monitor is, and what it is given: the small contract every plugin implements.

A monitor never owns a thread: periodic work goes to ``ctx.every``, work that need not delay the
program's start to ``ctx.defer`` (both run on the scheduler thread); records go through
``ctx.write`` (on the scheduler thread) or ``ctx.write_nowait`` (from any other context: user
threads, ``gc`` callbacks, signal handlers). The runtime catches whatever a monitor raises.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from hawkwatch.config import Config
from hawkwatch.model.plain_records import APP_LAUNCH, PlainRecord, json_text
from hawkwatch.store import RecordStore, Session

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any, ClassVar, Protocol

    from hawkwatch.store.records import WritableRecord
else:
    from hawkwatch._runtime_typing import Protocol


class Monitor(Protocol):
    """A plugin: started once with a context, stopped once, told about forks."""

    name: ClassVar[str]
    """Config section and the name used in ``hawkwatch-error`` records."""

    def start(self, ctx: AgentContext) -> None: ...

    def stop(self) -> None:
        """Idempotent; release hooks and flush what the monitor holds."""

    def after_fork_child(self) -> None:
        """In a forked child, before the new agent starts: drop global hooks, threads, locks."""


class LaunchTimes:
    """Milestones of this process's launch, Unix seconds; 0 when not captured."""

    __slots__ = ("agent_started", "interpreter_ready", "main_started", "process_start", "ready")

    def __init__(
        self,
        process_start: float = 0.0,
        interpreter_ready: float = 0.0,
        agent_started: float = 0.0,
        main_started: float = 0.0,
        ready: float = 0.0,
    ) -> None:
        self.process_start = process_start
        self.interpreter_ready = interpreter_ready
        self.agent_started = agent_started
        self.main_started = main_started
        self.ready = ready

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in _LAUNCH_FIELDS)
        return f"LaunchTimes({fields})"

    def as_record(self) -> PlainRecord:
        """The ``app-launch`` record (``AppLaunch``'s bytes; written before the typed model
        is loaded, see ``model.plain_records``)."""
        duration = self.ready - self.process_start if self.ready and self.process_start else 0.0
        return APP_LAUNCH(
            process_start=self.process_start,
            interpreter_ready=self.interpreter_ready,
            agent_started=self.agent_started,
            main_started=self.main_started,
            ready=self.ready,
            duration_s=round(duration, 6),
        )


_LAUNCH_FIELDS = ("process_start", "interpreter_ready", "agent_started", "main_started", "ready")


_CONTEXT_FIELDS = (
    "config",
    "session",
    "records",
    "launch",
    "every",
    "is_supervised",
    "once",
    "listeners",
    "wall_clock",
)


class AgentContext:
    """Everything a monitor may use; built by the runtime for one session.

    ``every(interval_s, run, owner, jitter=None)`` is ``Scheduler.every``; ``once(run, owner)``
    ``Scheduler.once``.
    """

    def __init__(
        self,
        *,
        config: Config,
        session: Session,
        records: RecordStore,
        launch: LaunchTimes,
        every: Callable[..., None],
        is_supervised: bool = False,
        once: Callable[[Callable[[], object], object], None] | None = None,
        listeners: dict[str, list[Callable[[], None]]] | None = None,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.config = config
        self.session = session
        self.records = records
        self.launch = launch
        self.every = every
        self.is_supervised = is_supervised
        self.once = once
        self.listeners: dict[str, list[Callable[[], None]]] = (
            listeners if listeners is not None else {}
        )
        self.wall_clock = wall_clock

    def replace(self, **changes: Any) -> AgentContext:
        """A copy with some fields changed (a monitor started with another config)."""
        fields = {name: getattr(self, name) for name in _CONTEXT_FIELDS}
        return AgentContext(**{**fields, **changes})

    def write(self, record: WritableRecord, key: str | None = None) -> None:
        """Write a typed record now (use on the scheduler thread); ``key``: for ``anr`` parts."""
        self.records.write(record, key)

    def write_nowait(self, record: WritableRecord, key: str | None = None) -> None:
        """Write a typed record without ever blocking (any thread, callbacks, signal handlers)."""
        self.records.write_nowait(record, key)

    def defer(self, run: Callable[[], object], owner: object) -> None:
        """Run ``run`` soon on the scheduler thread (now, if there is none), not at start.

        For start-up work nothing needs at once: reading the platform's limits, the first
        sample, tidying old sessions. Such work must not be something a public call or a hook
        depends on (those must work from the first instruction after ``start``).
        """
        if self.once is None:
            run()
        else:
            self.once(run, owner)

    def on(self, event: str, callback: Callable[[], None]) -> None:
        """Be called on a runtime event: ``main-started``, ``ready``."""
        self.listeners.setdefault(event, []).append(callback)


class DeferredFailure:
    """A failure caught where nothing may escape (inside ``gc``, an import, a signal handler).

    The hook stores the first exception; ``raise_if_failed``, scheduled with ``ctx.every``,
    raises it on the scheduler thread, where the runtime's firewall disables the monitor.
    """

    def __init__(self) -> None:
        self.error: Exception | None = None

    def capture(self, exc: Exception) -> None:
        if self.error is None:
            self.error = exc

    def raise_if_failed(self) -> None:
        if self.error is not None:
            raise self.error


def time_key(unix_time: float) -> str:
    """Record key for a point in time (``%.6f`` Unix seconds)."""
    return f"{unix_time:.6f}"


def to_json(value: Any) -> str:
    """Compact JSON for a record value (``json.dumps``'s text: ``plain_records.json_text``, so
    ``hawkwatch.event`` never imports ``json`` on the caller's thread)."""
    return json_text(value, ensure_ascii=False, default=str)
