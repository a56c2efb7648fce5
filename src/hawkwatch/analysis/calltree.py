"""Call trees from sampled stacks: build, merge, and rank frames (pure, stdlib only).

The agent uses this module too (the high-load trace merges its samples into a tree), so it
imports nothing beyond the standard library and ``hawkwatch.model``. Trees are built from
``(stack innermost first, count)`` pairs; children are ordered by count, largest first, ties by
first appearance, so the same samples always give the same tree.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from hawkwatch.model.profile import (
    PY_SPY,
    CallNode,
    CallTree,
    Frame,
    Profile,
    ProfileMode,
    is_thread_frame,
)


class _Builder:
    __slots__ = ("children", "count")

    def __init__(self) -> None:
        self.count = 0
        self.children: dict[Frame, _Builder] = {}

    def freeze(self, frame: Frame) -> CallNode:
        kids = sorted(self.children.items(), key=lambda item: -item[1].count)
        return CallNode(frame, self.count, tuple(child.freeze(f) for f, child in kids))


def build_roots(stacks: Iterable[tuple[Sequence[Frame], int]]) -> tuple[CallNode, ...]:
    """Merge stacks (innermost first) with their counts into root nodes, outermost first."""
    root = _Builder()
    for stack, count in stacks:
        if count <= 0 or not stack:
            continue
        node = root
        for frame in reversed(stack):
            child = node.children.get(frame)
            if child is None:
                child = node.children[frame] = _Builder()
            child.count += count
            node = child
    return root.freeze(0).children


def merge_roots(trees: Iterable[Sequence[CallNode]]) -> tuple[CallNode, ...]:
    """One tree holding the samples of several (same frames at the same place add up)."""
    root = _Builder()

    def add(into: _Builder, node: CallNode) -> None:
        child = into.children.get(node.frame)
        if child is None:
            child = into.children[node.frame] = _Builder()
        child.count += node.count
        for grandchild in node.children:
            add(child, grandchild)

    for roots in trees:
        for node in roots:
            add(root, node)
    return root.freeze(0).children


def windows_for(profiles: Sequence[Profile], mode: ProfileMode) -> list[Profile]:
    """The windows that speak for ``mode``: in cpu mode py-spy's when the session has any (it
    sees where threads really are; counting both samplers would count the time twice), in wall
    mode the in-process sampler's (py-spy's windows have no wall counts)."""
    outside = [p for p in profiles if p.sampler == PY_SPY]
    if mode == "cpu" and outside:
        return outside
    inside = [p for p in profiles if p.sampler != PY_SPY]
    return inside or outside


def build_profile_tree(
    profiles: Sequence[Profile], mode: ProfileMode = "cpu", *, name: str = "profile"
) -> CallTree:
    """The call tree of one or more profiler windows in ``mode`` (``windows_for`` picks them)."""
    profiles = windows_for(profiles, mode)
    stacks = [pair for profile in profiles for pair in profile.stacks(mode)]
    samples = sum(p.samples for p in profiles)
    duration = sum(p.duration_s for p in profiles)
    return CallTree(
        build_roots(stacks),
        name=name,
        mode=mode,
        interval_s=duration / samples if samples else 0.0,
        start_time=min((p.start_time for p in profiles), default=None),
        duration_s=duration if profiles else None,
        sampler=", ".join(sorted({p.sampler for p in profiles})),
    )


@dataclass(frozen=True, slots=True)
class FrameCost:
    """A frame's share of a tree: ``self_count`` samples stopped in it, ``total_count`` passed
    through it (counted once per sample even under recursion); proportions are of the tree total."""

    frame: Frame
    self_count: int
    total_count: int
    self_proportion: float
    total_proportion: float


def top_frames(
    roots: Sequence[CallNode],
    limit: int = 10,
    *,
    by: str = "self",
    skip_threads: bool = True,
    by_function: bool = False,
) -> list[FrameCost]:
    """The ``limit`` costliest frames, by ``self`` (default) or ``total`` samples.

    Thread pseudo-frames are left out unless ``skip_threads`` is false. With ``by_function``
    the lines of one function count together (the frame returned has line 0).
    """
    total = sum(root.count for root in roots)
    self_counts: dict[Frame, int] = {}
    total_counts: dict[Frame, int] = {}

    def visit(node: CallNode, above: frozenset[Frame]) -> None:
        frame = node.frame
        if by_function and not isinstance(frame, int):
            frame = frame._replace(line=0)
        self_counts[frame] = self_counts.get(frame, 0) + node.self_count
        if frame not in above:  # recursion: count the outermost occurrence only
            total_counts[frame] = total_counts.get(frame, 0) + node.count
            above = above | {frame}
        for child in node.children:
            visit(child, above)

    for root in roots:
        visit(root, frozenset())
    costs = [
        FrameCost(
            frame,
            self_counts.get(frame, 0),
            count,
            self_counts.get(frame, 0) / total if total else 0.0,
            count / total if total else 0.0,
        )
        for frame, count in total_counts.items()
        if not (skip_threads and _is_thread(frame))
    ]

    def key(cost: FrameCost) -> int:
        return cost.self_count if by == "self" else cost.total_count

    costs.sort(key=lambda cost: -key(cost))
    return [cost for cost in costs if key(cost) > 0][:limit]


def frame_proportions(
    roots: Sequence[CallNode], predicate_names: Sequence[str]
) -> dict[str, float]:
    """Share of the samples that passed through a frame whose function is each given name."""
    total = sum(root.count for root in roots)
    result: dict[str, float] = {}
    for name in predicate_names:
        hits = 0
        for node, path in _paths(roots):
            if node.self_count and any(_func(f) == name for f in path):
                hits += node.self_count
        result[name] = hits / total if total else 0.0
    return result


def _paths(roots: Sequence[CallNode]) -> Iterable[tuple[CallNode, tuple[Frame, ...]]]:
    stack: list[tuple[CallNode, tuple[Frame, ...]]] = [(root, (root.frame,)) for root in roots]
    while stack:
        node, path = stack.pop()
        yield node, path
        stack.extend((child, (*path, child.frame)) for child in node.children)


def _func(frame: Frame) -> str:
    return frame.func if not isinstance(frame, int) else f"0x{frame:x}"


def _is_thread(frame: Frame) -> bool:
    return is_thread_frame(frame)
