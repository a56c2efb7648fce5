"""``docs/collections.md`` against ``model.records``: every type documented, every documented
collection typed, and the field names the page lists are the types' fields."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import pytest

from hawkwatch.model import collections as c
from hawkwatch.model.records import RECORD_TYPES, JsonRecord, TypedRecord

DOC = (Path(__file__).resolve().parents[2] / "docs" / "collections.md").read_text()
_ROW = re.compile(r"^\| `([a-z][a-z0-9-]*)` \|(.*)$", re.MULTILINE)
_FIELDS_SECTION = DOC.split("## Value fields by type", 1)[-1]
_NAMED = re.compile(r'"(\w+)"\??:')  # a field name as the tables write it: "name": or "name"?:


def _rows(text: str) -> dict[str, str]:
    return {name: rest for name, rest in _ROW.findall(text)}


def _encoded_names(kind: type) -> list[str]:
    return [f.encode_name for f in msgspec.structs.fields(kind)]


def _all_names(kind: object, seen: set[object] | None = None) -> set[str]:
    """Field names of a struct and of every struct nested in it (lists, unions, options)."""
    seen = set() if seen is None else seen
    names: set[str] = set()
    info = msgspec.inspect.type_info(kind)
    stack = [info]
    while stack:
        item = stack.pop()
        if isinstance(item, msgspec.inspect.StructType):
            if item.cls in seen:
                continue
            seen.add(item.cls)
            for field in item.fields:
                names.add(field.encode_name)
                stack.append(field.type)
        for attribute in ("types", "item_types"):  # unions, fixed tuples
            stack.extend(getattr(item, attribute, ()))
        for attribute in ("item_type", "type"):  # lists, variadic tuples, Annotated
            inner = getattr(item, attribute, None)
            if isinstance(inner, msgspec.inspect.Type):
                stack.append(inner)
    return names


def test_every_record_type_is_documented_and_every_documented_collection_has_a_type() -> None:
    documented = set(_rows(DOC.split("## Value fields by type", 1)[0]))
    mthawkeye_section = DOC.split("## MTHawkeye collections hawkwatch reads", 1)[1]
    read_only = set(re.findall(r"`([a-z][a-z0-9-]*)`", mthawkeye_section.split("\n\n", 2)[1]))
    for collection in RECORD_TYPES:
        assert collection in documented or collection in read_only, collection
    for collection in documented:
        assert collection in RECORD_TYPES, f"{collection} is documented but has no record type"
    assert set(c.AGENT_COLLECTIONS) <= documented


@pytest.mark.parametrize(
    "kind",
    [k for k in RECORD_TYPES.values() if issubclass(k, JsonRecord)],
    ids=lambda k: k.collection,
)
def test_the_field_list_of_each_json_type_is_its_fields_in_order(kind: type[JsonRecord]) -> None:
    row = _rows(_FIELDS_SECTION).get(kind.collection)
    assert row is not None, f"{kind.collection} missing from 'Value fields by type'"
    type_cell, fields_cell = row.split("|")[0:2]
    assert type_cell.strip() == f"`{kind.__name__}`"
    listed = re.findall(r"`(\w+)`", fields_cell)
    assert listed == _encoded_names(kind)
    optional = set(re.findall(r"`(\w+)`\?", fields_cell))
    defaults = {
        f.encode_name
        for f in msgspec.structs.fields(kind)
        if f.default is not msgspec.NODEFAULT or f.default_factory is not msgspec.NODEFAULT
    }
    assert optional == defaults, "fields marked ? are those the writer may omit"


@pytest.mark.parametrize("collection", sorted(_rows(DOC.split("## What", 1)[0])))
def test_every_field_a_shape_names_is_a_field_of_the_type(collection: str) -> None:
    kind: type[TypedRecord] = RECORD_TYPES[collection]
    named = set(_NAMED.findall(_rows(DOC)[collection]))
    fields = _all_names(getattr(kind, "value_type", kind))
    assert named <= fields, sorted(named - fields)
