"""What happened to the process: events, the exit, and the agent's own errors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from hawkwatch.model import collections as c
from hawkwatch.model.records._codec import Finite, JsonRecord


class CustomTimeEvent(JsonRecord, kw_only=True, frozen=True):
    """A named moment (MTHawkeye's shape); key: its time. ``extra`` is free text (often JSON).

    hawkwatch's lifecycle events: ``App::Start``, ``App::Ready``, ``App::Exit`` (``extra``:
    ``{"exit_code", "reason"}``), ``hawkwatch::Stop``.
    """

    collection: ClassVar[str] = c.CUSTOM_TIME_EVENT
    time_field: ClassVar[str | None] = "time"

    time: Finite
    event: str | None = None
    extra: str | None = None


class ExitState(JsonRecord, kw_only=True, frozen=True):
    """How the process ended; key: when it was recorded.

    Written by the agent at a clean exit (``reason``, ``exception``) and by ``hawkwatch run``
    after the process ended (``signal_name``): readers take the last one. Every field is always
    written, ``null`` when unknown; ``time`` is in the value since the typed model.
    """

    collection: ClassVar[str] = c.EXIT_STATE
    time_field: ClassVar[str | None] = "time"
    legacy_defaults: ClassVar[Mapping[str, Any]] = dict.fromkeys(
        ("exit_code", "signal", "signal_name", "reason", "exception", "source")
    )

    clean: bool
    exit_code: int | None
    signal: int | None
    signal_name: str | None
    reason: str | None
    exception: str | None
    source: str | None
    time: Finite


class HawkwatchError(JsonRecord, kw_only=True, frozen=True):
    """A monitor that failed (the runtime's firewall) or a problem in the config; key: time."""

    collection: ClassVar[str] = c.HAWKWATCH_ERROR
    time_field: ClassVar[str | None] = "time"

    plugin: str
    phase: str
    error: str
    traceback: str | None = None
    time: Finite
