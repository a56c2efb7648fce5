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

import os
import threading
from collections import deque
from collections.abc import Callable

from hawkwatch.agent.runtime import report_error
from hawkwatch.agent.stacks import py_frame
from hawkwatch.model import collections as c
from hawkwatch.model.stack import PyFrame, Stack

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any, Final

    from hawkwatch.analysis.stall import Sample
    from hawkwatch.model.records import Anr, AnrTask

# The typed model (msgspec) is imported by the functions that build records, at the first
# stall (on the watchdog thread), not at every start.

LINE_LIMIT: Final = 16_254
"""Longest record line the store keeps (``collection,key,value``), in UTF-8 bytes."""
_SAFETY: Final = 64


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
        self.task: AnrTask | None = None
        self.marker: str | None = None  # its path
        self.marker_written = 0.0
        self.late_end: float | None = None
        """Set for a spell the watchdog slept through (``_late``): when it was seen to end."""

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
        from hawkwatch.analysis.stall import Sample

        if stack:
            self.backstop.append(Sample(when_wall, stack, 1))

    def samples(self) -> list[tuple[Sample, int, str]]:
        """(sample, thread count, source) oldest first: first sample, ring, backstop dumps."""
        from hawkwatch.analysis.stall import Sample

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


def shows_the_program(episode: Episode) -> bool:
    """Whether a spell shows something the program did: a stack (sample or backstop dump)
    other than an asyncio loop idle in its own selector.

    A loop waiting in ``select`` had nothing to do: the ping's wake-up reached a thread that got
    no core (or no GIL) to take it, which on a loaded host happens for 100 ms and more. That is
    the machine's doing, and a spell without any stack has nothing to show for itself.
    """
    return any(not _idle_in_selector(sample.stack) for sample, _, _ in episode.samples())


def _idle_in_selector(stack: Stack) -> bool:
    if len(stack) < 2:
        return not stack
    inner, caller = stack[0].func, stack[1].func
    # faulthandler names frames by co_name ("select"), the sampler by qualified name
    return (inner == "select" or inner.endswith("Selector.select")) and caller.endswith("_run_once")


def build_value(
    episode: Episode,
    *,
    end: float,
    gc_now: tuple[int, int],
    is_library: Callable[[str], bool],
    unfinished: bool = False,
) -> Anr:
    """The full ``anr`` record of a finished (or, at stop, unfinished) episode."""
    from hawkwatch.analysis.stall import fingerprint, point_stack, title_index
    from hawkwatch.model.records import Anr, AnrGc, AnrPoint, AnrSample, PointFrame
    from hawkwatch.model.records.stall import frames_of

    rows = episode.samples()
    point = point_stack([row[0] for row in rows])
    stacks = tuple(
        AnrSample(
            time=round(sample.time, 6),
            frames=frames_of(sample.stack),
            titleframe=title_index(sample.stack, is_library),
            captured_count=sample.captured,
            thread_count=thread_count,
            source=source,
        )
        for sample, thread_count, source in rows
    )
    return Anr(
        duration=round((end - episode.start) * 1000, 3),
        duration_range=(
            round(max(0.0, end - (2 * episode.start - episode.earliest)) * 1000, 3),
            round((end - episode.earliest) * 1000, 3),
        ),
        start_from=round(episode.wall(episode.start), 6),
        in_background=False,
        stacks=stacks,
        loop=episode.kind,
        thread=episode.thread_name,
        thread_id=episode.thread_id,
        samples=episode.taken + len(episode.backstop),
        source="watchdog" if episode.taken else "faulthandler" if episode.backstop else "late",
        gc=AnrGc(gc_now[0] - episode.gc_mark[0], round((gc_now[1] - episode.gc_mark[1]) / 1e6, 3)),
        point=None
        if point is None
        else AnrPoint(
            index=point.position,
            frames=tuple(
                PointFrame(frame.func, frame.file, frame.line, repeat)
                for frame, repeat in zip(point.stack, point.repeats, strict=True)
            ),
            title=title_index(point.stack, is_library),
            run=point.run,
        ),
        fingerprint=None if point is None else fingerprint(point.stack),
        task=episode.task,
        unfinished=unfinished,
    )


def compact_value(value: Anr, repeat_of: str, repeat: int) -> Anr:
    """A stall whose point stack equals the previous one's: no samples, a pointer instead."""
    import msgspec

    return msgspec.structs.replace(value, stacks=(), point=None, repeat_of=repeat_of, repeat=repeat)


def encode_parts(key_base: str, value: Anr, side_folder: str) -> list[tuple[str, Anr]]:
    """``(key, part)`` records for ``value``, each line within the store's limit."""
    import msgspec

    from hawkwatch.model.records import Anr

    overhead = len(c.ANR) + len(key_base) + 8 + _SAFETY

    def fits(part: Anr) -> bool:
        return len(part.encode_value()) + overhead <= LINE_LIMIT

    if fits(value):
        return [(f"{key_base}_0", value)]
    parts = [msgspec.structs.replace(value, stacks=())]
    if not fits(parts[0]):
        return [_side_file(key_base, value, side_folder)]
    for stack in value.stacks:
        grown = msgspec.structs.replace(parts[-1], stacks=(*parts[-1].stacks, stack))
        if fits(grown):
            parts[-1] = grown
            continue
        alone = Anr(
            duration=0,
            start_from=stack.time,
            in_background=False,
            stacks=(stack,),
            part_of=f"{key_base}_0",
        )
        if not fits(alone):
            return [_side_file(key_base, value, side_folder)]
        parts.append(alone)
    return [(f"{key_base}_{i}", part) for i, part in enumerate(parts)]


def _side_file(key_base: str, value: Anr, folder: str) -> tuple[str, Anr]:
    from hawkwatch.model.records import Anr

    name = f"{c.ANR}-{key_base}.json"
    with open(os.path.join(folder, name), "wb") as f:  # Path.write_bytes, without pathlib
        f.write(value.encode_value())
    stub = Anr(
        duration=value.duration,
        start_from=value.start_from,
        in_background=value.in_background,
        stacks=(),
        loop=value.loop,
        thread=value.thread,
        fingerprint=value.fingerprint,
        side_file=name,
    )
    return f"{key_base}_0", stub


def task_info(loop: Any, max_frames: int) -> AnrTask | None:
    """The asyncio task running on ``loop`` and its coroutine chain, innermost first."""
    from hawkwatch.model.records import AnrTask
    from hawkwatch.model.records.stall import frames_of

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
    return AnrTask(
        name=task.get_name(),
        coro=getattr(coro, "__qualname__", type(coro).__name__),
        stack=frames_of(frames),
    )


def safe_task_info(loop: Any, max_frames: int) -> AnrTask | None:
    try:
        return task_info(loop, max_frames)
    except Exception as exc:  # a task in an odd state must not stop the watchdog
        report_error("stall", "task-info", exc)
        return None


def thread_count() -> int:
    return threading.active_count()


def library_prefixes() -> tuple[str, ...]:
    """Where the standard library, installed packages and hawkwatch itself live."""
    import sysconfig

    paths = sysconfig.get_paths()
    found = {
        os.path.join(paths[name], "")
        for name in ("stdlib", "platstdlib", "purelib", "platlib")
        if paths.get(name)
    }
    found.add(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), ""))
    found.add("<frozen ")
    return tuple(sorted(found))
