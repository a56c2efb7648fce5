"""Typed records: one type per collection, one codec each (``_codec``).

The agent writes only through these types (``AgentContext.write``); every reader decodes through
``decode_all``, which keeps what decodes, counts what does not (collection, key, reason) and
passes collections without a type through as raw ``Record``s. ``docs/collections.md`` is
checked against ``RECORD_TYPES`` by ``tests/model/test_records_docs.py``.

Modules by family: ``launch``, ``series``, ``timings``, ``events``, ``stall``, ``cpu``.

To add a collection: name it in ``model/collections.py``, write its type in the module of its
monitor's family here (``JsonRecord`` for a JSON object value: set ``time_field`` when the key is
a time, else implement ``record_key``; ``ScalarRecord`` for one number), list it in
``RECORD_TYPES``, and document it in ``docs/collections.md`` (the table and "Value fields by
type"; ``tests/model/test_records_docs.py`` checks both). ``encode_value()`` gives UTF-8 bytes;
``to_record()`` a ``Record`` of text.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, NamedTuple, TypeVar

import msgspec

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
    decode_json,
    parse_number,
    time_key,
)
from hawkwatch.model.records.cpu import (
    CF_ABSOLUTE_EPOCH,
    CpuHighLoad,
    CpuHighLoadStackframe,
    CpuProfile,
    ThreadShareValue,
    TimeBase,
)
from hawkwatch.model.records.crash import (
    CRASH_TYPES,
    Breadcrumb,
    Cause,
    Crash,
    ExitClassification,
    MemoryLevel,
    ThreadStack,
)
from hawkwatch.model.records.crash import Frame as CrashRecordFrame
from hawkwatch.model.records.events import CustomTimeEvent, ExitState, HawkwatchError
from hawkwatch.model.records.io import IoFrame, IoIssue
from hawkwatch.model.records.launch import AppLaunch, LaunchTime
from hawkwatch.model.records.memory import (
    MEMORY_TYPES,
    GcCycles,
    GrowingType,
    LeakSuspect,
    MemoryGrowth,
    MemorySnapshot,
    MemoryTrace,
)
from hawkwatch.model.records.network import CallSite, NetworkTransaction, Phases
from hawkwatch.model.records.network_aggregate import NetworkAggregate
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
from hawkwatch.model.records.stall import (
    Anr,
    AnrGc,
    AnrPoint,
    AnrSample,
    AnrStall,
    AnrTask,
    HangKill,
    PointFrame,
    StackFrame,
    merge_parts,
)
from hawkwatch.model.records.store import StoreDropped
from hawkwatch.model.records.timings import CustomSpan, GcPause, ImportTime

#: Every record type, by collection name.
RECORD_TYPES: Final[dict[str, type[TypedRecord]]] = {
    kind.collection: kind
    for kind in (
        LaunchTime,
        AppLaunch,
        *SERIES_TYPES,
        GcPause,
        CustomSpan,
        ImportTime,
        CustomTimeEvent,
        ExitState,
        HawkwatchError,
        Anr,
        HangKill,
        CpuHighLoad,
        CpuHighLoadStackframe,
        CpuProfile,
        NetworkTransaction,
        NetworkAggregate,
        StoreDropped,
        IoIssue,
        *CRASH_TYPES,
    )
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


class DecodedRecords(msgspec.Struct):
    """A session's records decoded: typed by collection, raw where untyped, and the rejects.

    Typed records keep their keys (``keyed``): a few collections need them (``anr`` parts,
    the episode a ``cpu-highload-stackframe`` belongs to).
    """

    typed: dict[str, list[tuple[str, TypedRecord]]] = msgspec.field(default_factory=dict)
    raw: dict[str, list[Record]] = msgspec.field(default_factory=dict)
    rejected: list[Rejected] = msgspec.field(default_factory=list)

    def of(self, kind: type[T]) -> list[T]:
        """Decoded records of ``kind``'s collection, in stored order."""
        return [item for _, item in self.keyed(kind)]

    def keyed(self, kind: type[T]) -> list[tuple[str, T]]:
        """``(key, record)`` of ``kind``'s collection, in stored order."""
        return self.typed.get(kind.collection, [])  # type: ignore[return-value]

    def raw_of(self, collection: str) -> list[Record]:
        return self.raw.get(collection, [])

    def count(self, collection: str) -> int:
        """Records of ``collection`` that decoded (or, untyped, were read)."""
        return len(self.typed.get(collection, ())) + len(self.raw.get(collection, ()))


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
            decoded.typed.setdefault(record.collection, []).append((record.key, item))
    return decoded


__all__ = [
    "CF_ABSOLUTE_EPOCH",
    "MAX_MAGNITUDE",
    "RECORD_TYPES",
    "Anr",
    "AnrGc",
    "AnrPoint",
    "AnrSample",
    "AnrStall",
    "AnrTask",
    "AppLaunch",
    "AvailableMemory",
    "Breadcrumb",
    "CallSite",
    "Cause",
    "Count",
    "CpuHighLoad",
    "CpuHighLoadStackframe",
    "CpuProfile",
    "CpuUsage",
    "Crash",
    "CrashRecordFrame",
    "CustomSpan",
    "CustomTimeEvent",
    "DecodedRecords",
    "ExitClassification",
    "ExitState",
    "Finite",
    "Footprint",
    "FrameRate",
    "GcCycles",
    "GcPause",
    "GlFrameRate",
    "GrowingType",
    "HangKill",
    "HawkwatchError",
    "ImportTime",
    "IoFrame",
    "IoIssue",
    "JsonRecord",
    "LaunchTime",
    "LeakSuspect",
    "MemoryGrowth",
    "MemoryLevel",
    "MemorySnapshot",
    "MemoryTrace",
    "NetworkAggregate",
    "NetworkTransaction",
    "NonNegative",
    "Phases",
    "PointFrame",
    "RecordError",
    "Rejected",
    "ResidentMemory",
    "ScalarRecord",
    "StackFrame",
    "StoreDropped",
    "ThreadShareValue",
    "ThreadStack",
    "ThreadsCount",
    "TimeBase",
    "TypedRecord",
    "decode",
    "decode_all",
    "decode_json",
    "merge_parts",
    "parse_number",
    "time_key",
]
