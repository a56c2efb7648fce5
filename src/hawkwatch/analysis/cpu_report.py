"""The report's CPU section: high-load episodes and the profiler's windows → ``CpuSummary``.

Pure: the caller reads the episodes and windows (``formats.hawkeye_cpu``,
``formats.cpu_profile``, which also open side files) and passes them with the session start.
Episodes are listed longest first; each shows its ``top`` costliest frames by self samples.
"""

from __future__ import annotations

from collections.abc import Sequence

from hawkwatch.analysis.calltree import build_profile_tree, top_frames
from hawkwatch.model.profile import CallNode, Frame, HighLoadEpisode, Profile, frame_label
from hawkwatch.model.report import CpuFrameRow, CpuSummary, HighLoadRow, ProfilerSummary


def build_cpu_summary(
    episodes: Sequence[HighLoadEpisode],
    profiles: Sequence[Profile],
    *,
    start: float | None,
    skipped: int = 0,
    max_rows: int = 10,
    top: int = 3,
    profiler_top: int = 10,
) -> CpuSummary | None:
    """None when the session has neither episodes nor profiler windows."""
    if not episodes and not profiles and not skipped:
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
        tree = build_profile_tree(profiles, "cpu")
        duration = sum(p.duration_s for p in profiles)
        samples = sum(p.samples for p in profiles)
        cost = sum(p.cost_s for p in profiles)
        profiler = ProfilerSummary(
            windows=len(profiles),
            samples=samples,
            duration_s=duration,
            rate_hz=samples / duration if duration > 0 else 0.0,
            budget=max(p.budget for p in profiles),
            cost_percent=cost / duration * 100 if duration > 0 else 0.0,
            top_frames=_frames(tree.roots, profiler_top),
        )
    return CpuSummary(rows, len(episodes), profiler, skipped)


def _frames(roots: Sequence[CallNode], limit: int) -> tuple[CpuFrameRow, ...]:
    return tuple(
        CpuFrameRow(
            _label(cost.frame),
            round(cost.self_proportion * 100, 2),
            round(cost.total_proportion * 100, 2),
        )
        for cost in top_frames(roots, limit, by_function=True)
    )


def _label(frame: Frame) -> str:
    if isinstance(frame, int) or frame.line:
        return frame_label(frame)
    return f"{frame.func} ({frame.file})" if frame.file else frame.func
