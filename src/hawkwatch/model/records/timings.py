"""Timed work recorded one by one: garbage-collection pauses (more to move here: spans, imports)."""

from __future__ import annotations

from typing import Any, ClassVar

from hawkwatch.model import collections as c
from hawkwatch.model.records._codec import (
    Count,
    Finite,
    JsonRecord,
    NonNegative,
    parse_number,
    time_key,
)


class GcPause(JsonRecord, frozen=True):
    """A collection longer than ``gc.threshold_ms``; key: its start time.

    ``start`` is in the value since the typed model (older records have it in the key only).
    """

    collection: ClassVar[str] = c.GC_PAUSE

    start: Finite
    generation: int
    duration_ms: NonNegative
    collected: Count | None = None
    uncollectable: Count | None = None
    thread: str | None = None

    def record_key(self) -> str:
        return time_key(self.start)

    @classmethod
    def fields_from_key(cls, key: str) -> dict[str, Any]:
        return {"start": parse_number(key)}
