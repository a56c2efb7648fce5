"""The records and JSON files an agent writes at start and exit, encoded with the standard
library alone.

A short program (``hawkwatch run -- python -c pass``) writes only ``launch-time``,
``custom-time-event``, ``app-launch``, ``exit-state``, ``hawkwatch-error`` and the sampled
series. Importing ``msgspec`` and the typed model (``hawkwatch.model.records``) for them would
cost more than the rest of the agent's start, so these stand-ins write the same bytes the typed
records write (JSON as ``msgspec.json`` encodes it: field order, ``None`` defaults omitted, its
float and string forms). The typed model stays the one definition: ``tests/model/
test_plain_records.py`` checks every field list here against ``msgspec.structs.fields`` of its
type and the bytes against msgspec's over generated values. Readers decode with the typed model.

The JSON files of a session the agent writes at start or from a hook (``session.json``,
``exit-evidence.json``, ``exit-intent.json``, the stall monitor's markers) and the text of
``hawkwatch.event``'s extra come from ``json_text``, which writes what ``json.dumps`` writes
without importing ``json``: its decoder imports ``re`` (and ``re``, ``enum``), some 10 M
instructions no start needs. The same test checks it against ``json.dumps`` over generated
values.
"""

from __future__ import annotations

import itertools
import math

from hawkwatch.model import collections as c

try:  # CPython's C string encoders, what ``json`` itself uses (no ``re`` import)
    from _json import encode_basestring as _quote
    from _json import encode_basestring_ascii as _quote_ascii
except ImportError:  # pragma: no cover - other Pythons
    from json.encoder import py_encode_basestring as _quote
    from json.encoder import py_encode_basestring_ascii as _quote_ascii

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any


def json_float(number: float) -> str:
    """``number`` as msgspec writes it: shortest round-trip digits, ``null`` for inf and NaN,
    fixed notation from 1e-5 up to 1e16 and ``1e16``/``1.5e-7`` (no ``+``, no leading zero)
    outside it (``repr`` switches at 1e-4 and writes ``1e+16``)."""
    if not math.isfinite(number):
        return "null"
    text = float.__repr__(number)
    mantissa, e, exponent = text.partition("e")
    if not e:
        return text
    power = int(exponent)
    if power != -5:
        return f"{mantissa}e{power}"
    sign, digits = ("-", mantissa[1:]) if mantissa.startswith("-") else ("", mantissa)
    return f"{sign}0.0000{digits.replace('.', '')}"


