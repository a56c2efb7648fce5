"""Sampled profiles and call trees, as plain data: what the CPU monitor, the profiler and
MTHawkeye's CPU trace record, and what every profile export reads.

Two shapes, one per stage:

* ``Profile`` — the profiler's compact window: a ``StackTable`` of Python stacks plus a count per
  stack id, in two modes (``wall``: every sample of every thread; ``cpu``: only threads that
  used CPU since the previous sample). Memory grows with distinct stacks, not samples.
* ``CallTree`` — root nodes ``CallNode(frame, count, children)`` where ``count`` is inclusive
  (the samples that passed through the node), as MTHawkeye's ``cpu-highload-stackframe`` stores
  it. A frame is a ``PyFrame`` or, for MTHawkeye's unsymbolicated frames, an ``int`` instruction
  address; symbolication replaces the addresses with ``PyFrame``\\ s (func = symbol, file = source
  file or image, module = image).

Their stored forms are record types (``model.records.cpu``): ``CpuProfile`` for a window,
``CpuHighLoadStackframe`` for a tree in MTHawkeye's node shape, whose frames are
``frame_label`` text (``func (file:line)`` or ``0x…``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Final, Literal

import msgspec

from hawkwatch.model.stack import PyFrame, StackTable

Frame = PyFrame | int
"""A Python frame, or an instruction address not symbolicated yet."""

ProfileMode = Literal["wall", "cpu"]
PROFILE_MODES: Final = ("cpu", "wall")

IN_PROCESS: Final = "in-process"
"""``Profile.sampler`` of the agent's own sampler thread (``sys._current_frames``)."""
PY_SPY: Final = "py-spy"
"""``Profile.sampler`` of windows the supervisor's py-spy took from outside the process: cpu
counts only (py-spy leaves idle threads out), no bias toward where threads release the GIL."""

THREAD_MODULE: Final = "<thread>"
"""Module of the pseudo-frame the profiler puts outermost in each stack: the thread's name."""

EXT_RECORD_END: Final = "\u00b7"
"""Ends each ``<key>,<json>`` record of ``cpu-highload-stackframe-ext`` (U+00B7, bytes C2 B7)."""
EXT_THRESHOLD_BYTES: Final = 15 * 1024
"""A stack-frame tree whose UTF-8 JSON reaches this size goes to the side file instead."""


@functools.cache
def _frame_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """A frame's text and a native address: compiled at the first frame parsed (the report's
    work), not when the agent imports this module at every start."""
    return (
        # func up to the first " (" (Python names have none), file up to the last ":<line>)"
        re.compile(r"^(?P<func>.*?) \((?P<file>.*):(?P<line>-?\d+)\)$", re.DOTALL),
        re.compile(r"^0[xX][0-9a-fA-F]+$"),
    )


def thread_frame(name: str) -> PyFrame:
    """The outermost pseudo-frame naming a thread in profiler stacks."""
    return PyFrame(f"thread {name}", "", 0, THREAD_MODULE)


def is_thread_frame(frame: Frame) -> bool:
    """True for the profiler's thread pseudo-frame (records drop ``module``: the shape tells)."""
    return (
        not isinstance(frame, int)
        and frame.line == 0
        and not frame.file
        and frame.func.startswith("thread ")
    )


def frame_label(frame: Frame) -> str:
    """How a frame is shown and exported: ``func (file:line)``, ``0x…`` or ``thread NAME``."""
    if isinstance(frame, int):
        return f"0x{frame:x}"
    if is_thread_frame(frame):
        return frame.func
    return frame.text


def parse_frame_text(text: str) -> Frame:
    """Inverse of ``frame_label`` (``ValueError`` for an empty string)."""
    if not text:
        raise ValueError("empty frame")
    frame_text, address = _frame_patterns()
    if address.match(text):
        return int(text, 16)
    if text.startswith("thread ") and "(" not in text:
        return PyFrame(text, "", 0, THREAD_MODULE)
    match = frame_text.match(text)
    if match is None:
        return PyFrame(text, "", 0)
    return PyFrame(match["func"], match["file"], int(match["line"]))


