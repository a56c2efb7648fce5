"""One stall, from its first late answer to the ``anr`` record that describes it.

An ``Episode`` holds what the watchdog saw while a loop was unresponsive: the first sample and
a ring of the newest ``ring_size`` samples (identical consecutive samples share one entry with a
count, MTHawkeye's annealing), samples faulthandler took when the watchdog itself could not
run, the running asyncio task, and the GC clock at the start.

The record keeps MTHawkeye's ``anr`` shape (``formats/hawkeye.md`` §4: ``duration`` ms,
``startFrom``, ``inBackground``, ``stacks[{time, capturedCount, threadCount, titleframe}]``)
with Python frames in ``frames`` instead of its ``stackframes`` address string, and hawkwatch's
additions (``docs/collections.md``). Values over the line limit are split into ``<t>_<i>``
parts as MTHawkeye splits them (later parts carry more ``stacks`` and ``duration`` 0, so the
usual merge — sum durations, concatenate stacks — gives the whole), or go to a side file.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from hawkwatch.agent.stacks import py_frame
from hawkwatch.analysis.stall import Sample, fingerprint, point_stack, title_index
from hawkwatch.model.stack import PyFrame, Stack, stack_to_json

LINE_LIMIT: Final = 16_254
"""Longest record line the store keeps (``collection,key,value``), in UTF-8 bytes."""
_SAFETY: Final = 64


class GcClock:
    """Collections and time spent collecting, counted by a ``gc.callbacks`` hook (2 clock reads)."""

    def __init__(self) -> None:
        self.count = 0
        self.total_ns = 0
        self._started = 0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter_ns()
        elif self._started:
            self.total_ns += time.perf_counter_ns() - self._started
            self.count += 1
            self._started = 0

    def now(self) -> tuple[int, int]:
        return self.count, self.total_ns


class Episode:
    """What the watchdog learns about one unresponsive spell of one loop."""

    def __init__(
        self,
        *,
        kind: str,
        thread_id: int,
        thread_name: str,
        start: float,
        earliest: float,
        wall_offset: float,
        gc_mark: tuple[int, int],
        ring_size: int,
    ) -> None:
        self.kind = kind
        self.thread_id = thread_id
        self.thread_name = thread_name
        self.start = start
        self.earliest = min(earliest, start)
        self.wall_offset = wall_offset
        self.gc_mark = gc_mark
        self.first: list[Any] | None = None
        self.ring: deque[list[Any]] = deque(maxlen=ring_size)
        self.backstop: list[Sample] = []
        self.taken = 0
        self.task: dict[str, Any] | None = None
        self.marker: Path | None = None
        self.marker_written = 0.0

    def wall(self, perf_time: float) -> float:
        return perf_time + self.wall_offset

    def add(self, now: float, stack: Stack, thread_count: int) -> None:
        """One watchdog sample; identical to the newest entry, it only bumps its count."""
        self.taken += 1
        newest = self.ring[-1] if self.ring else None
        if newest is not None and newest[1] == stack:
            newest[2] += 1
            newest[3] = max(newest[3], thread_count)
            return
        entry = [self.wall(now), stack, 1, thread_count]
        if self.first is None:
            self.first = entry
        self.ring.append(entry)

    def add_backstop(self, when_wall: float, stack: Stack) -> None:
        if stack:
            self.backstop.append(Sample(when_wall, stack, 1))

    def samples(self) -> list[tuple[Sample, int, str]]:
        """(sample, thread count, source) oldest first: first sample, ring, backstop dumps."""
        rows: list[tuple[Sample, int, str]] = []
        if self.first is not None and all(entry is not self.first for entry in self.ring):
            rows.append(
                (Sample(self.first[0], self.first[1], self.first[2]), self.first[3], "watchdog")
            )
        rows += [(Sample(e[0], e[1], e[2]), e[3], "watchdog") for e in self.ring]
        rows += [(sample, 0, "faulthandler") for sample in self.backstop]
        rows.sort(key=lambda row: row[0].time)
        return rows

    def first_stack(self) -> Stack:
        if self.first is not None:
            return tuple(self.first[1])
        return self.backstop[0].stack if self.backstop else ()


def build_value(
    episode: Episode,
    *,
    end: float,
    gc_now: tuple[int, int],
    is_library: Callable[[str], bool],
    unfinished: bool = False,
) -> dict[str, Any]:
    """The full ``anr`` value of a finished (or, at stop, unfinished) episode."""
    rows = episode.samples()
    point = point_stack([row[0] for row in rows])
    stacks = [
        {
            "time": round(sample.time, 6),
            "frames": stack_to_json(sample.stack),
            "titleframe": title_index(sample.stack, is_library),
            "capturedCount": sample.captured,
            "threadCount": thread_count,
            "source": source,
        }
        for sample, thread_count, source in rows
    ]
    value: dict[str, Any] = {
        "duration": round((end - episode.start) * 1000, 3),
        "duration_range": [
            round(max(0.0, end - (2 * episode.start - episode.earliest)) * 1000, 3),
            round((end - episode.earliest) * 1000, 3),
        ],
        "startFrom": round(episode.wall(episode.start), 6),
        "inBackground": False,
        "stacks": stacks,
        "loop": episode.kind,
        "thread": episode.thread_name,
        "thread_id": episode.thread_id,
        "samples": episode.taken + len(episode.backstop),
        "source": "watchdog" if episode.taken else "faulthandler" if episode.backstop else "late",
        "gc": {
            "collections": gc_now[0] - episode.gc_mark[0],
            "duration_ms": round((gc_now[1] - episode.gc_mark[1]) / 1e6, 3),
        },
    }
    if point is not None:
        value["point"] = {
            "index": point.position,
            "frames": [
                [frame.func, frame.file, frame.line, repeat]
                for frame, repeat in zip(point.stack, point.repeats, strict=True)
            ],
            "title": title_index(point.stack, is_library),
            "run": point.run,
        }
        value["fingerprint"] = fingerprint(point.stack)
    if episode.task is not None:
        value["task"] = episode.task
    if unfinished:
        value["unfinished"] = True
    return value


def compact_value(value: dict[str, Any], repeat_of: str, repeat: int) -> dict[str, Any]:
    """A stall whose point stack equals the previous one's: no samples, a pointer instead."""
    kept = {k: v for k, v in value.items() if k not in ("stacks", "point")}
    return {**kept, "stacks": [], "repeat_of": repeat_of, "repeat": repeat}


