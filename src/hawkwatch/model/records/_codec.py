"""The codec every record type shares: one encode (the agent's) and one decode (every reader's).

A record is ``collection,key,value`` (``hawkwatch.model.Record``). A record type is a
``msgspec.Struct`` naming its collection and saying how its key is made from its fields. Shapes:

- ``JsonRecord``: the value is a JSON object of the struct's fields, in field order (fields at
  their default — ``None`` for optional ones — are omitted; a field the writer must always write,
  even as ``null``, has no default and is listed in ``legacy_defaults`` for values written
  before it existed). Decoding is lenient where MTHawkeye needs it (``strict=False``: numbers
  written as strings) and names the field in its error (``Expected `float` >= 0.0 - at
  `$.duration_ms```). Unknown fields are ignored, so new fields are an additive change. Fields
  the key holds (a time, a name) are taken from the key when the value lacks them
  (``time_field``, ``name_field``).
- ``ScalarRecord``: the value is one number (``r-mem``: ``"212.50"``), the key a time.
- Anything else (``cpu-highload-stackframe``: a JSON array) subclasses ``TypedRecord`` and
  writes its own ``encode_value``/``from_record``.

Encoding gives UTF-8 bytes (``encode_value``), which the store appends as they are; decoding
never raises anything but ``RecordError``, whose text is the reason a report shows. Records are
immutable and hold no cycles, so they are not tracked by the garbage collector (``gc=False``):
writing one adds nothing to the host's next collection.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
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

_encode: Final = msgspec.json.Encoder().encode


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


def decode_json(text: str | bytes) -> Any:
    """Any JSON value; ``RecordError`` for text that is not JSON or nests too deeply."""
    try:
        return msgspec.json.decode(text)
    except msgspec.DecodeError:
        raise RecordError("value is not JSON") from None
    except RecursionError:
        raise RecordError("value is nested too deeply") from None


def convert(data: Any, kind: type[Any]) -> Any:
    """``data`` (decoded JSON) as ``kind``, MTHawkeye's numbers-as-strings accepted."""
    try:
        return msgspec.convert(data, kind, strict=False)
    except msgspec.ValidationError as exc:
        raise RecordError(str(exc)) from None
    except RecursionError:
        raise RecordError("value is nested too deeply") from None


class TypedRecord(msgspec.Struct, kw_only=True, frozen=True, gc=False):
    """Base of every record type: a collection, a key, and a value encoded as bytes."""

    collection: ClassVar[str]

    def record_key(self) -> str:
        raise NotImplementedError

    def encode_value(self) -> bytes:
        """The value as UTF-8 bytes (JSON never holds a raw line break; the store checks)."""
        raise NotImplementedError

    def to_record(self, key: str | None = None) -> Record:
        return Record(self.collection, key or self.record_key(), self.encode_value().decode())

    @classmethod
    def from_record(cls, record: Record) -> Self:
        """Decode; ``RecordError`` (naming the field) when the record does not fit the type."""
        raise NotImplementedError


class JsonRecord(TypedRecord, kw_only=True, omit_defaults=True, frozen=True):
    """A record whose value is a JSON object of this struct's fields.

    Subclasses set ``collection``; those keyed by a time name its field in ``time_field`` (the
    key is then that time, and a value lacking it — MTHawkeye's, an older agent's — takes it
    from the key); others implement ``record_key``.
    """

    time_field: ClassVar[str | None] = None
    """The field holding the time the key is made of."""
    name_field: ClassVar[str | None] = None
    """The field holding the key itself (a name), for records keyed by something else."""
    legacy_defaults: ClassVar[Mapping[str, Any]] = {}
    """Values for fields always written now that older writers (or MTHawkeye) may lack."""

    @classmethod
    def fields_from_key(cls, key: str) -> dict[str, Any]:
        """Other fields the key supplies when the value lacks them (override for keys that are
        neither a time nor a name); ``RecordError`` if the key is bad."""
        return {}

    def record_key(self) -> str:
        if self.name_field is not None:
            name: str = getattr(self, self.name_field)
            return name
        if self.time_field is None:
            raise NotImplementedError
        moment: float = getattr(self, self.time_field)
        return time_key(moment)

    def encode_value(self) -> bytes:
        return _encode(self)

    @classmethod
    def from_record(cls, record: Record) -> Self:
        return cls.from_value(decode_json(record.value), record.key)

    @classmethod
    def from_value(cls, data: Any, key: str = "") -> Self:
        """Decode an already parsed value (side files hold the same shape as records)."""
        if not isinstance(data, dict):
            raise RecordError("value is not a JSON object")
        if cls.time_field is not None and data.get(cls.time_field) is None:
            data[cls.time_field] = parse_number(key)
        if cls.name_field is not None and data.get(cls.name_field) is None:
            data[cls.name_field] = key
        for field, value in cls.fields_from_key(key).items():
            if data.get(field) is None:
                data[field] = value
        for field, value in cls.legacy_defaults.items():
            data.setdefault(field, value)
        result: Self = convert(data, cls)
        return result


class ScalarRecord(TypedRecord, kw_only=True, frozen=True):
    """A sampled series: the key is the time, the value one number (``value_format``)."""

    value_format: ClassVar[str] = "%.2f"
    _line_format: ClassVar[str] = "%.6f,%.2f"

    time: float
    value: float

    def record_key(self) -> str:
        return time_key(self.time)

    def encode_value(self) -> bytes:
        return (self.value_format % self.value).encode()

    def line_text(self) -> str:
        """``key,value`` as the store writes them (one step: the resources monitor's path)."""
        return self._line_format % (self.time, self.value)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._line_format = f"%.6f,{cls.value_format}"

    @classmethod
    def from_record(cls, record: Record) -> Self:
        return cls(time=parse_number(record.key), value=parse_number(record.value, "value"))
