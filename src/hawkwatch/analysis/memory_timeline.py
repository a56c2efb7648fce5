"""Live bytes at chosen moments of a recording, from allocation lifetimes.

memray's temporal records give, per stack, intervals of allocations: made before snapshot ``a``
(and after ``a - 1``), freed before snapshot ``f`` (``None``: never freed). Leak detection needs
what the tracemalloc tracer gets directly: the live bytes of each stack at a few moments, so
consecutive moments compare stack by stack (``memory_growth.steady_growth``).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from typing import NamedTuple


class Lifetime(NamedTuple):
    """Allocations sharing one stack, made before snapshot ``made_before``, freed before
    snapshot ``freed_before`` (``None``: still live at the end)."""

    made_before: int
    freed_before: int | None
    blocks: int
    bytes: int


def sample_points(times: Sequence[float], end: float, points: int) -> list[int]:
    """``points`` snapshot indices spread evenly in time over the recording (snapshots taken at
    ``times``, ascending; index ``len(times)`` stands for ``end``, after the last snapshot).

    Even in time, not in index: a busy process's snapshots come late and sparse, an idle one's
    on time, so equal index steps would be unequal stretches of the app's life.
    """
    moments = [*times, end]
    if len(moments) < 2 or points <= 0:
        return []
    first, last = moments[1], moments[-1]  # snapshot 0 is taken before anything was recorded
    chosen = []
    for i in range(points):
        target = first + (last - first) * i / max(points - 1, 1)
        index = bisect.bisect_left(moments, target, lo=1)
        if index >= len(moments) or (
            index > 1 and target - moments[index - 1] <= moments[index] - target
        ):
            index -= 1
        chosen.append(index)
    return sorted(set(chosen))


def live_at(lifetimes: Iterable[Lifetime], points: Sequence[int]) -> list[tuple[int, int]]:
    """``(bytes, count)`` live at each point: made before it, not freed before or at it."""
    out = [[0, 0] for _ in points]
    for life in lifetimes:
        first = bisect.bisect_left(points, life.made_before)  # points ascend
        for index in range(first, len(points)):
            if life.freed_before is not None and life.freed_before <= points[index]:
                break  # freed before this point, so before the later ones too
            out[index][0] += life.bytes
            out[index][1] += life.blocks
    return [(size, count) for size, count in out]
