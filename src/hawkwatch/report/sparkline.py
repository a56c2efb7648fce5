"""Sparklines: a row of eighth-block characters, one per value."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

BLOCKS: Final = "▁▂▃▄▅▆▇█"
FLAT: Final = BLOCKS[3]
"""Drawn for every value when all are equal: a flat line, neither low nor high."""


def sparkline(values: Sequence[float], low: float | None = None, high: float | None = None) -> str:
    """One block per value, scaled so ``low`` is ``▁`` and ``high`` is ``█``.

    ``low`` and ``high`` default to the smallest and largest value; values outside are clamped;
    non-finite values are drawn as a space.
    """
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return " " * len(values)
    bottom = min(finite) if low is None else low
    top = max(finite) if high is None else high
    span = top - bottom
    top_index = len(BLOCKS) - 1
    chars = []
    for value in values:
        if not math.isfinite(value):
            chars.append(" ")
        elif span <= 0:
            chars.append(FLAT)
        else:
            index = math.floor((value - bottom) / span * top_index + 0.5)
            chars.append(BLOCKS[min(top_index, max(0, index))])
    return "".join(chars)
