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
) -> CpuSummary | None:
    """None when the session has neither episodes, profiler windows nor a short burn.

    ``short_burn`` is the agent's note of the longest burn shorter than the episode minimum
    (``session.json`` → ``cpu.longest_short_burn``); shown only when no episode was recorded.
    """
    burn = _short_burn(short_burn) if not episodes else None
    if not episodes and not profiles and not skipped and burn is None:
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
    return CpuSummary(rows, len(episodes), profiler, skipped, burn)


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
