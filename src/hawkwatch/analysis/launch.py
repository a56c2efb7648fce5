"""Launch breakdown: an ``app-launch`` value split into ordered phases.

Two layouts share one model (``docs/collections.md``, ``formats/hawkeye.md`` §4):

* hawkwatch: ``process_start, interpreter_ready, agent_started, main_started, ready`` and
  ``duration_s`` (ready − process start);
* MTHawkeye: ``appLaunchTime, firstObjcLoadStartTime, lastObjcLoadEndTime,
  staticInitializerStartTime, staticInitializerEndTime, applicationInitTime,
  appDidLaunchEnterTime, appDidLaunchExitTime``.

Times are Unix seconds, 0 meaning "not captured". Captured phases are put in time order (the
declared order breaks ties): dyld interleaves ``+load`` methods and static initializers across
images, so the declared order is not always the order they happened in.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from hawkwatch.analysis._values import optional_number
from hawkwatch.model.report import LaunchBreakdown, LaunchLayout, LaunchPhase


class _Layout(NamedTuple):
    name: LaunchLayout
    start: str
    end: str
    phases: tuple[tuple[str, str], ...]  # (field, label), in launch order


HAWKWATCH_LAYOUT = _Layout(
    "hawkwatch",
    "process_start",
    "ready",
    (
        ("process_start", "process start"),
        ("interpreter_ready", "interpreter ready"),
        ("agent_started", "agent started"),
        ("main_started", "main started"),
        ("ready", "ready"),
    ),
)
MTHAWKEYE_LAYOUT = _Layout(
    "mthawkeye",
    "appLaunchTime",
    "appDidLaunchExitTime",
    (
        ("appLaunchTime", "process start"),
        ("firstObjcLoadStartTime", "first +load start"),
        ("lastObjcLoadEndTime", "last +load end"),
        ("staticInitializerStartTime", "static initializers start"),
        ("staticInitializerEndTime", "static initializers end"),
        ("applicationInitTime", "UIApplication init"),
        ("appDidLaunchEnterTime", "didFinishLaunching start"),
        ("appDidLaunchExitTime", "didFinishLaunching end"),
    ),
)
_LAYOUTS = (HAWKWATCH_LAYOUT, MTHAWKEYE_LAYOUT)


def build_launch_breakdown(
    fields: dict[str, Any], *, fallback_origin: float | None = None
) -> tuple[LaunchBreakdown, tuple[str, ...]]:
    """The breakdown of one ``app-launch`` value, and the reasons for fields it ignored.

    Offsets are measured from the process start field, else from ``fallback_origin`` (the
    session start), else from the first captured phase. ``ValueError`` when the value follows
    neither layout or captured no phase at all.
    """
    layout = next((lay for lay in _LAYOUTS if any(f in fields for f, _ in lay.phases)), None)
    if layout is None:
        raise ValueError("not a hawkwatch or MTHawkeye app-launch value")
    problems: list[str] = []
    captured: list[tuple[float, int, str, str]] = []
    not_captured: list[str] = []
    times: dict[str, float] = {}
    for index, (field, label) in enumerate(layout.phases):
        try:
            moment = optional_number(fields, field)
        except ValueError as exc:
            problems.append(f"app-launch {exc}")
            moment = None
        if moment is None or moment <= 0:
            not_captured.append(label)
            continue
        times[field] = moment
        captured.append((moment, index, field, label))
    if not captured:
        raise ValueError("app-launch captured no phase")
    captured.sort()
    origin = times.get(layout.start, fallback_origin)
    if origin is None:
        origin = captured[0][0]
    phases: list[LaunchPhase] = []
    previous = origin
    for moment, _, field, label in captured:
        phases.append(
            LaunchPhase(
                name=field,
                label=label,
                time=moment,
                offset_ms=(moment - origin) * 1000,
                delta_ms=(moment - previous) * 1000,
            )
        )
        previous = moment
    return (
        LaunchBreakdown(
            layout=layout.name,
            origin_time=origin,
            duration_ms=_duration_ms(layout, fields, times),
            phases=tuple(phases),
            not_captured=tuple(not_captured),
            end_label=dict(layout.phases)[layout.end],
        ),
        tuple(problems),
    )


def _duration_ms(layout: _Layout, fields: dict[str, Any], times: dict[str, float]) -> float | None:
    if layout is HAWKWATCH_LAYOUT:
        try:
            recorded = optional_number(fields, "duration_s")
        except ValueError:
            recorded = None
        if recorded is not None and recorded > 0:
            return recorded * 1000
    if layout.start in times and layout.end in times:
        return (times[layout.end] - times[layout.start]) * 1000
    return None