def json_value(value: object) -> str:
    """One JSON scalar as msgspec encodes it; ``TypeError`` for anything else."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        quoted: str = _quote(value)
        return quoted
    if isinstance(value, float):
        return json_float(value)
    if isinstance(value, int):
        return int.__repr__(value)
    raise TypeError(f"no plain JSON encoding for {type(value).__name__}")


def json_text(
    value: object,
    *,
    indent: int | None = None,
    ensure_ascii: bool = True,
    default: Callable[[Any], Any] | None = None,
) -> str:
    """``json.dumps(value, indent=indent, ensure_ascii=ensure_ascii, default=default)``, with
    the separators ``(",", ":")`` when ``indent`` is None, without importing ``json``.

    The same text, and the same errors: ``TypeError`` for a value ``json`` cannot encode (and
    ``default`` does not turn into one) or a key that is not a string, number, bool or None,
    ``ValueError`` for a circular reference.
    """
    parts: list[str] = []
    _Encoder(_quote_ascii if ensure_ascii else _quote, indent, default, parts).value(value, 0)
    return "".join(parts)


def json_round_trip(value: object, *, default: Callable[[Any], Any] | None = None) -> Any:
    """What ``json.loads(json_text(value, default=default))`` gives, built without the text:
    tuples become lists, keys strings, ``default``'s stand-ins their JSON values.

    ``ValueError`` (rather than a wrong answer) for a string holding a UTF-16 surrogate pair,
    which the round trip through ``\\u`` escapes would join into one character; and for
    whatever ``json_text`` refuses.
    """
    return _copy(value, default, {})


def _json_float(number: float) -> str:
    """A float as ``json`` writes it (``repr``; ``NaN``, ``Infinity``, ``-Infinity``)."""
    if math.isfinite(number):
        return float.__repr__(number)
    if math.isnan(number):
        return "NaN"
    return "Infinity" if number > 0 else "-Infinity"


def _json_key(key: object) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, float):
        return _json_float(key)
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    if isinstance(key, int):
        return int.__repr__(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {key.__class__.__name__}")


class _Encoder:
    """``json.encoder._make_iterencode``'s walk, appending to ``parts``."""

    __slots__ = ("default", "indent", "key_separator", "markers", "parts", "quote")

    def __init__(
        self,
        quote: Callable[[str], str],
        indent: int | None,
        default: Callable[[Any], Any] | None,
        parts: list[str],
    ) -> None:
        self.quote = quote
        self.indent = None if indent is None else " " * indent
        self.key_separator = ":" if indent is None else ": "
        self.default = default
        self.markers: dict[int, object] = {}
        self.parts = parts

    def value(self, value: object, level: int) -> None:
        parts = self.parts
        if isinstance(value, str):
            parts.append(self.quote(value))
        elif value is None:
            parts.append("null")
        elif value is True:
            parts.append("true")
        elif value is False:
            parts.append("false")
        elif isinstance(value, int):
            parts.append(int.__repr__(value))  # IntEnum and other subclasses: the number
        elif isinstance(value, float):
            parts.append(_json_float(value))
        elif isinstance(value, list | tuple):
            self.sequence(value, level)
        elif isinstance(value, dict):
            self.mapping(value, level)
        else:
            marker = self.enter(value)
            if self.default is None:
                raise TypeError(_not_serializable(value))
            self.value(self.default(value), level)
            del self.markers[marker]

    def enter(self, container: object) -> int:
        marker = id(container)
        if marker in self.markers:
            raise ValueError("Circular reference detected")
        self.markers[marker] = container
        return marker

    def sequence(self, items: list[Any] | tuple[Any, ...], level: int) -> None:
        parts = self.parts
        if not items:
            parts.append("[]")
            return
        marker = self.enter(items)
        separator, closing = self.separators(level)
        parts.append("[")
        for index, item in enumerate(items):
            parts.append(separator if index else separator[1:])
            self.value(item, level + 1)
        parts.append(closing + "]")
        del self.markers[marker]

    def mapping(self, items: dict[Any, Any], level: int) -> None:
        parts = self.parts
        if not items:
            parts.append("{}")
            return
        marker = self.enter(items)
        separator, closing = self.separators(level)
        parts.append("{")
        first = True
        for key, item in items.items():
            parts.append(separator[1:] if first else separator)
            first = False
            parts.append(self.quote(_json_key(key)))
            parts.append(self.key_separator)
            self.value(item, level + 1)
        parts.append(closing + "}")
        del self.markers[marker]

    def separators(self, level: int) -> tuple[str, str]:
        """Between items (the first without the comma), and before the closing bracket."""
        if self.indent is None:
            return ",", ""
        return ",\n" + self.indent * (level + 1), "\n" + self.indent * level


def _copy(value: object, default: Callable[[Any], Any] | None, markers: dict[int, object]) -> Any:
    if isinstance(value, str):
        text = str.__str__(value)
        if not text.isascii() and _has_surrogate_pair(text):
            raise ValueError("a UTF-16 surrogate pair does not survive a JSON round trip")
        return text
    if value is None or value is True or value is False:
        return value
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    marker = id(value)
    if marker in markers:
        raise ValueError("Circular reference detected")
    markers[marker] = value
    copied: Any
    if isinstance(value, list | tuple):
        copied = [_copy(item, default, markers) for item in value]
    elif isinstance(value, dict):
        copied = {}
        for key, item in value.items():
            copied[_copy(_json_key(key), None, markers)] = _copy(item, default, markers)
    elif default is None:
        raise TypeError(_not_serializable(value))
    else:
        copied = _copy(default(value), default, markers)
    del markers[marker]
    return copied


