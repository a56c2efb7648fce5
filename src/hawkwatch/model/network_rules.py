"""Network facts the agent needs at start as well as the analysis, without the typed model.

The agent's network monitor starts with every program, so what it shares with the detectors
lives here, importing nothing (``hawkwatch run -- python -c pass`` loads neither ``msgspec`` nor
``dataclasses``); ``model.network`` and ``model.records.network_aggregate`` take them from here.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Final

#: Clients that block the calling thread: on a loop's thread they stall every task.
BLOCKING_LIBRARIES: Final = frozenset({"requests", "urllib3", "urllib.request", "http.client"})
SLOW_REQUEST_MS: Final = 1000.0
"""A request this long or longer is slow (``NetworkThresholds.slow_ms``'s default)."""
SUB_BUCKETS: Final = 4
"""Histogram buckets per doubling of a total (µs); 0..3 µs have a bucket each."""


def bucket_of(total_us: int) -> int:
    """The histogram bucket of a total in µs (integer arithmetic: no log)."""
    if total_us < SUB_BUCKETS:
        return max(total_us, 0)
    octave = total_us.bit_length() - 1  # 2 ** octave <= total_us
    return SUB_BUCKETS * octave + ((total_us >> (octave - 2)) & (SUB_BUCKETS - 1))
