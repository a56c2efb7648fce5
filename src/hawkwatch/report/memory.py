"""Renderers of the memory report: plain text for ``hawkwatch memory`` and its JSON twin.

JSON (pinned): ``{"leaks": [{"frames": [{"function", "file", "line"}] innermost first,
"growth_bytes", "live_bytes", "count", …}], "growing_types": [{"type", "count_growth",
"referrer_path": [str, …] root first, …}], "top_stacks": [{"frames", "bytes", "count"}],
"tracing": {"windows": […], "snapshots", "cost_s", "tracemalloc_bytes"}, "growth": […],
"rss": {"first_bytes", "last_bytes", "peak_bytes"}}``. Keys may be added, never renamed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

import msgspec

from hawkwatch.model.memory_report import MemoryReport
from hawkwatch.model.records.memory import MemFrame
from hawkwatch.report.allocations import size_text

MAX_FRAMES = 8
NATIVE_SHOWN = 2


def to_json_document(report: MemoryReport) -> dict[str, Any]:
    """``hawkwatch memory --json``: the report section with ``format`` first."""
    return {"format": "hawkwatch-memory", "format_version": 1, **to_json_dict(report)}


def to_json_dict(report: MemoryReport) -> dict[str, Any]:
    def plain(value: Any) -> Any:
        return msgspec.to_builtins(value)

    return {
        "growth": [plain(g) for g in report.growth],
        "leaks": [
            {
                "frames": [plain(f) for f in leak.frames],
                "growth_bytes": leak.growth_bytes,
                "live_bytes": leak.live_bytes,
                "count": leak.count,
                "rate_bytes_per_s": leak.rate_bytes_per_s,
                "grown": leak.grown,
                "steps": leak.steps,
            }
            for leak in report.leaks
        ],
        "growing_types": [
            {
                "type": t.type,
                "count": t.count,
                "count_growth": t.count_growth,
                "referrer_path": list(t.referrer_path),
                "path_note": t.path_note or None,
            }
            for t in report.growing_types
        ],
        "top_stacks": [plain(s) for s in report.top_stacks],
        "tracing": {
            "windows": [
                {
                    "start": w.start,
                    "reason": w.reason,
                    "end": w.end,
                    "end_reason": w.end_reason,
                    "snapshots": w.snapshots,
                    "cost_s": w.cost_s,
                    "tracemalloc_bytes": w.tracemalloc_bytes,
                    "owned": w.owned,
                    "backend": w.backend,
                    "capture": w.capture or None,
                    "capture_bytes": w.capture_bytes,
                    "native": w.native,
                }
                for w in report.windows
            ],
            "snapshots": report.snapshots,
            "cost_s": round(sum(w.cost_s for w in report.windows), 6),
            "tracemalloc_bytes": max((w.tracemalloc_bytes for w in report.windows), default=0),
            "notes": list(report.notes),
        },
        "cycles": _cycles_json(report),
        "rss": {
            "first_bytes": report.rss_first_bytes,
            "last_bytes": report.rss_last_bytes,
            "peak_bytes": report.rss_peak_bytes,
        },
    }


def _cycles_json(report: MemoryReport) -> dict[str, Any] | None:
    cycles = report.cycles
    if cycles is None:
        return None
    return {
        "window_s": cycles.window_s,
        "collections": cycles.collections,
        "with_garbage": cycles.with_garbage,
        "collections_per_s": round(cycles.collections_per_s, 3),
        "collected": cycles.collected,
        "gc_s": cycles.gc_s,
        "sampled": cycles.sampled,
        "repeated": [
            {
                "type": r.type,
                "samples": r.samples,
                "objects_per_collection": r.objects_per_sample,
                "objects_per_s": r.per_s,
                "gc_s": r.gc_s,
            }
            for r in cycles.repeated
        ],
        "uncollectable": [{"type": u.type, "count": u.objects} for u in cycles.uncollectable],
        "uncollectable_total": cycles.uncollectable_total,
    }


def render_json(report: MemoryReport, file: TextIO) -> None:
    json.dump(to_json_dict(report), file, indent=2, ensure_ascii=False)
    file.write("\n")


def frame_text(frame: MemFrame) -> str:
    where = f"{frame.file}:{frame.line}" if frame.file else "?"
    return f"{frame.function} ({where})" + (" [native]" if frame.native else "")


def _stack_lines(frames: Sequence[MemFrame], indent: str) -> Iterator[str]:
    """Up to ``MAX_FRAMES`` frames; of a native run (memray) only its innermost
    ``NATIVE_SHOWN``, so the Python frames that made the allocation stay in view."""
    shown: list[MemFrame] = []
    skipped = native_run = 0
    for frame in frames:
        native_run = native_run + 1 if frame.native else 0
        if native_run > NATIVE_SHOWN:
            skipped += 1
            continue
        if native_run == 0 and skipped:
            yield from (f"{indent}{frame_text(f)}" for f in shown)
            yield f"{indent}… {skipped} native frames"
            shown, skipped = [], 0
        shown.append(frame)
    lines = [f"{indent}{frame_text(f)}" for f in shown]
    if skipped:
        lines.append(f"{indent}… {skipped} native frames")
    yield from lines[:MAX_FRAMES]
    if len(lines) > MAX_FRAMES:
        yield f"{indent}… {len(lines) - MAX_FRAMES} more frames"


def memory_lines(report: MemoryReport) -> Iterator[str]:
    """The report as lines of text (shared by ``hawkwatch memory`` and the session report)."""
    if report.rss_first_bytes is not None and report.rss_last_bytes is not None:
        peak = report.rss_peak_bytes or 0
        yield (
            f"resident memory: {size_text(int(report.rss_first_bytes))} → "
            f"{size_text(int(report.rss_last_bytes))} (peak {size_text(int(peak))})"
        )
    for g in report.growth:
        yield (
            f"growth: +{size_text(int(g.growth_bytes))} ({g.growth_percent:+.1f} %) over "
            f"{g.window_s:.0f} s, {size_text(int(g.slope_bytes_per_s))}/s"
        )
    if not report.growth:
        yield "growth: none found"
    for w in report.windows:
        end = f"stopped ({w.end_reason})" if w.end is not None else "still on at the end"
        owner = "" if w.owned else ", the app's own tracemalloc"
        if w.backend == "memray":
            stacks = "native and Python stacks" if w.native else "Python stacks"
            yield (
                f"tracing: memray ({stacks}), started ({w.reason}), {end}; {w.snapshots} "
                f"moments read from its capture {w.capture} ({size_text(w.capture_bytes)}) in "
                f"{w.cost_s * 1000:.0f} ms CPU"
            )
            continue
        yield (
            f"tracing: started ({w.reason}{owner}), {end}; {w.snapshots} snapshots, "
            f"{w.cost_s * 1000:.0f} ms CPU, tracemalloc used {size_text(w.tracemalloc_bytes)}"
        )
    for note in report.notes:
        yield f"tracing: {note}"
    if not report.windows:
        yield "tracing: off (no growth, or memory.trace=never)"
    if report.leaks:
        yield ""
        yield "leak suspects (live bytes grew in most snapshots):"
    for leak in report.leaks:
        yield (
            f"  #{leak.rank + 1} +{size_text(leak.growth_bytes)} "
            f"({size_text(int(leak.rate_bytes_per_s))}/s), {size_text(leak.live_bytes)} live in "
            f"{leak.count:,} blocks, grew {leak.grown}/{leak.steps}"
        )
        yield from _stack_lines(leak.frames, "      ")
    if report.growing_types:
        yield ""
        yield "growing types (live instances):"
    for t in report.growing_types:
        yield f"  {t.type}: {t.count:,} (+{t.count_growth:,})"
        if t.referrer_path:
            yield "      held by: " + " ".join(t.referrer_path)
        elif t.path_note:
            yield f"      no referrer path: {t.path_note}"
    yield from _cycle_lines(report)
    if report.top_stacks:
        yield ""
        yield f"top live stacks (snapshot {report.snapshots}):"
    for stack in report.top_stacks[:5]:
        yield f"  {size_text(stack.bytes)} in {stack.count:,} blocks"
        yield from _stack_lines(stack.frames[:3], "      ")


def _cycle_lines(report: MemoryReport) -> Iterator[str]:
    cycles = report.cycles
    if cycles is None or not cycles.has_findings:
        return
    yield ""
    yield (
        f"reference cycles: the collector freed {cycles.collected:,} objects in "
        f"{cycles.with_garbage:,} of {cycles.collections:,} collections "
        f"({cycles.collections_per_s:.1f}/s), {cycles.gc_s * 1000:.0f} ms in gc over "
        f"{cycles.window_s:.0f} s; {cycles.sampled} sampled"
    )
    for r in cycles.repeated:
        yield (
            f"  made again and again: {r.type}: {r.objects_per_sample:,.0f} per collection in "
            f"{r.samples} of {cycles.sampled} sampled, ~{r.per_s:,.0f}/s, ~{r.gc_s * 1000:.0f} ms "
            "of gc"
        )
    if cycles.uncollectable_total:
        kinds = ", ".join(f"{u.type} ×{u.objects:,}" for u in cycles.uncollectable)
        yield f"  uncollectable (gc.garbage): {cycles.uncollectable_total:,}: {kinds}"


def render_console(report: MemoryReport, file: TextIO) -> None:
    for line in memory_lines(report):
        file.write(line + "\n")
