"""The statistics of paired benchmarks: the ABBA order, one ratio per adjacent pair, a
distribution-free interval of the ratios' median, and the verdict against a target.

Used by ``profiler_paired.py``, ``steady_paired.py`` and ``agent_overhead.py``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def abba(pairs: int) -> list[bool]:
    """Whether each of ``2 × pairs`` segments is "on": on-off, off-on, on-off, … (a drift in the
    machine's speed falls on both sides of the pairs alike)."""
    return [k % 4 in (0, 3) for k in range(2 * pairs)]


def pair_ratios(segments: Sequence[Sequence[float]], column: int) -> list[float]:
    """One ratio per adjacent pair of segments in ``abba`` order: its "on" segment's value over
    its "off" one's, minus 1."""
    ratios = []
    for k in range(0, len(segments) - 1, 2):
        on_first = k % 4 == 0
        on, off = (segments[k], segments[k + 1]) if on_first else (segments[k + 1], segments[k])
        ratios.append(on[column] / off[column] - 1)
    return ratios


def median_interval(values: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """A distribution-free confidence interval of the median: (low, high, coverage).

    The order statistics x(k) and x(n+1-k) for the largest k with P(Binomial(n, 1/2) < k)
    <= (1 - level) / 2, whose coverage is then at least ``level``; with too few values for that
    (n < 6 at 95 %), the whole range and its lower coverage.
    """
    ordered = sorted(values)
    n = len(ordered)
    k = 1
    while k < n // 2 and sum(math.comb(n, i) for i in range(k + 1)) / 2**n <= (1 - level) / 2:
        k += 1
    coverage = 1 - 2 * sum(math.comb(n, i) for i in range(k)) / 2**n
    return ordered[k - 1], ordered[n - k], coverage


def verdict(low: float, high: float, target: float) -> str:
    """ "met" when the interval's upper end is within the target, "not met" when its lower end is
    beyond it, else "not decided" (the interval spans the target)."""
    if high <= target:
        return "met"
    if low > target:
        return "not met"
    return "not decided"