class CallNode(msgspec.Struct, frozen=True):
    """One node of a call tree: ``count`` samples passed through it (children included)."""

    frame: Frame
    count: int
    children: tuple[CallNode, ...] = ()

    @property
    def self_count(self) -> int:
        """Samples that stopped here (never negative, even for inconsistent imported trees)."""
        return max(self.count - sum(child.count for child in self.children), 0)


class CallTree(msgspec.Struct, frozen=True):
    """A call tree, outermost frames at the roots; ``total`` = Σ root counts.

    ``interval_s`` is the mean time one sample stands for (0 when unknown, as in MTHawkeye's
    trees); ``mode`` says which samples were counted; ``sampler`` which sampler took them
    (``IN_PROCESS``, ``PY_SPY``; empty when unknown, as for imported trees).
    """

    roots: tuple[CallNode, ...]
    name: str = "profile"
    mode: ProfileMode = "cpu"
    interval_s: float = 0.0
    start_time: float | None = None
    duration_s: float | None = None
    sampler: str = ""

    @property
    def total(self) -> int:
        return sum(root.count for root in self.roots)


def walk_paths(tree: CallTree) -> Iterator[tuple[tuple[Frame, ...], int]]:
    """Every path with samples that stopped on it: ``(frames outermost first, self count)``."""
    stack: list[tuple[CallNode, tuple[Frame, ...]]] = [(root, ()) for root in reversed(tree.roots)]
    while stack:
        node, prefix = stack.pop()
        path = (*prefix, node.frame)
        if node.self_count:
            yield path, node.self_count
        stack.extend((child, path) for child in reversed(node.children))


class Profile(msgspec.Struct, frozen=True):
    """One profiler window: stacks (outermost pseudo-frame = thread) and their sample counts.

    ``counts`` maps a ``table`` stack id to ``(wall samples, cpu samples)``. ``rate_hz`` is the
    mean sampling rate over the window; ``budget`` the CPU fraction the sampler aimed at (0 for a
    fixed rate); ``cost_s`` the time the sampler spent sampling (holding the GIL); ``sampler``
    which sampler took the window (``IN_PROCESS`` or ``PY_SPY``; py-spy windows have cpu counts
    only, their ``samples`` is the number of thread stacks counted).
    """

    start_time: float
    duration_s: float
    samples: int
    rate_hz: float
    table: StackTable
    counts: dict[int, tuple[int, int]]
    budget: float = 0.0
    cost_s: float = 0.0
    max_depth_hit: int = 0
    sampler: str = IN_PROCESS

    def stacks(self, mode: ProfileMode) -> Iterator[tuple[tuple[PyFrame, ...], int]]:
        """``(stack innermost first, count)`` for each stack counted in ``mode``."""
        column = 0 if mode == "wall" else 1
        for stack_id, pair in self.counts.items():
            if pair[column]:
                yield self.table.stack(stack_id), pair[column]


class ThreadShare(msgspec.Struct, frozen=True):
    """A thread's share of the process CPU over a high-load episode."""

    name: str
    native_id: int
    share: float


class HighLoadEpisode(msgspec.Struct, frozen=True):
    """One ``cpu-highload`` episode and its tree (``roots`` empty when the tree was not found).

    ``start_time`` is Unix seconds (MTHawkeye's CFAbsoluteTime keys already converted);
    ``average_percent`` is the mean process CPU over the episode, 100 = one core; ``sampler``
    says which sampler took the tree's samples (empty for MTHawkeye's and older sessions).
    """

    key: str
    start_time: float
    lasting_s: float
    average_percent: float
    roots: tuple[CallNode, ...] = ()
    threads: tuple[ThreadShare, ...] = ()
    sampler: str = ""

    def tree(self) -> CallTree:
        return CallTree(
            self.roots,
            name=f"cpu-highload {self.key}",
            mode="cpu",
            start_time=self.start_time,
            duration_s=self.lasting_s,
            sampler=self.sampler,
        )
