"""A byte-level account of an AppenderFile buffer, for ``hawkwatch debug dump``."""

from __future__ import annotations

from dataclasses import dataclass, field

from hawkwatch.store.appender import BUFFER_SIZE, END_MARKER, JOURNAL_OFFSET, _journaled_offset


@dataclass(frozen=True, slots=True)
class BufferLine:
    offset: int
    text: bytes
    is_complete: bool


@dataclass(frozen=True, slots=True)
class BufferLayout:
    """What a ``.mmap2`` holds: valid lines, where the marker is, what stale bytes follow."""

    size: int
    has_unflushed_data: bool
    lines: list[BufferLine] = field(default_factory=list)
    valid_bytes: int = 0
    marker_offset: int | None = None
    stale_bytes: int = 0
    journal_offset_in_log: int | None = None


def describe_buffer(buffer: bytes, log_size: int = 0) -> BufferLayout:
    """Lay out a ``.mmap2`` buffer record by record (pure)."""
    if buffer[:1] in (b"", b"\x00"):
        return BufferLayout(size=len(buffer), has_unflushed_data=False)
    end = buffer.find(b"\x00")
    valid = buffer if end < 0 else buffer[:end]
    lines: list[BufferLine] = []
    offset = 0
    for piece in valid.split(b"\n"):
        if offset >= len(valid):
            break
        complete = offset + len(piece) < len(valid)
        lines.append(BufferLine(offset, piece, complete))
        offset += len(piece) + 1
    marker = end if end >= 0 and buffer[end : end + 4] == END_MARKER else None
    tail = buffer[len(valid) + (4 if marker is not None else 0) : min(len(buffer), JOURNAL_OFFSET)]
    journal = None
    if len(buffer) == BUFFER_SIZE:
        journal = _journaled_offset(buffer[JOURNAL_OFFSET:], valid, log_size)
    return BufferLayout(
        size=len(buffer),
        has_unflushed_data=True,
        lines=lines,
        valid_bytes=len(valid),
        marker_offset=marker,
        stale_bytes=len(tail) - tail.count(0),
        journal_offset_in_log=journal,
    )
