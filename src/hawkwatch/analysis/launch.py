"""Launch breakdown: an ``app-launch`` record split into ordered phases.

Two layouts share one record type (``model.records.AppLaunch``): hawkwatch's ``process_start …
ready`` with ``duration_s``, and MTHawkeye's ``appLaunchTime … appDidLaunchExitTime``.

Times are Unix seconds, 0 meaning "not captured". Captured phases are put in time order (the
declared order breaks ties): dyld interleaves ``+load`` methods and static initializers across
images, so the declared order is not always the order they happened in.
"""

from __future__ import annotations

from hawkwatch.model.records import AppLaunch
from hawkwatch.model.report import LaunchBreakdown, LaunchPhase


def build_launch_breakdown(
    launch: AppLaunch, *, fallback_origin: float | None = None
) -> LaunchBreakdown:
    """The breakdown of one ``app-launch`` record (decoded records have a layout and a phase).

    Offsets are measured from the process start field, else from ``fallback_origin`` (the
    session start), else from the first captured phase.
    """
    layout = launch.layout or "hawkwatch"
    milestones = launch.phases()
    captured = sorted(
        (moment, index, name, label)
        for index, (name, label, moment) in enumerate(milestones)
        if moment > 0
    )
    not_captured = tuple(label for _, label, moment in milestones if moment <= 0)
    start_moment = milestones[0][2]
    _, end_label, end_moment = milestones[-1]
    origin = start_moment if start_moment > 0 else fallback_origin
    if origin is None:
        origin = captured[0][0] if captured else 0.0
    phases: list[LaunchPhase] = []
    previous = origin
    for moment, _, name, label in captured:
        phases.append(
            LaunchPhase(
                name=name,
                label=label,
                time=moment,
                offset_ms=(moment - origin) * 1000,
                delta_ms=(moment - previous) * 1000,
            )
        )
        previous = moment
    duration_ms = None
    if layout == "hawkwatch" and launch.duration_s is not None and launch.duration_s > 0:
        duration_ms = launch.duration_s * 1000
    elif start_moment > 0 and end_moment > 0:
        duration_ms = (end_moment - start_moment) * 1000
    return LaunchBreakdown(
        layout=layout,
        origin_time=origin,
        duration_ms=duration_ms,
        phases=tuple(phases),
        not_captured=not_captured,
        end_label=end_label,
    )
