"""CPU: high-load episodes (MTHawkeye's ``cpu-highload`` and ``cpu-highload-stackframe``) and the
profiler's windows (``cpu-profile``).

* ``cpu-highload``: key = start, value ``{"start": "<key>", "lasting": "%.2f" s, "average":
  "%.2f" %}`` — strings, as MTHawkeye writes them (numbers are accepted too). hawkwatch adds
  ``threads``. MTHawkeye's start is CFAbsoluteTime (``start_unix("cfabsolute")`` converts).
* ``cpu-highload-stackframe``: same key; a JSON *array* of nodes ``{frame, count, proportion,
  children?}``, outermost frames at the roots; ``frame`` is ``0x…`` (MTHawkeye) or
  ``func (file:line)`` (hawkwatch). The side file ``cpu-highload-stackframe-ext`` holds the
  same value for trees of 15 KB or more.
* ``cpu-profile``: a ``model.profile.Profile`` window (``CpuProfile.of`` / ``to_profile``);
  from 15 KB on the side file ``cpu-profile/<key>.json`` holds it and the record keeps the
  summary plus ``file``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final, Literal, Self

import msgspec

from hawkwatch.model import collections as c
from hawkwatch.model.profile import CallNode, Profile, ThreadShare, frame_label, parse_frame_text
from hawkwatch.model.record import Record
from hawkwatch.model.records._codec import (
    Count,
    Finite,
    JsonRecord,
    NonNegative,
    RecordError,
    TypedRecord,
    convert,
    decode_json,
    time_key,
)
from hawkwatch.model.records.stall import StackFrame
from hawkwatch.model.stack import PyFrame, StackTable

CF_ABSOLUTE_EPOCH: Final = 978_307_200.0
"""Unix time of 2001-01-01 00:00:00 UTC, CFAbsoluteTime's origin."""
MAX_TREE_DEPTH: Final = 200
"""Deeper imported trees are cut: a hostile file must not exhaust the interpreter's stack."""

TimeBase = Literal["unix", "cfabsolute"]
_encode: Final = msgspec.json.Encoder().encode


class ThreadShareValue(msgspec.Struct, frozen=True, gc=False):
    """A thread's share of the process CPU over an episode (0…1)."""

    name: str
    native_id: int
    share: NonNegative


class CpuHighLoad(JsonRecord, kw_only=True, frozen=True):
    """An episode of high process CPU; key = start (``%.6f`` Unix s; MTHawkeye: ``%.2f`` CF)."""

    collection: ClassVar[str] = c.CPU_HIGHLOAD
    time_field: ClassVar[str | None] = "start"

    start: Finite
    lasting: NonNegative
    """Seconds."""
    average: NonNegative
    """Mean process CPU, 100 = one core."""
    threads: tuple[ThreadShareValue, ...] | None = None
    """Busiest first, at most 16 (hawkwatch)."""
    sampler: str | None = None
    """What sampled the episode's tree: ``in-process`` or ``py-spy`` (MTHawkeye: None)."""

    def encode_value(self) -> bytes:
        value: dict[str, Any] = {
            "start": time_key(self.start),
            "lasting": f"{self.lasting:.2f}",
            "average": f"{self.average:.2f}",
        }
        if self.sampler is not None:
            value["sampler"] = self.sampler
        if self.threads is not None:
            value["threads"] = self.threads
        return _encode(value)

    def start_unix(self, time_base: TimeBase) -> float:
        return self.start + (CF_ABSOLUTE_EPOCH if time_base == "cfabsolute" else 0.0)

    def thread_shares(self) -> tuple[ThreadShare, ...]:
        return tuple(ThreadShare(t.name, t.native_id, t.share) for t in self.threads or ())


class StackframeNode(msgspec.Struct, omit_defaults=True, frozen=True, gc=False):
    """MTHawkeye's node: ``count`` samples passed through it; ``proportion`` of the root total."""

    frame: str
    count: Count
    proportion: float | None = None
    children: tuple[StackframeNode, ...] = ()


class CpuHighLoadStackframe(TypedRecord, kw_only=True, frozen=True):
    """An episode's call tree; key = the episode's key. The value is a JSON array of nodes."""

    collection: ClassVar[str] = c.CPU_HIGHLOAD_STACKFRAME
    value_type: ClassVar[Any] = list[StackframeNode]
    """What the value decodes to (the struct itself holds the key and the tree)."""

    key: str
    roots: tuple[CallNode, ...]

    def record_key(self) -> str:
        return self.key

    def encode_value(self) -> bytes:
        return _encode(tree_nodes(self.roots))

    @classmethod
    def from_record(cls, record: Record) -> Self:
        return cls.from_value(decode_json(record.value), record.key)

    @classmethod
    def from_value(cls, data: Any, key: str) -> Self:
        if not isinstance(data, list):
            raise RecordError("value is not a JSON array of nodes")
        nodes: list[StackframeNode] = convert(data, cls.value_type)
        return cls(key=key, roots=tuple(_call_node(node, 0) for node in nodes))