def encode_parts(
    collection: str, key_base: str, value: dict[str, Any], side_folder: Path
) -> list[tuple[str, str]]:
    """``(key, json)`` records for ``value``, each line within the store's limit."""
    text = _dumps(value)
    overhead = len(collection) + len(key_base) + 8 + _SAFETY
    if len(text.encode()) + overhead <= LINE_LIMIT:
        return [(f"{key_base}_0", text)]
    head = {k: v for k, v in value.items() if k != "stacks"}
    stacks: list[dict[str, Any]] = value.get("stacks", [])
    parts: list[dict[str, Any]] = [{**head, "stacks": []}]
    if len(_dumps(parts[0]).encode()) + overhead > LINE_LIMIT:
        return [_side_file(collection, key_base, value, side_folder)]
    for stack in stacks:
        current = parts[-1]
        current["stacks"].append(stack)
        if len(_dumps(current).encode()) + overhead > LINE_LIMIT:
            current["stacks"].pop()
            alone = {
                "duration": 0,
                "startFrom": stack["time"],
                "inBackground": False,
                "stacks": [stack],
                "part_of": f"{key_base}_0",
            }
            if len(_dumps(alone).encode()) + overhead > LINE_LIMIT:
                return [_side_file(collection, key_base, value, side_folder)]
            parts.append(alone)
    return [(f"{key_base}_{i}", _dumps(part)) for i, part in enumerate(parts)]


def _side_file(
    collection: str, key_base: str, value: dict[str, Any], folder: Path
) -> tuple[str, str]:
    name = f"{collection}-{key_base}.json"
    (folder / name).write_text(_dumps(value), encoding="utf-8")
    stub = {k: value[k] for k in ("duration", "startFrom", "inBackground", "loop", "thread")}
    stub.update(stacks=[], side_file=name, fingerprint=value.get("fingerprint"))
    return f"{key_base}_0", _dumps(stub)


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def task_info(loop: Any, max_frames: int) -> dict[str, Any] | None:
    """The asyncio task running on ``loop`` and its coroutine chain, innermost first."""
    asyncio = __import__("sys").modules.get("asyncio")
    if asyncio is None or loop is None:
        return None
    task = asyncio.current_task(loop)  # may raise: the caller leaves a trace of it
    if task is None:
        return None
    coro = task.get_coro()
    frames: list[PyFrame] = []
    link = coro
    while link is not None and len(frames) < max_frames:
        frame = getattr(link, "cr_frame", None) or getattr(link, "gi_frame", None)
        if frame is not None:
            frames.append(py_frame(frame))
        link = getattr(link, "cr_await", None) or getattr(link, "gi_yieldfrom", None)
    frames.reverse()
    return {
        "name": task.get_name(),
        "coro": getattr(coro, "__qualname__", type(coro).__name__),
        "stack": stack_to_json(frames),
    }


def thread_count() -> int:
    return threading.active_count()
