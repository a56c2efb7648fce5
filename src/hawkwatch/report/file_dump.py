"""``FileDump`` (``hawkwatch debug dump``) as text and as JSON (``hawkwatch-dump``).

Bytes are shown as text with control characters and invalid UTF-8 escaped (``\\x1b``, ``\\xff``),
so a damaged file cannot drive the terminal.
"""

from __future__ import annotations

from typing import Any, Final, TextIO

from hawkwatch.api.debug import FileDump
from hawkwatch.report._json import document

FORMAT: Final = "hawkwatch-dump"
FORMAT_VERSION: Final = 1


def printable(data: bytes) -> str:
    """``data`` as UTF-8 where it is, with control characters and bad bytes escaped."""
    text = data.decode("utf-8", errors="backslashreplace")
    return "".join(
        char if char.isprintable() or char == "\t" else char.encode("unicode_escape").decode()
        for char in text
    )


def render_text(result: FileDump, file: TextIO) -> None:
    layout = result.buffer
    if layout is None:
        for number, line in enumerate(result.lines, start=1):
            file.write(f"  {number:>6} @{line.offset:>9}  {printable(line.text)}\n")
        file.write(f"{result.path}: {result.size:,} bytes\n")
        return
    file.write(f"{result.path}: {layout.size:,} bytes\n")
    if not layout.has_unflushed_data:
        file.write("  first byte is 00: no unflushed data\n")
        return
    for line in layout.lines:
        flag = "" if line.is_complete else "   <- incomplete (torn) line"
        file.write(f"  @{line.offset:>7}  {printable(line.text)}{flag}\n")
    marker = f"at {layout.marker_offset}" if layout.marker_offset is not None else "none"
    file.write(
        f"  valid data: {layout.valid_bytes:,} bytes; end marker: {marker}"
        f"; stale non-zero bytes after it: {layout.stale_bytes:,}\n"
    )
    if layout.journal_offset_in_log is not None:
        file.write(
            f"  a flush of this data to .mtlog offset {layout.journal_offset_in_log:,} "
            "was interrupted; reopening keeps it exactly once\n"
        )


def to_json(result: FileDump) -> dict[str, Any]:
    layout = result.buffer
    lines = result.lines if layout is None else tuple(layout.lines)
    body: dict[str, Any] = {
        "path": result.path,
        "size": result.size,
        "kind": "log" if layout is None else "buffer",
        "lines": [
            {"offset": line.offset, "text": printable(line.text), "complete": line.is_complete}
            for line in lines
        ],
    }
    if layout is not None:
        body.update(
            has_unflushed_data=layout.has_unflushed_data,
            valid_bytes=layout.valid_bytes,
            marker_offset=layout.marker_offset,
            stale_bytes=layout.stale_bytes,
            journal_offset_in_log=layout.journal_offset_in_log,
        )
    return document(FORMAT, FORMAT_VERSION, body)
