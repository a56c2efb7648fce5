"""Renderers of the live-allocation report: console text and its JSON twin.

JSON (pinned): ``{"source", "total_live_bytes", "live_count", "categories": [{"name",
"bytes", "count", "stacks": [{"bytes", "count", "frames": [{"address", "image", "function",
"file", "line"}]}]}]}`` with frames innermost first; addresses are ``0x…`` strings (null for
Python frames). Further keys (``position``, ``top_by_bytes``, ``notes``, …) may be added.
"""

from __future__ import annotations

import json
from typing import Any, TextIO

from hawkwatch.model.allocation_report import AllocationReport, CategoryEntry, StackEntry
from hawkwatch.model.allocations import AllocationFrame, NativeFrame

MAX_CONSOLE_FRAMES = 12


def frame_json(frame: AllocationFrame) -> dict[str, Any]:
    if isinstance(frame, NativeFrame):
        return {
            "address": f"0x{frame.address:x}",
            "image": frame.image or None,
            "function": frame.symbol or None,
            "file": frame.file or None,
            "line": frame.line or None,
            "inlined": frame.inlined,
        }
    return {
        "address": None,
        "image": frame.module or None,
        "function": frame.func,
        "file": frame.file,
        "line": frame.line,
        "inlined": False,
    }


def _stack_json(stack: StackEntry) -> dict[str, Any]:
    out: dict[str, Any] = {
        "bytes": stack.bytes,
        "count": stack.count,
        "frames": [frame_json(frame) for frame in stack.frames],
        "caller": frame_json(stack.caller) if stack.caller is not None else None,
        "over_threshold": stack.over_threshold,
    }
    return out


def _category_json(category: CategoryEntry) -> dict[str, Any]:
    return {
        "name": category.name,
        "bytes": category.bytes,
        "count": category.count,
        "stack_count": category.stack_count,
        "stacks": [_stack_json(stack) for stack in category.stacks],
    }


def to_json_dict(report: AllocationReport) -> dict[str, Any]:
    return {
        "source": report.source,
        "total_live_bytes": report.total_live_bytes,
        "live_count": report.live_count,
        "categories": [_category_json(category) for category in report.categories],
        "category_count": report.category_count,
        "stack_count": report.stack_count,
        "position": report.position,
        "time_s": report.time_s,
        "top_by_bytes": [_stack_json(stack) for stack in report.top_by_bytes],
        "top_by_count": [_stack_json(stack) for stack in report.top_by_count],
        "baseline_position": report.baseline_position,
        "growth": [
            {
                "bytes_delta": g.bytes_delta,
                "count_delta": g.count_delta,
                "bytes": g.bytes,
                "count": g.count,
                "category": g.category,
                "frames": [frame_json(frame) for frame in g.frames],
            }
            for g in report.growth
        ],
        "symbolicated_frames": report.symbolicated_frames,
        "native_frames": report.native_frames,
        "metadata": report.metadata,
        "notes": list(report.notes),
        "skipped": list(report.skipped),
    }


def render_json(report: AllocationReport, file: TextIO) -> None:
    json.dump(to_json_dict(report), file, indent=2, ensure_ascii=False)
    file.write("\n")


def size_text(size: int) -> str:
    """Bytes in the largest binary unit that keeps a number ≥ 1."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"  # pragma: no cover


def _frame_text(frame: AllocationFrame) -> str:
    if isinstance(frame, NativeFrame):
        return ("  (inlined) " if frame.inlined else "") + frame.label
    return frame.text


def render_console(report: AllocationReport, file: TextIO) -> None:
    """Plain text: a summary line, then each listed category with its stacks."""
    where = f" at record {report.position:,}" if report.position is not None else ""
    file.write(
        f"{report.source}{where}: {size_text(report.total_live_bytes)} live in "
        f"{report.live_count:,} allocations, {report.category_count} categories, "
        f"{report.stack_count:,} stacks\n"
    )
    if report.native_frames:
        file.write(
            f"symbolicated {report.symbolicated_frames:,} of {report.native_frames:,} frames\n"
        )
    for note in report.notes:
        file.write(f"note: {note}\n")
    for line in report.skipped:
        file.write(f"skipped: {line}\n")
    for category in report.categories:
        file.write(
            f"\n+ {category.name}: {size_text(category.bytes)}, {category.count:,} allocations, "
            f"{category.stack_count:,} stacks\n"
        )
        for stack in category.stacks:
            flag = " !" if stack.over_threshold else ""
            file.write(f"  > {size_text(stack.bytes)}, {stack.count:,} allocations{flag}\n")
            if stack.caller is not None:
                file.write(f"    caller: {_frame_text(stack.caller)}\n")
            for frame in stack.frames[:MAX_CONSOLE_FRAMES]:
                file.write(f"      {_frame_text(frame)}\n")
            if len(stack.frames) > MAX_CONSOLE_FRAMES:
                file.write(f"      … {len(stack.frames) - MAX_CONSOLE_FRAMES} more frames\n")
    if report.growth:
        since = report.baseline_position
        file.write(f"\ngrowth since record {since:,}:\n" if since is not None else "\ngrowth:\n")
        for g in report.growth:
            top = _frame_text(g.frames[0]) if g.frames else "(no stack)"
            file.write(f"  {g.bytes_delta:+,} B {g.count_delta:+,} allocations  {top}\n")
