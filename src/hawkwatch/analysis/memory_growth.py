"""Growth of a memory series and of live allocations over snapshots: pure rules shared by the
agent (which acts on them) and reports (which show them). ``detectors.md`` §5.

- Footprint growth: the Theil–Sen slope (median of pairwise slopes) of the readings in a window,
  so one spike or one freed arena does not make or hide a trend; a finding when slope × window
  reaches both ``min_bytes`` and ``min_percent`` of the fitted start.
- Leak suspects: stacks whose live bytes rose in most consecutive snapshots, overall, and
  still in the newer half (warm-up of a bounded cache is not a leak).
  A stack that comes and goes (churn) rises and falls about equally and is not a suspect.
- Growing types: types whose live-instance counts rose the same way.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Mapping, Sequence

from hawkwatch.model.values import Value

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Final, Generic, TypeVar

    K = TypeVar("K", bound=Hashable)
else:
    from hawkwatch._runtime_typing import Generic

    K = Hashable  # at run time only what Generic[K] is given

MAX_POINTS = 32
"""The slope is fitted over at most this many window medians (pairwise slopes: ~500)."""


class GrowthRule(Value):
    """Thresholds of a footprint growth finding (defaults: ≥ 20 MB and ≥ 10 % over 60 s)."""

    __slots__ = ("min_bytes", "min_percent", "window_s")

    def __init__(
        self, window_s: float = 60.0, min_bytes: float = 20 * 1024 * 1024, min_percent: float = 10.0
    ) -> None:
        self.window_s = window_s
        self.min_bytes = min_bytes
        self.min_percent = min_percent


class GrowthFinding(Value):
    """A steady rise over the window's readings."""

    __slots__ = (
        "end_bytes",
        "end_time",
        "samples",
        "slope_bytes_per_s",
        "start_bytes",
        "start_time",
    )

    def __init__(  # noqa: PLR0917 - one argument per attribute, as the Struct had
        self,
        start_time: float,
        end_time: float,
        start_bytes: float,
        end_bytes: float,
        slope_bytes_per_s: float,
        samples: int,
    ) -> None:
        self.start_time = start_time
        self.end_time = end_time
        self.start_bytes = start_bytes
        self.end_bytes = end_bytes
        self.slope_bytes_per_s = slope_bytes_per_s
        self.samples = samples

    @property
    def growth_bytes(self) -> float:
        return self.end_bytes - self.start_bytes

    @property
    def growth_percent(self) -> float:
        return self.growth_bytes / self.start_bytes * 100 if self.start_bytes > 0 else 0.0


def robust_slope(points: Sequence[tuple[float, float]]) -> float:
    """Theil–Sen slope of ``(time, value)`` points; 0 with fewer than two distinct times.

    Long series are first reduced to ``MAX_POINTS`` medians of consecutive runs, which keeps
    the cost bounded (the agent calls this on every reading) and is itself robust.
    """
    import statistics  # with its numeric modules, ~5 ms: not at the agent's start

    if len(points) > MAX_POINTS:
        size = -(-len(points) // MAX_POINTS)
        points = [
            (
                statistics.median(t for t, _ in points[i : i + size]),
                statistics.median(v for _, v in points[i : i + size]),
            )
            for i in range(0, len(points), size)
        ]
    slopes = [
        (v2 - v1) / (t2 - t1)
        for i, (t1, v1) in enumerate(points)
        for t2, v2 in points[i + 1 :]
        if t2 != t1
    ]
    return statistics.median(slopes) if slopes else 0.0


def footprint_growth(
    points: Sequence[tuple[float, float]], rule: GrowthRule
) -> GrowthFinding | None:
    """A finding when the readings of the last ``rule.window_s`` rise steadily enough.

    Needs readings spanning at least 90 % of the window, so a short burst right after start
    is not extrapolated into a trend.
    """
    if len(points) < 3:
        return None
    end = points[-1][0]
    window = [p for p in points if p[0] >= end - rule.window_s]
    if len(window) < 3 or window[-1][0] - window[0][0] < 0.9 * rule.window_s:
        return None
    slope = robust_slope(window)
    if slope <= 0:
        return None
    import statistics

    times = [t for t, _ in window]
    values = [v for _, v in window]
    t_mid, v_mid = statistics.median(times), statistics.median(values)
    start_bytes = v_mid + slope * (window[0][0] - t_mid)
    end_bytes = v_mid + slope * (window[-1][0] - t_mid)
    growth = end_bytes - start_bytes
    percent = growth / start_bytes * 100 if start_bytes > 0 else 0.0
    if growth < rule.min_bytes or percent < rule.min_percent:
        return None
    return GrowthFinding(window[0][0], window[-1][0], start_bytes, end_bytes, slope, len(window))


class SteadyGrowth(Value, Generic[K]):
    """One key (stack, type) that grew across a sequence of observations."""

    __slots__ = ("first", "grown", "key", "last", "steps")

    def __init__(self, key: K, first: int, last: int, grown: int, steps: int) -> None:
        self.key = key
        self.first = first
        self.last = last
        self.grown = grown
        self.steps = steps

    @property
    def growth(self) -> int:
        return self.last - self.first


LEAK_MIN_SHARE: Final = 0.01
"""A leak suspect grew by at least this share of the largest suspect's growth. Small steady
growth beside a real leak is noise: tracemalloc (and memray) charge a block to the code that
first allocated it, and CPython's free lists hand freed dicts, lists and tuples on to other code,
so a leak that keeps such a block can show as a trickle at an innocent site. (Seen in CI: +1.8 KB
at a function that builds and drops 300 dicts, below the example's three leaks.)"""


def steady_growth(
    series: Sequence[Mapping[K, int]],
    *,
    min_growth: int = 1,
    min_fraction: float = 0.6,
    min_share: float = 0.0,
) -> list[SteadyGrowth[K]]:
    """Keys whose value rose in at least ``min_fraction`` of consecutive steps, in total by
    ``min_growth``, and still over the second half; largest total growth first. Missing keys
    count as zero. With ``min_share``, only keys that grew by that share of the largest growth.

    "Still" means the last value is above the middle one (a bounded cache that filled up and
    stayed full is not growing) and no value of the second half is back at or below the first.
    A snapshot that happens to catch a function building a big temporary sees its bytes live
    for that moment: such values come and go (and, by chance, can rise in most steps), where
    leaked bytes stay.
    """
    if len(series) < 2:
        return []
    keys: set[K] = set()
    for observation in series:
        keys.update(observation)
    steps = len(series) - 1
    out = []
    for key in keys:
        values = [observation.get(key, 0) for observation in series]
        grown = sum(1 for a, b in itertools.pairwise(values) if b > a)
        middle = (len(values) - 1) // 2
        still_growing = values[-1] > values[middle] and min(values[middle:]) > values[0]
        if values[-1] - values[0] >= min_growth and grown >= min_fraction * steps and still_growing:
            out.append(SteadyGrowth(key, values[0], values[-1], grown, steps))
    out.sort(key=lambda g: (-g.growth, -g.grown, str(g.key)))
    if out and min_share > 0:
        floor = out[0].growth * min_share
        out = [g for g in out if g.growth >= floor]
    return out