def _has_surrogate_pair(text: str) -> bool:
    return any(
        "\ud800" <= high <= "\udbff" and "\udc00" <= low <= "\udfff"
        for high, low in itertools.pairwise(text)
    )


def _not_serializable(value: object) -> str:
    return f"Object of type {value.__class__.__name__} is not JSON serializable"


#: The agent's exit reason (``exit-state``) when the program replaced itself with ``os.exec*``.
EXEC_EXIT_REASON = "exec"


def time_key(unix_time: float) -> str:
    """``hawkwatch.model.records.time_key``: ``%.6f`` Unix seconds."""
    return f"{unix_time:.6f}"


class PlainRecord:
    """An encoded record; what the store needs of a typed one (``collection``, ``record_key``,
    ``encode_value``)."""

    __slots__ = ("_key", "_value", "collection")

    def __init__(self, collection: str, key: str, value: bytes) -> None:
        self.collection = collection
        self._key = key
        self._value = value

    def record_key(self) -> str:
        return self._key

    def encode_value(self) -> bytes:
        return self._value

    def __repr__(self) -> str:
        return f"PlainRecord({self.collection!r}, {self._key!r}, {self._value!r})"


class PlainJsonType:
    """A ``JsonRecord`` type's encoding: its fields in order, those omitted when ``None``
    (a ``None`` default), and what its key is (the time field's value, the name field's, or a
    fixed key)."""

    __slots__ = ("collection", "fields", "fixed_key", "name_field", "optional", "time_field")

    def __init__(
        self,
        collection: str,
        fields: tuple[str, ...],
        optional: tuple[str, ...] = (),
        *,
        time_field: str | None = None,
        name_field: str | None = None,
        fixed_key: str | None = None,
    ) -> None:
        self.collection = collection
        self.fields = fields
        self.optional = frozenset(optional)
        self.time_field = time_field
        self.name_field = name_field
        self.fixed_key = fixed_key

    def __call__(self, **values: object) -> PlainRecord:
        """The record of these field values (required ones missing: ``KeyError``)."""
        return PlainRecord(self.collection, self.key_of(values), self.encode(values))

    def encode(self, values: Mapping[str, object]) -> bytes:
        unknown = values.keys() - set(self.fields)
        if unknown:
            raise TypeError(f"{self.collection}: unknown fields {sorted(unknown)}")
        parts = []
        for name in self.fields:
            if name in self.optional:
                value = values.get(name)
                if value is None:
                    continue
            else:
                value = values[name]
            parts.append(f'"{name}":{json_value(value)}')
        return ("{" + ",".join(parts) + "}").encode()

    def key_of(self, values: Mapping[str, object]) -> str:
        if self.fixed_key is not None:
            return self.fixed_key
        if self.name_field is not None:
            return str(values[self.name_field])
        moment = values[self.time_field or ""]
        return time_key(moment)  # type: ignore[arg-type]


CUSTOM_TIME_EVENT = PlainJsonType(
    c.CUSTOM_TIME_EVENT, ("time", "event", "extra"), ("event", "extra"), time_field="time"
)
EXIT_STATE = PlainJsonType(
    c.EXIT_STATE,
    ("clean", "exit_code", "signal", "signal_name", "reason", "exception", "source", "time"),
    time_field="time",
)
HAWKWATCH_ERROR = PlainJsonType(
    c.HAWKWATCH_ERROR,
    ("plugin", "phase", "error", "traceback", "time"),
    ("traceback",),
    time_field="time",
)
_LAUNCH_FIELDS = (
    "process_start",
    "interpreter_ready",
    "agent_started",
    "main_started",
    "ready",
    "duration_s",
    "appLaunchTime",
    "firstObjcLoadStartTime",
    "lastObjcLoadEndTime",
    "staticInitializerStartTime",
    "staticInitializerEndTime",
    "applicationInitTime",
    "appDidLaunchEnterTime",
    "appDidLaunchExitTime",
)
APP_LAUNCH = PlainJsonType(c.APP_LAUNCH, _LAUNCH_FIELDS, _LAUNCH_FIELDS, fixed_key="0")

