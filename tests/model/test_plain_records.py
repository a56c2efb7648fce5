"""``model.plain_records`` (the agent's start and exit records without msgspec) against the typed
model: the same fields in the same order, the same defaults, and the same bytes for any value."""

from __future__ import annotations

import json
import math
from typing import Any

import msgspec
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hawkwatch.model import plain_records as plain
from hawkwatch.model import records as typed
from hawkwatch.model.records import LaunchTime, ScalarRecord
from hawkwatch.model.records.crash import EXIT_KINDS
from hawkwatch.store.records import encode_typed

FLOATS = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from(
    [1e16, 1e15, 9999999999999998.0, 1e-5, 1.25e-5, -1e-5, 1e-4, 9.99e-6, 1.5e-7, -0.0, 0.0,
     5e-324, 1e300, -1e22, 123456789012345.67, 1764034844.123456]
)  # fmt: skip
TEXT = st.text() | st.sampled_from(
    ["", '"', "\\", "\n\r\t\b\f\x00\x1f\x7f", "é\u2028\u2029\U0001f600"]
)
SCALARS = st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | FLOATS | TEXT


def _typed(name: str) -> type[typed.JsonRecord]:
    kind: type[typed.JsonRecord] = getattr(typed, name)
    return kind


@pytest.mark.parametrize("name", sorted(plain.JSON_TYPES))
def test_each_plain_type_has_its_typed_records_fields_order_and_defaults(name: str) -> None:
    kind, stand_in = _typed(name), plain.JSON_TYPES[name]
    fields = msgspec.structs.fields(kind)
    assert stand_in.fields == tuple(f.encode_name for f in fields)
    assert stand_in.optional == {f.encode_name for f in fields if f.default is None}
    # no other default: a plain type omits a field only when it is None
    assert all(f.required or f.default is None for f in fields)
    assert stand_in.collection == kind.collection
    assert stand_in.time_field == kind.time_field
    assert stand_in.name_field == kind.name_field


def test_each_series_has_its_typed_records_collection_and_format() -> None:
    for name, (collection, value_format) in plain.SERIES_FORMATS.items():
        kind = getattr(typed, name)
        assert issubclass(kind, ScalarRecord)
        assert (kind.collection, kind.value_format) == (collection, value_format)
        assert [f.name for f in msgspec.structs.fields(kind)] == ["time", "value"]


@settings(max_examples=1000)
@given(st.data())
def test_plain_records_encode_byte_for_byte_as_msgspec(data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(sorted(plain.JSON_TYPES)))
    kind, stand_in = _typed(name), plain.JSON_TYPES[name]
    values: dict[str, object] = {}
    for field in msgspec.structs.fields(kind):
        if field.required or data.draw(st.booleans()):
            drawn = {kind.time_field: FLOATS, kind.name_field: TEXT}.get(field.name, SCALARS)
            values[field.name] = data.draw(drawn)
    try:
        expected: bytes | type[Exception] = encode_typed(kind(**values))
    except (UnicodeEncodeError, ValueError) as exc:  # lone surrogates; a key with a comma
        expected = type(exc)
    if isinstance(expected, bytes):
        assert encode_typed(stand_in(**values)) == expected  # type: ignore[arg-type]
    else:
        with pytest.raises(expected):
            encode_typed(stand_in(**values))  # type: ignore[arg-type]


@settings(max_examples=1000)
@given(FLOATS)
@example(1e16)
@example(-1.25e-5)
@example(math.inf)
@example(math.nan)
def test_a_float_is_written_as_msgspec_writes_it(number: float) -> None:
    assert plain.json_float(number).encode() == msgspec.json.encode(number)


@given(TEXT)
def test_a_string_is_quoted_as_msgspec_quotes_it(text: str) -> None:
    try:
        expected = msgspec.json.encode(text)
    except UnicodeEncodeError:
        with pytest.raises(UnicodeEncodeError):
            plain.json_value(text).encode()
    else:
        assert plain.json_value(text).encode() == expected


@given(st.floats(min_value=0, max_value=4e9))
def test_launch_time_is_the_typed_records_bytes(start: float) -> None:
    assert encode_typed(plain.launch_time(start)) == encode_typed(LaunchTime(start=start))  # type: ignore[arg-type]


@given(st.sampled_from(sorted(plain.SERIES_FORMATS)), FLOATS, FLOATS)
def test_series_records_are_the_typed_records_bytes(name: str, time: float, value: float) -> None:
    kind = getattr(typed, name)
    record, stand_in = kind(time=time, value=value), plain.series(name, time, value)
    assert stand_in.record_key() == record.record_key()
    assert stand_in.encode_value() == record.encode_value()
    assert stand_in.line_text() == record.line_text()


