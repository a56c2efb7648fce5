"""The JSON twin of the console report: the same content, keys named after the model's fields.

Top level: ``format`` ("hawkwatch-report"), ``format_version``, then one key per
``SessionReport`` field (``session``, ``launch``, ``resources``, ``events``, ``events_total``,
``spans``, ``gc``, ``imports``, ``exit``, ``errors``, ``errors_total``, ``other_collections``,
``findings``, ``skipped_lines``, ``stalls``, ``cpu``, ``io_issues``, ``crashes``, ``memory`` —
the shape of ``hawkwatch memory --json``, ``report.memory``; then what the session views draw:
``timeline``, ``flame``, ``network``, ``model.session_views``). Absent sections are ``null``;
times are Unix seconds. New fields may be added within a format version; none are renamed or
removed.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TextIO

import msgspec

from hawkwatch.model.report import REPORT_FORMAT, REPORT_VERSION, SessionReport
from hawkwatch.report._json import write_json
from hawkwatch.report.memory import to_json_dict as memory_json

output_file_extension = "json"


def to_json_dict(report: SessionReport) -> dict[str, Any]:
    """The report as JSON-ready dicts, lists and scalars."""
    body = {
        f.name: _jsonable(getattr(report, f.name))
        if f.name != "memory"
        else (memory_json(report.memory) if report.memory is not None else None)
        for f in dataclasses.fields(report)
    }
    return {"format": REPORT_FORMAT, "format_version": REPORT_VERSION, **body}


def render(report: SessionReport, file: TextIO, width: int | None = None) -> None:
    """Write the report as indented JSON (``width`` is accepted for the shared contract)."""
    write_json(to_json_dict(report), file)


def _jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, msgspec.Struct):  # the model's value types (``model.profile``)
        return {name: _jsonable(getattr(value, name)) for name in value.__struct_fields__}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # NamedTuple
        return {name: _jsonable(item) for name, item in zip(value._fields, value, strict=True)}
    if isinstance(value, tuple | list):
        return [_jsonable(item) for item in value]
    return value