# Written from a ``gc`` callback and an import hook, where importing the typed model could
# re-enter the hook or the collector; and by ``hawkwatch.span``, in the program's own thread.
GC_PAUSE = PlainJsonType(
    c.GC_PAUSE,
    ("start", "generation", "duration_ms", "collected", "uncollectable", "thread"),
    ("collected", "uncollectable", "thread"),
    time_field="start",
)
IMPORT_TIME = PlainJsonType(
    c.IMPORT_TIME,
    ("time", "self_us", "cumulative_us", "parent", "thread", "module"),
    ("self_us", "thread"),
    name_field="module",
)
CUSTOM_SPAN = PlainJsonType(
    c.CUSTOM_SPAN,
    ("name", "start", "duration_ms", "thread", "error"),
    ("thread", "error"),
    time_field="start",
)

#: Every plain JSON type, by the name of the typed record it stands in for.
JSON_TYPES = {
    "CustomTimeEvent": CUSTOM_TIME_EVENT,
    "ExitState": EXIT_STATE,
    "HawkwatchError": HAWKWATCH_ERROR,
    "AppLaunch": APP_LAUNCH,
    "GcPause": GC_PAUSE,
    "ImportTime": IMPORT_TIME,
    "CustomSpan": CUSTOM_SPAN,
}


def launch_time(start: float) -> PlainRecord:
    """``LaunchTime(start=start)``: key and value ``repr`` of the time rounded to µs."""
    text = repr(round(start, 6))
    return PlainRecord(c.LAUNCH_TIME, text, text.encode())


class PlainScalar:
    """A sampled-series value (``ScalarRecord``): the key its time, the value one number."""

    __slots__ = ("collection", "time", "value", "value_format")

    def __init__(self, collection: str, value_format: str, time: float, value: float) -> None:
        self.collection = collection
        self.value_format = value_format
        self.time = time
        self.value = value

    def record_key(self) -> str:
        return time_key(self.time)

    def encode_value(self) -> bytes:
        return (self.value_format % self.value).encode()

    def line_text(self) -> str:
        """``key,value`` as the store writes them (``ScalarRecord.line_text``)."""
        return f"{self.time:.6f},{self.value_format % self.value}"


#: ``value_format`` of each series the agent samples, by typed record name.
SERIES_FORMATS = {
    "ResidentMemory": (c.MEMORY_RESIDENT, "%.2f"),
    "Footprint": (c.RESIDENT_FOOTPRINT, "%.2f"),
    "AvailableMemory": (c.AVAILABLE_MEMORY, "%.2f"),
    "CpuUsage": (c.CPU, "%.1f"),
    "ThreadsCount": (c.THREADS_COUNT, "%.0f"),
}


def series(name: str, time: float, value: float) -> PlainScalar:
    """The ``name`` series' record (``series("ResidentMemory", now, mb)``)."""
    collection, value_format = SERIES_FORMATS[name]
    return PlainScalar(collection, value_format, time, value)


def exit_classification(
    *,
    time: float,
    kind: str,
    exit_code: int | None = None,
    signal: int | None = None,
    evidence: tuple[str, ...] = (),
    source: str = "",
) -> PlainRecord:
    """``ExitClassification(...)``: written by ``hawkwatch run``'s supervisor for a program
    that ended normally, without loading the typed model (defaults omitted, as msgspec does)."""
    parts = [f'"time":{json_float(time)}', f'"kind":{json_value(kind)}']
    if exit_code is not None:
        parts.append(f'"exit_code":{json_value(exit_code)}')
    if signal is not None:
        parts.append(f'"signal":{json_value(signal)}')
    if evidence:
        parts.append(f'"evidence":[{",".join(json_value(str(e)) for e in evidence)}]')
    if source:
        parts.append(f'"source":{json_value(source)}')
    value = ("{" + ",".join(parts) + "}").encode()
    return PlainRecord(c.EXIT_CLASSIFICATION, time_key(time), value)
