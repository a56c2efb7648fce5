"""The statistical error of a sampled share: how far the truth may be from what the samples say.

A share measured from ``n`` samples, ``k`` of which landed in a function, is a binomial
proportion; its 95 % Wilson score interval stays inside [0, 1] and behaves at ``k`` = 0 or ``n``
(unlike the normal approximation). Samples of a running program are not quite independent (one
long call spans several), so the interval is a lower bound on the uncertainty, which is still
what tells a user whether 12 % against 9 % means anything after 200 samples.
"""

from __future__ import annotations

import math
from typing import Final

Z95: Final = 1.959963984540054


def wilson_interval(hits: int, total: int, z: float = Z95) -> tuple[float, float]:
    """(low, high) bounds of the share ``hits / total``; (0, 1) when there are no samples."""
    if total <= 0:
        return 0.0, 1.0
    p = min(max(hits / total, 0.0), 1.0)
    z2 = z * z
    centre = (p + z2 / (2 * total)) / (1 + z2 / total)
    half = z * math.sqrt(p * (1 - p) / total + z2 / (4 * total * total)) / (1 + z2 / total)
    low = 0.0 if hits <= 0 else max(centre - half, 0.0)
    high = 1.0 if hits >= total else min(centre + half, 1.0)
    return low, high
