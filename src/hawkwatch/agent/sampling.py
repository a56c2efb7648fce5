"""Randomised waits between samples, so a sampler never phase-locks with periodic work.

A sampler that wakes on a fixed period aliases with work of a commensurate period (a 6 ms / 4 ms
alternation sampled at 100 Hz gave shares of 0.46…0.76 for a truth of 0.60) and with the
interpreter's switch interval. Waits drawn from an exponential distribution make the sample
times a Poisson process: every instant is equally likely to be sampled whatever the program's
rhythm, which is what py-spy's timer does too. The stall watchdog draws uniformly within ±50 %
of its period instead: it must keep its worst-case gap bounded to time stalls.

``_random`` (the C core of ``random``) is used rather than ``random``, which would import
``hashlib`` and friends into every monitored process; tests inject their own ``uniform``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Final

Uniform = Callable[[], float]
"""Returns a float in [0, 1)."""

MAX_FACTOR: Final = 8.0
"""An exponential wait is cut at this many means (probability e^-8 ≈ 0.03 %): one unlucky draw
must not leave a window without samples. The cut lowers the mean by that same 0.03 %."""


def default_uniform() -> Uniform:
    """A fresh generator seeded from the OS, so forked children do not draw the same waits."""
    import _random

    return _random.Random().random


class IntervalDraw:
    """Draws the wait before the next sample from a source of uniform numbers."""

    def __init__(self, uniform: Uniform | None = None) -> None:
        self.uniform = uniform or default_uniform()

    def exponential(self, mean: float) -> float:
        """A wait with mean ``mean`` (memoryless: samples form a Poisson process)."""
        if mean <= 0:
            return 0.0
        u = self.uniform()
        return mean * min(-math.log1p(-u), MAX_FACTOR)

    def jittered(self, mean: float, spread: float = 0.5) -> float:
        """A wait uniform in ``mean × [1 − spread, 1 + spread)``: random phase, bounded gap."""
        if mean <= 0:
            return 0.0
        return mean * (1.0 - spread + 2.0 * spread * self.uniform())
