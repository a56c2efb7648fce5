"""The report's CPU section: high-load episodes and the profiler's windows → ``CpuSummary``.

Pure: the caller reads the episodes and windows (``formats.hawkeye_cpu``,
``formats.cpu_profile``, which also open side files) and passes them with the session start.
Episodes are listed longest first; each shows its ``top`` costliest frames by self samples.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hawkwatch.analysis.calltree import build_profile_tree, top_frames, windows_for
from hawkwatch.analysis.shares import wilson_interval
from hawkwatch.model.profile import PY_SPY, CallNode, Frame, HighLoadEpisode, Profile, frame_label
from hawkwatch.model.report import (
    CpuFrameRow,
    CpuSummary,
    HighLoadRow,
    ProfilerSummary,
    ShortBurn,
)


def build_cpu_summary(
    episodes: Sequence[HighLoadEpisode],
    profiles: Sequence[Profile],
    *,
    start: float | None,
    skipped: int = 0,
    max_rows: int = 10,
    top: int = 3,
    profiler_top: int = 10,
    short_burn: Mapping[str, Any] | None = None,
    outside_note: str | None = None,
) -> CpuSummary | None:
    """None when the session has neither episodes, profiler windows, a short burn nor a note.

    ``short_burn`` is the agent's note of the longest burn shorter than the episode minimum
    (``session.json`` → ``cpu.longest_short_burn``); shown only when no episode was recorded.
    ``outside_note`` says why py-spy's samples are missing (``outside_sampler_note``).
    """
    burn = _short_burn(short_burn) if not episodes else None
    if not episodes and not profiles and not skipped and burn is None and outside_note is None:
        return None
    longest = sorted(episodes, key=lambda e: -e.lasting_s)[:max_rows]
    rows = tuple(
        HighLoadRow(
            key=episode.key,
            time=episode.start_time,
            offset_s=None if start is None else round(episode.start_time - start, 6),
            lasting_s=episode.lasting_s,
            average_percent=episode.average_percent,
            samples=sum(root.count for root in episode.roots),
            top_frames=_frames(episode.roots, top),
            threads=tuple(f"{t.name} {t.share * 100:.0f}%" for t in episode.threads[:3]),
        )
        for episode in longest
    )
    profiler = None
    if profiles:
        used = windows_for(profiles, "cpu")  # the samples the shares come from, and no others
        tree = build_profile_tree(used, "cpu")
        duration = sum(p.duration_s for p in used)
        samples = sum(p.samples for p in used)
        cost = sum(p.cost_s for p in used)
        outside = all(p.sampler == PY_SPY for p in used)  # samples there are thread stacks
        profiler = ProfilerSummary(
            windows=len(used),
            samples=samples,
            duration_s=duration,
            rate_hz=_rate(used, outside),
            budget=max(p.budget for p in used),
            cost_percent=cost / duration * 100 if duration > 0 else 0.0,
            top_frames=_frames(tree.roots, profiler_top),
            mode_samples=tree.total,
            sampler=tree.sampler,
        )
    return CpuSummary(rows, len(episodes), profiler, skipped, burn, outside_note)


def outside_sampler_note(metadata: Mapping[str, Any]) -> str | None:
    """One line when py-spy, run by ``hawkwatch run``, could not sample the process, from
    ``session.json``: the supervisor's ``profiler_outside`` (its first error; the program's
    session only) and the agent's ``profiler.outside_stopped`` (every process it told). None
    when py-spy sampled, or was not asked to."""
    outside = metadata.get("profiler_outside")
    outside = outside if isinstance(outside, Mapping) else {}
    profiler = metadata.get("profiler")
    profiler = profiler if isinstance(profiler, Mapping) else {}
    stopped = profiler.get("outside_stopped")
    stopped = stopped if isinstance(stopped, Mapping) else None
    windows = outside.get("windows")
    windows = windows if isinstance(windows, int) and not isinstance(windows, bool) else 0
    errors = outside.get("errors")
    first_error = errors[0] if isinstance(errors, list) and errors else None
    gave_up = outside.get("gave_up") or (first_error if outside and not windows else None)
    if stopped is None and not gave_up:
        return None
    reason = (stopped or {}).get("reason") or gave_up
    said = (
        f"py-spy stopped sampling after {windows} window{'s' if windows != 1 else ''}"
        if windows
        else "py-spy could not sample this process"
    )
    if reason:
        said += f" ({str(reason)[:200]})"
    if stopped is None:  # the program ended before its sampler looked (about once a second)
        return f"{said}; the profile is the in-process sampler's alone, at its share of the budget"
    rate, budget = profiler.get("rate_hz"), profiler.get("budget")
    if isinstance(rate, int | float) and rate > 0:
        at = f"at the fixed profiler.rate_hz ({rate:g} Hz)"
    elif isinstance(budget, int | float):
        at = f"at the whole profiler.budget ({budget:g} of a core)"
    else:
        at = "at the whole budget"
    since = "from then on " if windows else ""
    return f"{said}; {since}the profile is the in-process sampler's, {at}"


def _rate(used: Sequence[Profile], outside: bool) -> float:
    duration = sum(p.duration_s for p in used)
    if duration <= 0:
        return 0.0
    if outside:
        return sum(p.rate_hz * p.duration_s for p in used) / duration
    return sum(p.samples for p in used) / duration


def _short_burn(value: Mapping[str, Any] | None) -> ShortBurn | None:
    if not isinstance(value, Mapping):
        return None
    try:
        return ShortBurn(
            start_time=float(value["start"]),
            lasting_s=float(value["lasting_s"]),
            average_percent=float(value["average_percent"]),
            min_duration_s=float(value["min_duration_s"]),
        )
    except (KeyError, TypeError, ValueError):
        return None


def _frames(roots: Sequence[CallNode], limit: int) -> tuple[CpuFrameRow, ...]:
    total = sum(root.count for root in roots)
    rows: list[CpuFrameRow] = []
    for cost in top_frames(roots, limit, by_function=True):
        low, high = wilson_interval(cost.self_count, total)
        rows.append(
            CpuFrameRow(
                _label(cost.frame),
                round(cost.self_proportion * 100, 2),
                round(cost.total_proportion * 100, 2),
                round(low * 100, 2),
                round(high * 100, 2),
            )
        )
    return tuple(rows)


def _label(frame: Frame) -> str:
    if isinstance(frame, int) or frame.line:
        return frame_label(frame)
    return f"{frame.func} ({frame.file})" if frame.file else frame.func
