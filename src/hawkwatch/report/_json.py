"""The one way a JSON output is written: ``format`` and ``format_version`` first, then the body."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TextIO


def document(format: str, version: int, body: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON output: its format's name and version, then ``body``."""
    return {"format": format, "format_version": version, **body}


def write_json(value: Mapping[str, Any], file: TextIO, indent: int = 2) -> None:
    """Indented UTF-8 JSON and a final newline."""
    json.dump(value, file, indent=indent, ensure_ascii=False)
    file.write("\n")
