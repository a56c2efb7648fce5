"""The launch: the process start (``launch-time``) and its milestones (``app-launch``).

``app-launch`` has two field sets in one type (``docs/collections.md``, ``formats/hawkeye.md``
§4): hawkwatch's ``process_start … ready`` plus ``duration_s``, and MTHawkeye's
``appLaunchTime … appDidLaunchExitTime``. Times are Unix seconds, 0 meaning "not captured".
"""

from __future__ import annotations

from typing import Any, ClassVar, Final, Literal, Self

from hawkwatch.model import collections as c
from hawkwatch.model.record import Record
from hawkwatch.model.records._codec import (
    Finite,
    JsonRecord,
    RecordError,
    TypedRecord,
    parse_number,
)

LaunchLayout = Literal["hawkwatch", "mthawkeye"]

#: (field, label) of each milestone, in launch order, per layout.
HAWKWATCH_PHASES: Final = (
    ("process_start", "process start"),
    ("interpreter_ready", "interpreter ready"),
    ("agent_started", "agent started"),
    ("main_started", "main started"),
    ("ready", "ready"),
)
MTHAWKEYE_PHASES: Final = (
    ("appLaunchTime", "process start"),
    ("firstObjcLoadStartTime", "first +load start"),
    ("lastObjcLoadEndTime", "last +load end"),
    ("staticInitializerStartTime", "static initializers start"),
    ("staticInitializerEndTime", "static initializers end"),
    ("applicationInitTime", "UIApplication init"),
    ("appDidLaunchEnterTime", "didFinishLaunching start"),
    ("appDidLaunchExitTime", "didFinishLaunching end"),
)


class LaunchTime(TypedRecord, kw_only=True, frozen=True):
    """The process start, written by the store when a records file is created.

    Key and value are the same number, written as ``repr`` of the time rounded to µs
    (MTHawkeye: ``NSNumber``'s description); readers use the key.
    """

    collection: ClassVar[str] = c.LAUNCH_TIME

    start: float

    def record_key(self) -> str:
        return repr(round(self.start, 6))

    def encode_value(self) -> bytes:
        return self.record_key().encode()

    @classmethod
    def from_record(cls, record: Record) -> Self:
        return cls(start=parse_number(record.key))


class AppLaunch(JsonRecord, kw_only=True, frozen=True):
    """Launch milestones; key ``"0"``. The agent rewrites it as launch goes on: the last wins.

    hawkwatch writes its six fields always (0 when not captured); MTHawkeye writes its eight.
    """

    collection: ClassVar[str] = c.APP_LAUNCH

    process_start: Finite | None = None
    interpreter_ready: Finite | None = None
    agent_started: Finite | None = None
    main_started: Finite | None = None
    ready: Finite | None = None
    duration_s: Finite | None = None
    appLaunchTime: Finite | None = None
    firstObjcLoadStartTime: Finite | None = None
    lastObjcLoadEndTime: Finite | None = None
    staticInitializerStartTime: Finite | None = None
    staticInitializerEndTime: Finite | None = None
    applicationInitTime: Finite | None = None
    appDidLaunchEnterTime: Finite | None = None
    appDidLaunchExitTime: Finite | None = None

    def record_key(self) -> str:
        return "0"

    @classmethod
    def from_value(cls, data: Any, key: str = "") -> Self:
        launch = super().from_value(data, key)
        if launch.layout is None:
            raise RecordError("not a hawkwatch or MTHawkeye app-launch value")
        if not any(moment > 0 for _, _, moment in launch.phases()):
            raise RecordError("app-launch captured no phase")
        return launch

    @property
    def layout(self) -> LaunchLayout | None:
        """Which field set the value has (hawkwatch's when it has any of both)."""
        if any(getattr(self, name) is not None for name, _ in HAWKWATCH_PHASES):
            return "hawkwatch"
        if any(getattr(self, name) is not None for name, _ in MTHAWKEYE_PHASES):
            return "mthawkeye"
        return None

    def phases(self) -> tuple[tuple[str, str, float], ...]:
        """``(field, label, time)`` of the layout's milestones; 0 for those not captured."""
        names = HAWKWATCH_PHASES if self.layout == "hawkwatch" else MTHAWKEYE_PHASES
        return tuple((name, label, getattr(self, name) or 0.0) for name, label in names)
