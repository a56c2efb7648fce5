"""``DebugFileList`` (``hawkwatch symbols add/list``) as lines and as JSON
(``hawkwatch-debug-files``)."""

from __future__ import annotations

from typing import Any, Final, TextIO

from hawkwatch.api.symbols import DebugFileList
from hawkwatch.report._json import document
from hawkwatch.symbols import DebugFile

FORMAT: Final = "hawkwatch-debug-files"
FORMAT_VERSION: Final = 1


def render_text(result: DebugFileList, file: TextIO) -> None:
    """One line per debug file: debug id, architecture, what it holds, name and source."""
    for info in result.files:
        file.write(line(info) + "\n")


def line(info: DebugFile) -> str:
    kind = "dwarf " if info.has_debug_info else "symtab"
    return f"{info.debug_id}  {info.arch:<7} {kind}  {info.name}  ({info.source})"


def to_json(result: DebugFileList) -> dict[str, Any]:
    return document(
        FORMAT,
        FORMAT_VERSION,
        {
            "root": result.root,
            "files": [
                {
                    "debug_id": info.debug_id,
                    "code_id": info.code_id,
                    "arch": info.arch,
                    "name": info.name,
                    "has_debug_info": info.has_debug_info,
                    "text_vmaddr": f"0x{info.text_vmaddr:x}",
                    "source": info.source,
                }
                for info in result.files
            ],
            "skipped": [{"source": source, "reason": why} for source, why in result.skipped],
        },
    )
