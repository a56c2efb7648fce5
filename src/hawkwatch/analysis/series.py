"""Statistics of step series: samples that hold their value until the next sample.

The resources monitor (like MTHawkeye's status timer) stores a sample only when the value
changed, so a plain mean over stored samples over-weights busy stretches: ten changes in one
second count ten times more than one value held for a minute. Here each sample is weighted by how
long it held — until the next sample, the last one until ``end_time``.

All functions are pure and take samples sorted by time.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import NamedTuple

_RELATIVE_TOLERANCE = 1e-12


class Sample(NamedTuple):
    time: float
    value: float


def holding_times(samples: Sequence[Sample], end_time: float) -> list[float]:
    """How long each sample held its value, in seconds (never negative).

    A sample at the same time as the next holds for 0 s (the later one wins); the last holds
    until ``end_time``. When every weight is 0 (one instant), each sample weighs 1 instead.
    """
    weights = [max(0.0, later.time - sample.time) for sample, later in itertools.pairwise(samples)]
    if samples:
        weights.append(max(0.0, end_time - samples[-1].time))
    if samples and not any(weights):
        return [1.0] * len(samples)
    return weights


def weighted_mean(values: Sequence[float], weights: Sequence[float]) -> float:
    """Mean of ``values`` weighted by ``weights`` (equal weights when they sum to 0)."""
    if not values:
        raise ValueError("weighted_mean of no values")
    total = math.fsum(weights)
    if total <= 0:
        weights, total = [1.0] * len(values), float(len(values))
    # Normalise first, so products neither overflow nor underflow; clamp away rounding.
    mean = math.fsum(v * (w / total) for v, w in zip(values, weights, strict=True))
    return min(max(values), max(min(values), mean))


def weighted_quantile(values: Sequence[float], weights: Sequence[float], q: float) -> float:
    """The smallest value ``v`` such that values ≤ ``v`` carry at least ``q`` of the weight.

    With equal weights this is the nearest-rank percentile (rank ⌈q·n⌉). ``q`` is in (0, 1].
    """
    if not values:
        raise ValueError("weighted_quantile of no values")
    if not 0 < q <= 1:
        raise ValueError(f"q must be in (0, 1], not {q}")
    pairs = sorted(zip(values, weights, strict=True))
    total = math.fsum(w for _, w in pairs)
    if total <= 0:
        pairs = [(v, 1.0) for v, _ in pairs]
        total = float(len(pairs))
    threshold = q * total * (1 - _RELATIVE_TOLERANCE)
    cumulative = 0.0
    for value, weight in pairs:
        cumulative += weight
        if cumulative >= threshold:
            return value
    return pairs[-1][0]


def quantile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of equally weighted values."""
    return weighted_quantile(values, [1.0] * len(values), q)


def step_means(samples: Sequence[Sample], end_time: float, buckets: int) -> tuple[float, ...]:
    """Time-weighted means of the step function over ``buckets`` equal slices.

    The slices cover ``samples[0].time`` … ``end_time``; the area under the returned points equals
    the area under the series. With no time span at all, returns the single mean value.
    """
    if not samples:
        return ()
    if buckets < 1:
        raise ValueError(f"buckets must be at least 1, not {buckets}")
    start = samples[0].time
    width = (end_time - start) / buckets
    if width <= 0:  # no time span (or one too small to divide)
        return (weighted_mean([s.value for s in samples], [1.0] * len(samples)),)
    areas = [0.0] * buckets
    ends = [s.time for s in samples[1:]] + [end_time]
    for sample, segment_end in zip(samples, ends, strict=True):
        left, right = sample.time, min(segment_end, end_time)
        if right <= left:
            continue
        first = min(buckets - 1, int((left - start) / width))
        last = min(buckets - 1, int((right - start) / width))
        for index in range(first, last + 1):
            bucket_left = start + index * width
            bucket_right = end_time if index == buckets - 1 else bucket_left + width
            overlap = min(right, bucket_right) - max(left, bucket_left)
            if overlap > 0:
                areas[index] += overlap * sample.value
    # Rounding over very short spans can push a mean past the values; keep it within them.
    low, high = min(s.value for s in samples), max(s.value for s in samples)
    return tuple(min(high, max(low, area / width)) for area in areas)


def offset(moment: float, start: float | None) -> float | None:
    """Seconds since ``start``, or None when the start is unknown."""
    return None if start is None else moment - start
