"""Timed work recorded one by one: garbage-collection pauses, spans and slow imports."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

import msgspec

from hawkwatch.model import collections as c
from hawkwatch.model.records._codec import Count, Finite, JsonRecord, NonNegative

#: A name that says something (spans, modules).
Name = Annotated[str, msgspec.Meta(min_length=1)]


class GcPause(JsonRecord, kw_only=True, frozen=True):
    """A collection longer than ``gc.threshold_ms``; key: its start time.

    ``start`` is in the value since the typed model (older records have it in the key only).
    """

    collection: ClassVar[str] = c.GC_PAUSE
    time_field: ClassVar[str | None] = "start"

    start: Finite
    generation: int
    duration_ms: NonNegative
    collected: Count | None = None
    uncollectable: Count | None = None
    thread: str | None = None


class CustomSpan(JsonRecord, kw_only=True, frozen=True):
    """A ``with hawkwatch.span(name):`` block; key: its start time."""

    collection: ClassVar[str] = c.CUSTOM_SPAN
    time_field: ClassVar[str | None] = "start"

    name: Name
    start: Finite
    duration_ms: NonNegative
    thread: str | None = None
    error: str | None = None


class ImportTime(JsonRecord, kw_only=True, frozen=True):
    """An import whose cumulative time reached ``imports.threshold_ms``; key: the module.

    ``time`` is when the import started (Unix s, None in older records); ``parent`` is the
    module whose import caused it (written as ``null`` at top level). ``module`` is in the value
    since the typed model (older records: the key only).
    """

    collection: ClassVar[str] = c.IMPORT_TIME
    name_field: ClassVar[str | None] = "module"
    legacy_defaults: ClassVar[Mapping[str, Any]] = {"parent": None, "time": None}

    time: Finite | None
    self_us: Count | None = None
    cumulative_us: Count
    parent: str | None
    thread: str | None = None
    module: Name

    @property
    def cumulative_ms(self) -> float:
        return self.cumulative_us / 1000

    @property
    def self_ms(self) -> float | None:
        return None if self.self_us is None else self.self_us / 1000