def test_an_unknown_field_or_a_value_json_has_no_plain_form_for_is_refused() -> None:
    with pytest.raises(TypeError, match="unknown fields"):
        plain.CUSTOM_TIME_EVENT(time=1.0, evnt="x")
    with pytest.raises(TypeError, match="no plain JSON encoding for list"):
        plain.CUSTOM_TIME_EVENT(time=1.0, event=["x"])
    with pytest.raises(KeyError):
        plain.EXIT_STATE(time=1.0)


@settings(max_examples=500)
@given(
    st.fixed_dictionaries(
        {
            "time": st.floats(min_value=0, max_value=4e9),
            "kind": st.sampled_from(EXIT_KINDS),
            "exit_code": st.none() | st.integers(-(2**31), 2**31),
            "signal": st.none() | st.integers(1, 64),
            "evidence": st.lists(TEXT, max_size=3).map(tuple),
            "source": TEXT,
        }
    )
)
def test_an_exit_classification_is_the_typed_records_bytes(values: dict[str, Any]) -> None:
    try:
        expected = encode_typed(typed.ExitClassification(**values))
    except UnicodeEncodeError:
        with pytest.raises(UnicodeEncodeError):
            encode_typed(plain.exit_classification(**values))
        return
    assert encode_typed(plain.exit_classification(**values)) == expected


def test_the_exit_classification_stand_in_knows_every_field() -> None:
    fields = msgspec.structs.fields(typed.ExitClassification)
    assert [f.encode_name for f in fields] == [
        "time", "kind", "exit_code", "signal", "evidence", "source"
    ]  # fmt: skip
    defaults = {f.name: f.default for f in fields if not f.required}
    assert defaults == {"exit_code": None, "signal": None, "evidence": (), "source": ""}


class _Opaque:
    """A value ``json`` cannot encode: ``default=str`` writes its ``str``."""

    def __str__(self) -> str:
        return "opaque é"


class _Number(int):
    def __repr__(self) -> str:
        return "not the number"


class _Text(str):
    __slots__ = ()


class _Decimal(float):
    def __repr__(self) -> str:
        return "not the float"


JSON_KEYS = st.none() | st.booleans() | st.integers() | FLOATS | TEXT
JSON_LEAVES = SCALARS | st.integers().map(_Number) | FLOATS.map(_Decimal) | st.text().map(_Text)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(JSON_KEYS, inner, max_size=4)
    ),
    max_leaves=20,
)


def _same(left: object, right: object) -> bool:
    """Equal, of the same types, with dict keys in the same order (NaN equals NaN)."""
    if type(left) is not type(right):
        return False
    if isinstance(left, float) and isinstance(right, float):
        return left == right or (math.isnan(left) and math.isnan(right))
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(_same, left, right))
    if isinstance(left, dict) and isinstance(right, dict):
        return list(left) == list(right) and all(_same(left[k], right[k]) for k in left)
    return left == right


@settings(max_examples=1000)
@given(JSON_VALUES, st.sampled_from([None, 2, 4]), st.booleans())
@example({"argv": ["a", "é\u2028"], 2: (), 2.5: {}, None: [], True: math.nan}, 2, True)
@example([_Opaque(), {"x": _Opaque()}], None, False)
def test_json_text_is_json_dumps(value: object, indent: int | None, ascii: bool) -> None:
    options: dict[str, Any] = {"indent": indent, "ensure_ascii": ascii, "default": str}
    separators = (",", ":") if indent is None else None
    try:
        expected: str | type[Exception] = json.dumps(value, separators=separators, **options)
    except (TypeError, ValueError) as exc:
        expected = type(exc)
    if isinstance(expected, str):
        assert plain.json_text(value, **options) == expected
    else:
        with pytest.raises(expected):
            plain.json_text(value, **options)


@settings(max_examples=1000)
@given(JSON_VALUES)
@example("\ud83d\ude00")
@example({"a": ("\ud800", "\udc00x")})
def test_json_round_trip_is_what_json_reads_back(value: object) -> None:
    try:
        expected = json.loads(json.dumps(value, default=str))
    except (TypeError, ValueError):
        expected = None
    try:
        copied = plain.json_round_trip(value, default=str)
    except ValueError:
        # refused only where the text would not read back as it was written
        assert expected is None or "\\ud" in json.dumps(value, default=str)
        return
    assert _same(copied, expected)


def test_json_text_refuses_what_json_dumps_refuses() -> None:
    looped: list[object] = []
    looped.append(looped)
    for bad, error, words in [
        ({(1, 2): 3}, TypeError, "keys must be str, int, float, bool or None, not tuple"),
        ([_Opaque()], TypeError, "Object of type _Opaque is not JSON serializable"),
        (looped, ValueError, "Circular reference detected"),
    ]:
        with pytest.raises(error, match=words):
            json.dumps(bad)
        with pytest.raises(error, match=words):
            plain.json_text(bad)
        with pytest.raises(error, match=words):
            plain.json_round_trip(bad)
