"""``network-aggregate``: every HTTP request of a window, counted and timed, traced or not.

The agent traces a sample of each host's requests in full (``network-transaction``); every
request, sampled or not, is also folded into one of these per (host, method, status class,
library) and window, so that per-host counts, error rates and total-time quantiles cover all
requests. Totals are kept as a histogram of fixed log buckets (four per octave of µs: a bucket's
bounds are within 25 % of each other), sparse: ``[[bucket, count], ...]``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from hawkwatch.model import collections as c
from hawkwatch.model.network_rules import SUB_BUCKETS
from hawkwatch.model.records._codec import Count, Finite, JsonRecord, NonNegative
from hawkwatch.model.records.network import start_index_fields, start_index_key


def bucket_bounds(bucket: int) -> tuple[int, int]:
    """``[low, high)`` in µs of a bucket (``network_rules.bucket_of(low) == bucket``)."""
    if bucket < SUB_BUCKETS:
        return bucket, bucket + 1
    octave, step = divmod(bucket, SUB_BUCKETS)
    low = (SUB_BUCKETS + step) << (octave - 2)
    return low, low + (1 << (octave - 2))


class NetworkAggregate(JsonRecord, frozen=True):
    """Requests of one (host, method, status class, library) in ``[start, end)`` (Unix s); key
    ``<start>_<index>`` (index: per process)."""

    collection: ClassVar[str] = c.NETWORK_AGGREGATE

    start: Finite
    end: Finite
    host: str
    method: str
    status_class: str
    """``2xx``…``5xx`` by the response's status; ``failed``: no response (an error raised)."""
    library: str
    index: Count = 0
    count: Count = 0
    errors: Count = 0
    """Requests that raised, or answered 5xx."""
    traced: Count = 0
    """Of ``count``, how many were traced in full (have a ``network-transaction`` record)."""
    response_bytes: Count = 0
    """Body bytes received, as far as the client counted them (not for every library)."""
    total_ms_sum: NonNegative = 0.0
    total_ms_max: NonNegative = 0.0
    histogram: tuple[tuple[Count, Count], ...] = ()
    """``[bucket, count]`` of the requests' totals (``bucket_bounds``), ascending buckets."""

    def record_key(self) -> str:
        return start_index_key(self.start, self.index)

    @classmethod
    def fields_from_key(cls, key: str) -> dict[str, Any]:
        return start_index_fields(key)