def tree_nodes(roots: Sequence[CallNode]) -> list[StackframeNode]:
    """MTHawkeye's nodes of a tree: ``proportion`` = count / Σ root counts, rounded to 1e-6."""
    total = sum(root.count for root in roots) or 1

    def node(item: CallNode) -> StackframeNode:
        return StackframeNode(
            frame_label(item.frame),
            item.count,
            round(item.count / total, 6),
            tuple(node(child) for child in item.children),
        )

    return [node(root) for root in roots]


def _call_node(node: StackframeNode, depth: int) -> CallNode:
    if not node.frame:
        raise RecordError("empty frame in a stack-frame node")
    kids = () if depth >= MAX_TREE_DEPTH else tuple(_call_node(c, depth + 1) for c in node.children)
    return CallNode(parse_frame_text(node.frame), node.count, kids)


class ProfileTable(msgspec.Struct, frozen=True, gc=False):
    """A ``StackTable``: frames once each, nodes ``[frame index, parent node or -1]``."""

    frames: tuple[StackFrame, ...]
    nodes: tuple[tuple[int, int], ...]


class CpuProfile(JsonRecord, kw_only=True, frozen=True):
    """A profiler window; key = its start. ``counts``: ``[stack id, wall, cpu]`` per stack.

    A record with ``file`` holds only the summary; the window is that side file (same shape).
    """

    collection: ClassVar[str] = c.CPU_PROFILE
    time_field: ClassVar[str | None] = "start"
    legacy_defaults: ClassVar[Mapping[str, Any]] = {
        "budget": 0.0,
        "cost_s": 0.0,
        "max_depth_hit": 0,
    }

    start: Finite
    duration_s: NonNegative
    samples: Count
    rate_hz: NonNegative
    budget: NonNegative
    cost_s: NonNegative
    max_depth_hit: Count
    table: ProfileTable | None = None
    counts: tuple[tuple[Count, Count, Count], ...] | None = None
    file: str | None = None
    sampler: str = "in-process"
    """``in-process`` (the agent's sampler) or ``py-spy`` (``hawkwatch run``'s, from outside)."""

    def __post_init__(self) -> None:
        if self.file is None and (self.table is None or self.counts is None):
            raise ValueError("a profile needs a table and counts, or a file")

    @classmethod
    def of(cls, profile: Profile) -> CpuProfile:
        table = profile.table
        return cls(
            start=profile.start_time,
            duration_s=round(profile.duration_s, 6),
            samples=profile.samples,
            rate_hz=round(profile.rate_hz, 3),
            budget=profile.budget,
            cost_s=round(profile.cost_s, 6),
            max_depth_hit=profile.max_depth_hit,
            table=ProfileTable(
                tuple(StackFrame(f.func, f.file, f.line) for f in table.frames), tuple(table.nodes)
            ),
            counts=tuple((sid, wall, cpu) for sid, (wall, cpu) in profile.counts.items()),
            sampler=profile.sampler,
        )

    def summary(self, file: str) -> CpuProfile:
        """The record of a window written to the side file ``file``."""
        return msgspec.structs.replace(self, table=None, counts=None, file=file)

    def to_profile(self) -> Profile:
        """The window as model data; ``RecordError`` for a summary or a table that is not one."""
        if self.table is None or self.counts is None:
            raise RecordError(f"the window is in the side file {self.file}")
        try:
            table = StackTable.restore(
                [PyFrame(f.func, f.file, f.line) for f in self.table.frames], self.table.nodes
            )
        except ValueError as exc:
            raise RecordError(f"{exc} - at `$.table`") from None
        counts: dict[int, tuple[int, int]] = {}
        for stack_id, wall, cpu in self.counts:
            if stack_id >= len(table):
                raise RecordError(f"count for missing stack {stack_id} - at `$.counts`")
            counts[stack_id] = (wall, cpu)
        return Profile(
            start_time=self.start,
            duration_s=self.duration_s,
            samples=self.samples,
            rate_hz=self.rate_hz,
            table=table,
            counts=counts,
            budget=self.budget,
            cost_s=self.cost_s,
            max_depth_hit=self.max_depth_hit,
            sampler=self.sampler,
        )
