"""Live allocations grouped by stack and category: one model for iOS memory artifacts and Python.

MallocStackLogging's idea, kept as plain data: stacks live in a ``UniquingTable`` (each distinct
``(frame, parent)`` pair gets one id, frames are stored once), and a snapshot holds one
``Group`` per ``(stack id, category)`` — bytes and count still live at that moment. Readers of MSL
logs, ``.memgraph`` files and MTHawkeye's Allocations files fill it with ``NativeFrame``\\ s;
Python's tracers fill it with ``PyFrame``\\ s; analysis and exports never know which.

Stacks are innermost first (ARCHITECTURE.md "Frame representation"). ``growth`` compares two
snapshots of one process (the same table), which is what leak detection needs.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from hawkwatch.model.crash import CrashImage
from hawkwatch.model.profile import CallNode, CallTree, Frame
from hawkwatch.model.stack import PyFrame, UniquingTable


class NativeFrame(NamedTuple):
    """One native frame: a return address, and what symbolication found for it.

    ``image`` is the image name ("" when no image holds the address); ``symbol``/``file``/
    ``line`` are empty until symbolicated. Inlined calls are frames of their own with
    ``inlined=True`` sharing the address, innermost first, as in crash reports.
    """

    address: int
    image: str = ""
    symbol: str = ""
    file: str = ""
    line: int = 0
    inlined: bool = False

    @property
    def label(self) -> str:
        """``symbol (file:line)``, ``symbol (image)`` or ``0x… (image)`` for reports and exports."""
        if self.symbol:
            where = f"{self.file}:{self.line}" if self.file else self.image
            return f"{self.symbol} ({where})" if where else self.symbol
        return f"0x{self.address:x} ({self.image})" if self.image else f"0x{self.address:x}"


AllocationFrame = PyFrame | NativeFrame
"""A frame of an allocation stack: Python (tracemalloc, memray) or native (iOS artifacts)."""


@dataclass(frozen=True, slots=True)
class Group:
    """Live allocations sharing one stack and one category."""

    stack_id: int
    category: str
    bytes: int
    count: int


class Growth(NamedTuple):
    """How one ``(stack, category)`` changed between two snapshots."""

    stack_id: int
    category: str
    bytes_before: int
    bytes_after: int
    count_before: int
    count_after: int

    @property
    def bytes_delta(self) -> int:
        return self.bytes_after - self.bytes_before

    @property
    def count_delta(self) -> int:
        return self.count_after - self.count_before


@dataclass(frozen=True, slots=True)
class LiveAllocations:
    """What was live at one moment, grouped by ``(stack, category)``.

    ``source`` names the reader and layout (``msl-framework-64``, ``memgraph``, ``tracemalloc``,
    …); ``position`` is where in the source the snapshot was taken (records replayed, snapshot
    number) and ``time_s`` its time since recording started, when known. ``images`` and
    ``arch`` are what native frames need to be symbolicated; ``process_path`` (the main
    executable) tells the app's own images from the system's. ``notes`` say what the reader
    could not do or chose (layout detection, truncation, skipped records). ``baseline`` is an
    earlier snapshot of the same process sharing ``stacks`` (for ``growth``), when read.
    """

    source: str
    stacks: UniquingTable[AllocationFrame]
    groups: tuple[Group, ...]
    images: tuple[CrashImage, ...] = ()
    arch: str | None = None
    process_path: str | None = None
    position: int | None = None
    time_s: float | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    baseline: LiveAllocations | None = None

    @property
    def total_bytes(self) -> int:
        return sum(group.bytes for group in self.groups)

    @property
    def total_count(self) -> int:
        return sum(group.count for group in self.groups)


def merge_groups(groups: Iterable[Group]) -> tuple[Group, ...]:
    """Groups with equal ``(stack, category)`` summed, largest bytes first."""
    merged: dict[tuple[int, str], list[int]] = {}
    for group in groups:
        into = merged.setdefault((group.stack_id, group.category), [0, 0])
        into[0] += group.bytes
        into[1] += group.count
    out = [Group(stack, name, size, count) for (stack, name), (size, count) in merged.items()]
    out.sort(key=lambda group: (-group.bytes, -group.count, group.stack_id, group.category))
    return tuple(out)


def growth(before: LiveAllocations, after: LiveAllocations) -> list[Growth]:
    """Per ``(stack, category)`` change from ``before`` to ``after``, most bytes gained first.

    Both snapshots must share one ``UniquingTable`` (one process recorded over time); stacks
    absent from one side count as zero there.
    """
    if before.stacks is not after.stacks:
        raise ValueError("snapshots of different stack tables cannot be compared")
    old = {(g.stack_id, g.category): g for g in before.groups}
    new = {(g.stack_id, g.category): g for g in after.groups}
    out = []
    for key in old.keys() | new.keys():
        was, now = old.get(key), new.get(key)
        out.append(
            Growth(
                key[0],
                key[1],
                was.bytes if was else 0,
                now.bytes if now else 0,
                was.count if was else 0,
                now.count if now else 0,
            )
        )
    out.sort(key=lambda g: (-g.bytes_delta, -g.count_delta, g.stack_id, g.category))
    return out


class ImageLocator:
    """Address → image: the one with the largest load address at or below it (and, when the
    image's end is known, not past it) — MTHawkeye records no sizes, crash reports do."""

    def __init__(self, images: Sequence[CrashImage]) -> None:
        ordered = sorted(images, key=lambda image: image.load_address)
        self._images = ordered
        self._bases = [image.load_address for image in ordered]

    def image_for(self, address: int) -> CrashImage | None:
        position = bisect.bisect_right(self._bases, address) - 1
        if position < 0:
            return None
        image = self._images[position]
        return image if image.contains(address) else None


def with_image_names(live: LiveAllocations) -> LiveAllocations:
    """``live`` with every native frame naming the image that holds its address."""
    locate = ImageLocator(live.images)

    def named(frame: AllocationFrame) -> tuple[AllocationFrame, ...]:
        if isinstance(frame, NativeFrame) and not frame.image:
            image = locate.image_for(frame.address)
            if image is not None:
                return (frame._replace(image=image.name),)
        return (frame,)

    return map_frames(live, named)


def map_frames(
    live: LiveAllocations,
    convert: Callable[[AllocationFrame], tuple[AllocationFrame, ...]],
) -> LiveAllocations:
    """A copy of ``live`` whose frames each became zero or more frames (innermost first).

    One forward pass over the table's nodes (parents come first), so every distinct frame is
    converted once and shared tails stay shared.
    """
    old = live.stacks
    new: UniquingTable[AllocationFrame] = UniquingTable()
    converted = [convert(frame) for frame in old.frames]
    mapped: list[int] = []
    for frame_id, parent in old.nodes:
        node = mapped[parent] if parent >= 0 else -1
        for frame in reversed(converted[frame_id]):
            node = new.push(frame, node)
        mapped.append(node)

    def remap(snapshot: LiveAllocations) -> tuple[Group, ...]:
        return merge_groups(
            Group(mapped[g.stack_id] if g.stack_id >= 0 else -1, g.category, g.bytes, g.count)
            for g in snapshot.groups
        )

    baseline = live.baseline
    if baseline is not None and baseline.stacks is old:
        baseline = replace(baseline, stacks=new, groups=remap(baseline))
    return replace(live, stacks=new, groups=remap(live), baseline=baseline)


def call_tree(live: LiveAllocations, *, weight: str = "bytes", name: str = "") -> CallTree:
    """Stacks as a call tree (outermost at the roots) weighted by live ``bytes`` or ``count``,
    for the profile exporters. Unsymbolicated native frames stay addresses."""
    own: dict[int, int] = {}
    for group in live.groups:
        value = group.bytes if weight == "bytes" else group.count
        if value and group.stack_id >= 0:
            own[group.stack_id] = own.get(group.stack_id, 0) + value
    nodes = live.stacks.nodes
    total = [0] * len(nodes)
    children: dict[int, list[int]] = {}
    roots: list[int] = []
    for node_id in sorted(own):
        node = node_id
        while node >= 0:
            total[node] += own[node_id]
            node = nodes[node][1]
    for node_id, (_frame, parent) in enumerate(nodes):
        if total[node_id]:
            (children.setdefault(parent, []) if parent >= 0 else roots).append(node_id)
    frames = [_tree_frame(frame) for frame in live.stacks.frames]

    def build(node_id: int) -> CallNode:
        kids = sorted(children.get(node_id, ()), key=lambda child: -total[child])
        return CallNode(frames[nodes[node_id][0]], total[node_id], tuple(build(k) for k in kids))

    ordered = sorted(roots, key=lambda root: -total[root])
    return CallTree(tuple(build(root) for root in ordered), name=name or live.source, mode="cpu")


def _tree_frame(frame: AllocationFrame) -> Frame:
    if isinstance(frame, PyFrame):
        return frame
    if frame.symbol:
        return PyFrame(frame.symbol, frame.file, frame.line, frame.image)
    return frame.address
