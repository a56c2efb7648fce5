"""Typed records: one type per collection, one codec each (``_codec``).

The agent writes only through these types (``AgentContext.write``); every reader decodes through
``decode_all``, which keeps what decodes, counts what does not (collection, key, reason) and
passes collections without a type through as raw ``Record``s. ``docs/collections.md`` is
checked against ``RECORD_TYPES`` by ``tests/test_docs.py``.

To add a collection: name it in ``model/collections.py``, write its type in the module of its
monitor's family here (``JsonRecord`` for a JSON value, ``ScalarRecord`` for one number), list it
in ``RECORD_TYPES``, and document it in ``docs/collections.md``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final, NamedTuple, TypeVar

from hawkwatch.model.record import Record
from hawkwatch.model.records._codec import (
    MAX_MAGNITUDE,
    Count,
    Finite,
    JsonRecord,
    NonNegative,
    RecordError,
    ScalarRecord,
    TypedRecord,
    parse_number,
    time_key,
)
from hawkwatch.model.records.memory import (
    MEMORY_TYPES,
    GrowingType,
    LeakSuspect,
    MemoryGrowth,
    MemorySnapshot,
    MemoryTrace,
)
from hawkwatch.model.records.series import (
    SERIES_TYPES,
    AvailableMemory,
    CpuUsage,
    Footprint,
    FrameRate,
    GlFrameRate,
    ResidentMemory,
    ThreadsCount,
)
from hawkwatch.model.records.timings import GcPause

#: Every record type, by collection name.
RECORD_TYPES: Final[dict[str, type[TypedRecord]]] = {
    kind.collection: kind for kind in (*SERIES_TYPES, GcPause)
}
RECORD_TYPES.update({kind.collection: kind for kind in MEMORY_TYPES})

T = TypeVar("T", bound=TypedRecord)


class Rejected(NamedTuple):
    """A record that did not decode: where it is and why."""

    collection: str
    key: str
    reason: str


def decode(record: Record) -> TypedRecord | Record:
    """The record as its collection's type (raw when the collection has none); ``RecordError``."""
    kind = RECORD_TYPES.get(record.collection)
    return record if kind is None else kind.from_record(record)


@dataclass
class DecodedRecords:
    """A session's records decoded: typed by collection, raw where untyped, and the rejects."""

    typed: dict[str, list[TypedRecord]] = field(default_factory=dict)
    raw: dict[str, list[Record]] = field(default_factory=dict)
    rejected: list[Rejected] = field(default_factory=list)

    def of(self, kind: type[T]) -> list[T]:
        """Decoded records of ``kind``'s collection, in stored order."""
        return self.typed.get(kind.collection, [])  # type: ignore[return-value]

    def raw_of(self, collection: str) -> list[Record]:
        return self.raw.get(collection, [])


def decode_all(records: Iterable[Record]) -> DecodedRecords:
    """Decode every record; a bad one becomes a ``Rejected``, never an exception."""
    decoded = DecodedRecords()
    for record in records:
        kind = RECORD_TYPES.get(record.collection)
        if kind is None:
            decoded.raw.setdefault(record.collection, []).append(record)
            continue
        try:
            item = kind.from_record(record)
        except RecordError as exc:
            decoded.rejected.append(Rejected(record.collection, record.key, str(exc)))
        else:
            decoded.typed.setdefault(record.collection, []).append(item)
    return decoded


__all__ = [
    "MAX_MAGNITUDE",
    "RECORD_TYPES",
    "AvailableMemory",
    "Count",
    "CpuUsage",
    "DecodedRecords",
    "Finite",
    "Footprint",
    "FrameRate",
    "GcPause",
    "GlFrameRate",
    "GrowingType",
    "JsonRecord",
    "LeakSuspect",
    "MemoryGrowth",
    "MemorySnapshot",
    "MemoryTrace",
    "NonNegative",
    "RecordError",
    "Rejected",
    "ResidentMemory",
    "ScalarRecord",
    "ThreadsCount",
    "TypedRecord",
    "decode",
    "decode_all",
    "parse_number",
    "time_key",
]
