"""The codec every record type shares: one encode (the agent's) and one decode (every reader's).

A record is ``collection,key,value`` (``hawkwatch.model.Record``). A record type is a
``msgspec.Struct`` naming its collection; it says how its key is made from its fields and, for
records written by MTHawkeye or older agents, which fields the key supplies when the value lacks
them. Two value shapes exist:

- ``JsonRecord``: the value is a JSON object of the struct's fields (``None`` and default fields
  omitted). Decoding is lenient where MTHawkeye needs it (``strict=False``: numbers written as
  strings) and names the field in its error (``Expected `float` >= 0.0 - at `$.duration_ms```).
  Unknown fields are ignored, so new fields are an additive change.
- ``ScalarRecord``: the value is one number (``r-mem``: ``"212.50"``), the key a time.

Decoding never raises anything but ``RecordError``, whose text is the reason a report shows.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, ClassVar, Final, Self

import msgspec

from hawkwatch.model.record import Record

MAX_MAGNITUDE: Final = 1e15
"""Larger numbers are no measurement (1e15 s is 30 million years, 1e15 MB a zettabyte); refusing
them keeps sums and time-weighted products far from overflow."""

#: A finite number of sensible magnitude (NaN fails the bounds, so it is refused too).
Finite = Annotated[float, msgspec.Meta(ge=-MAX_MAGNITUDE, le=MAX_MAGNITUDE)]
#: A finite number ≥ 0: durations, sizes, counts written as floats.
NonNegative = Annotated[float, msgspec.Meta(ge=0, le=MAX_MAGNITUDE)]
#: An integer ≥ 0 (pids, counts, sizes).
Count = Annotated[int, msgspec.Meta(ge=0)]


class RecordError(ValueError):
    """A record that does not decode; ``str(error)`` is the reason, naming the field."""


def time_key(unix_time: float) -> str:
    """Record key for a point in time (``%.6f`` Unix seconds, as MTHawkeye writes ``%lf``)."""
    return f"{unix_time:.6f}"


def parse_number(text: str, what: str = "key") -> float:
    """A finite float written as text (``%.6f``, ``%lf``, NSNumber description, JSON number)."""
    try:
        number = float(text)
    except ValueError:
        raise RecordError(f"{what} is not a number") from None
    if not math.isfinite(number):
        raise RecordError(f"{what} is not a finite number")
    if abs(number) > MAX_MAGNITUDE:
        raise RecordError(f"{what} is out of range")
    return number


class JsonRecord(msgspec.Struct, kw_only=True, omit_defaults=True, frozen=True):
    """A record whose value is a JSON object of this struct's fields.

    Subclasses set ``collection`` and implement ``record_key``; those whose key carries a field
    the value may lack (MTHawkeye's variants, older agents) override ``fields_from_key``.
    """

    collection: ClassVar[str]

    def record_key(self) -> str:
        raise NotImplementedError

    @classmethod
    def fields_from_key(cls, key: str) -> dict[str, Any]:
        """Fields the key supplies when the value does not have them; ``RecordError`` if bad."""
        return {}

    def encode_value(self) -> str:
        return msgspec.json.encode(self).decode()

    def to_record(self) -> Record:
        return Record(self.collection, self.record_key(), self.encode_value())

    @classmethod
    def from_record(cls, record: Record) -> Self:
        try:
            data = msgspec.json.decode(record.value)
        except msgspec.DecodeError:
            raise RecordError("value is not JSON") from None
        if not isinstance(data, dict):
            raise RecordError("value is not a JSON object")
        for name, value in cls.fields_from_key(record.key).items():
            data.setdefault(name, value)
        try:
            return msgspec.convert(data, cls, strict=False)
        except msgspec.ValidationError as exc:
            raise RecordError(str(exc)) from None


class ScalarRecord(msgspec.Struct, kw_only=True, frozen=True):
    """A sampled series: the key is the time, the value one number (``value_format``)."""

    collection: ClassVar[str]
    value_format: ClassVar[str] = "{:.2f}"

    time: float
    value: float

    def record_key(self) -> str:
        return time_key(self.time)

    def encode_value(self) -> str:
        return self.value_format.format(self.value)

    def to_record(self) -> Record:
        return Record(self.collection, time_key(self.time), self.value_format.format(self.value))

    @classmethod
    def from_record(cls, record: Record) -> Self:
        return cls(time=parse_number(record.key), value=parse_number(record.value, "value"))


#: Anything with the codec: what the agent writes and what ``decode`` returns.
TypedRecord = JsonRecord | ScalarRecord
