"""Python frames and stacks, the shape every stack-carrying collection shares.

A frame is ``(func, file, line, module)``; its compact text form is ``func (file:line)``.
Stacks are tuples listed **innermost first**, as in crash reports and MTHawkeye. In records a
stack is a JSON list of ``[func, file, line]`` triples (module is derivable from the file and is
left out to keep records small): ``model.records.StackFrame``.

``StackTable`` is the uniquing table of ARCHITECTURE.md: each distinct (frame, parent) pair gets
one id, so a profile of a million samples over a few hundred distinct stacks stays small.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Generic, NamedTuple, Self, TypeVar

    F = TypeVar("F", bound=Hashable)
else:
    from hawkwatch._runtime_typing import Generic, NamedTuple

    F = Hashable  # at run time only what Generic[F] is given


class PyFrame(NamedTuple):
    """One Python frame: qualified function name, source file, line number, module name."""

    func: str
    file: str
    line: int
    module: str = ""

    @property
    def text(self) -> str:
        """Compact form ``func (file:line)``, the one used by collapsed stacks and reports."""
        return f"{self.func} ({self.file}:{self.line})"

    @property
    def location(self) -> tuple[str, str]:
        """The frame without its line: what stays the same while a loop body runs."""
        return (self.func, self.file)


Stack = tuple[PyFrame, ...]
"""Innermost frame first."""


class UniquingTable(Generic[F]):
    """Stacks as ``(frame index, parent id)`` nodes: equal stacks and common tails cost one id.

    Node ``i`` is ``(frame_index, parent_id)`` with parent ``-1`` for an outermost frame; frames
    are stored once in ``frames``. Node ids are handed out parents first (a node's parent id is
    always smaller), so a single forward pass over ``nodes`` can rebuild or transform the table.
    """

    def __init__(self) -> None:
        self.frames: list[F] = []
        self.nodes: list[tuple[int, int]] = []
        self._frame_ids: dict[F, int] = {}
        self._node_ids: dict[tuple[int, int], int] = {}

    def __len__(self) -> int:
        return len(self.nodes)

    def frame_id(self, frame: F) -> int:
        """Index of ``frame`` in ``frames``, added on first sight."""
        found = self._frame_ids.get(frame)
        if found is None:
            found = self._frame_ids[frame] = len(self.frames)
            self.frames.append(frame)
        return found

    def child(self, frame_id: int, parent: int) -> int:
        """Id of the stack ``parent`` (-1: none) with frame ``frame_id`` called from it."""
        key = (frame_id, parent)
        node = self._node_ids.get(key)
        if node is None:
            node = self._node_ids[key] = len(self.nodes)
            self.nodes.append(key)
        return node

    def push(self, frame: F, parent: int) -> int:
        """``child`` for a frame value."""
        return self.child(self.frame_id(frame), parent)

    def add(self, stack: Sequence[F]) -> int:
        """Id of ``stack`` (innermost first); -1 for the empty stack."""
        parent = -1
        for frame in reversed(stack):
            parent = self.child(self.frame_id(frame), parent)
        return parent

    def stack(self, stack_id: int) -> tuple[F, ...]:
        """The frames of a stack id, innermost first (empty for -1)."""
        frames: list[F] = []
        while stack_id >= 0:
            frame_id, stack_id = self.nodes[stack_id]
            frames.append(self.frames[frame_id])
        return tuple(frames)

    @classmethod
    def restore(cls, frames: Sequence[F], nodes: Sequence[tuple[int, int]]) -> Self:
        """Rebuild a stored table (ids kept); ``ValueError`` when a node points outside it."""
        table = cls()
        for frame in frames:
            table._frame_ids.setdefault(frame, len(table.frames))
            table.frames.append(frame)
        for index, (frame_id, parent) in enumerate(nodes):
            if not 0 <= frame_id < len(table.frames) or not -1 <= parent < index:
                raise ValueError(f"node {index} points outside the table")
            table._node_ids.setdefault((frame_id, parent), index)
            table.nodes.append((frame_id, parent))
        return table


class StackTable(UniquingTable[PyFrame]):
    """The uniquing table of Python stacks; ``model.records.CpuProfile`` is its stored form."""
