"""Stalls: ``anr`` (MTHawkeye's shape, hawkwatch's additions) and ``hang-kill``.

One ``Anr`` type reads both writers: MTHawkeye's samples carry ``stackframes`` (``0x…``
addresses, innermost first, comma-separated) and a ``titleframe`` address; hawkwatch's carry
Python ``frames`` and a ``titleframe`` index into them. A stall too long for one record line is
split into parts ``<t>_0``, ``<t>_1``, … (later parts: more ``stacks``, ``duration`` 0,
``part_of``); ``merge_parts`` joins them as MTHawkeye's ``readANRRecords`` does. Shapes:
``docs/collections.md``, ``formats/hawkeye.md`` §4 and §4.1.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar, NamedTuple

import msgspec

from hawkwatch.model import collections as c
from hawkwatch.model.records._codec import Count, Finite, JsonRecord, NonNegative, time_key
from hawkwatch.model.stack import PyFrame, Stack


class StackFrame(NamedTuple):
    """A Python frame as records store it: ``[func, file, line]`` (module left out)."""

    func: str
    file: str
    line: int

    @classmethod
    def of(cls, frame: PyFrame) -> StackFrame:
        return cls(frame.func, frame.file, frame.line)

    def to_py(self) -> PyFrame:
        return PyFrame(self.func, self.file, self.line)


class PointFrame(NamedTuple):
    """A frame of Matrix's point stack: ``[func, file, line, samples holding it]``."""

    func: str
    file: str
    line: int
    repeat: int


def frames_of(stack: Sequence[PyFrame]) -> tuple[StackFrame, ...]:
    """A stack as record frames (innermost first)."""
    return tuple(StackFrame(f.func, f.file, f.line) for f in stack)


def stack_of(frames: Iterable[StackFrame]) -> Stack:
    """Record frames back as a ``model.stack`` stack."""
    return tuple(PyFrame(f.func, f.file, f.line) for f in frames)


class AnrSample(msgspec.Struct, kw_only=True, omit_defaults=True, frozen=True, gc=False):
    """One sample (or ``capturedCount`` identical consecutive ones) of the stalled thread."""

    time: Finite
    frames: tuple[StackFrame, ...] | None = None
    """hawkwatch: Python frames, innermost first."""
    stackframes: str | None = None
    """MTHawkeye: ``0x…`` addresses, innermost first, comma-separated."""
    titleframe: int | str | None = None
    """hawkwatch: index of the blocking frame in ``frames``; MTHawkeye: its address."""
    captured_count: Count | None = msgspec.field(default=None, name="capturedCount")
    thread_count: Count | None = msgspec.field(default=None, name="threadCount")
    source: str | None = None
    """``watchdog`` or ``faulthandler`` (hawkwatch)."""

    @property
    def captured(self) -> int:
        """How many samples this entry stands for (at least 1)."""
        return self.captured_count or 1

    def addresses(self) -> list[int]:
        """MTHawkeye's frame addresses (unreadable tokens left out)."""
        found = []
        for token in (self.stackframes or "").split(","):
            text = token.strip()
            try:
                found.append(int(text, 16) if text[:2].lower() == "0x" else int(text))
            except ValueError:
                continue
        return found


class AnrGc(msgspec.Struct, frozen=True, gc=False):
    """Garbage collections that ran during the stall."""

    collections: Count
    duration_ms: NonNegative


class AnrPoint(msgspec.Struct, frozen=True, gc=False):
    """Matrix's point stack: the sample (``index`` into stacks) whose top frame held longest."""

    index: int
    frames: tuple[PointFrame, ...]
    title: int
    run: int


class AnrTask(msgspec.Struct, frozen=True, gc=False):
    """The asyncio task running on the stalled loop, its coroutine chain innermost first."""

    name: str
    coro: str
    stack: tuple[StackFrame, ...]


class Anr(JsonRecord, kw_only=True, frozen=True):
    """One stall, or one part of it; key ``<start>_<part>`` (``record_key``: part 0)."""

    collection: ClassVar[str] = c.ANR
    legacy_defaults: ClassVar[Mapping[str, Any]] = {"inBackground": False, "stacks": []}

    duration: NonNegative
    """Milliseconds (0 in later parts)."""
    duration_range: tuple[NonNegative, NonNegative] | None = None
    start_from: Finite = msgspec.field(name="startFrom")
    in_background: bool = msgspec.field(name="inBackground")
    stacks: tuple[AnrSample, ...]
    loop: str | None = None
    thread: str | None = None
    thread_id: int | None = None
    samples: Count | None = None
    source: str | None = None
    gc: AnrGc | None = None
    point: AnrPoint | None = None
    fingerprint: str | None = None
    task: AnrTask | None = None
    unfinished: bool = False
    repeat_of: str | None = None
    """Key of the last full record with the same point stack (this one has no samples)."""
    repeat: int | None = None
    part_of: str | None = None
    side_file: str | None = None
    """The whole value is in this file of the session folder (too large to split)."""

    def record_key(self) -> str:
        return f"{time_key(self.start_from)}_0"


class AnrStall(msgspec.Struct, frozen=True):
    """One stall with its parts merged: ``head`` is the first part, ``stacks`` all samples."""

    key: str
    """The key before the part number."""
    start: float
    duration_ms: float
    head: Anr
    stacks: tuple[AnrSample, ...]


def merge_parts(parts: Iterable[tuple[str, Anr]]) -> list[AnrStall]:
    """``(key, part)`` pairs → stalls, oldest first (MTHawkeye's ``readANRRecords``).

    Parts group by the key before its last ``_``; durations add up, the earliest ``startFrom``
    wins, samples are put in time order, the first part stored is the head.
    """
    grouped: dict[str, list[Anr]] = {}
    for key, part in parts:
        grouped.setdefault(key.rsplit("_", 1)[0], []).append(part)
    stalls = [
        AnrStall(
            key=base,
            start=min(part.start_from for part in group),
            duration_ms=sum(part.duration for part in group),
            head=group[0],
            stacks=tuple(sorted((s for part in group for s in part.stacks), key=lambda s: s.time)),
        )
        for base, group in grouped.items()
    ]
    stalls.sort(key=lambda stall: stall.start)
    return stalls


class HangKill(JsonRecord, kw_only=True, frozen=True):
    """An earlier process that died while one of its loops was stalled; key: time last seen.

    ``source`` is ``marker`` (the hang-in-progress file) or ``faulthandler`` (an unread
    backstop dump); ``duration_ms`` is at least how long it hung (None when unknown). Every
    field but ``backstop_stack`` is always written; ``time`` (the key) is in the value since
    the typed model.
    """

    collection: ClassVar[str] = c.HANG_KILL
    time_field: ClassVar[str | None] = "time"
    legacy_defaults: ClassVar[Mapping[str, Any]] = {
        **dict.fromkeys(
            ("pid", "source", "start", "last_seen", "duration_ms", "thread", "thread_id", "loop")
        ),
        "stack": [],
    }

    previous_session: str
    pid: int | None
    source: str | None
    start: Finite | None
    last_seen: Finite | None
    duration_ms: NonNegative | None
    thread: str | None
    thread_id: int | None
    loop: str | None
    stack: tuple[StackFrame, ...]
    backstop_stack: tuple[StackFrame, ...] | None = None
    time: Finite
