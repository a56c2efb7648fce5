"""``RecordListing`` (``hawkwatch records``) as tab-separated lines and as JSON
(``hawkwatch-records``: every record as ``{"collection", "key", "value"}``, in stored order)."""

from __future__ import annotations

from typing import Any, Final, TextIO

from hawkwatch.api.listing import RecordListing
from hawkwatch.report._json import document

FORMAT: Final = "hawkwatch-records"
FORMAT_VERSION: Final = 1


def render_text(result: RecordListing, file: TextIO) -> None:
    """One record per line: collection, key, value (``repr`` when the value spans lines)."""
    for record in result.records:
        value = repr(record.value) if "\n" in record.value else record.value
        file.write(f"{record.collection}\t{record.key}\t{value}\n")


def to_json(result: RecordListing) -> dict[str, Any]:
    return document(
        FORMAT,
        FORMAT_VERSION,
        {
            "session": result.session,
            "collection": result.collection,
            "records": [record._asdict() for record in result.records],
            "skipped": [{"line": s.line, "reason": s.reason} for s in result.skipped],
        },
    )


def summary(result: RecordListing) -> str:
    text = f"{len(result.records):,} records from {result.session}"
    if result.skipped:
        first = result.skipped[0]
        text += (
            f"; skipped {len(result.skipped):,} unreadable lines "
            f"(first: line {first.line}, {first.reason})"
        )
    return text
