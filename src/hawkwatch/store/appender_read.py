"""Reading an appender's two files without changing them: tolerant, bounded, FIFO-safe.

The byte layout is in ``appender.py``; this is the reader every command and report uses.
"""

from __future__ import annotations

import os

from hawkwatch.store.appender import (
    BUFFER_SIZE,
    END_MARKER,
    JOURNAL_OFFSET,
    OVERFLOW_NOTICE_PREFIX,
    AppenderContent,
    _journaled_offset,
    _valid_prefix,
)
from hawkwatch.store.files import path_join, path_text, read_regular

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Final

    from hawkwatch.model.record import Skipped

MAX_LOG_BYTES: Final = 256 << 20
"""Largest ``.mtlog`` a reader loads (256 MiB, some four million records, about 2 GB of
memory once decoded); larger is refused with an error naming the file, not read half-way."""


def read_appender(folder: str | os.PathLike[str], name: str) -> AppenderContent:
    """Read an appender's lines without changing its files; tolerant of any corruption.

    Safe against a writer in another thread or process: if a flush moves data between the two
    files while they are read, the read is repeated. A missing file reads as empty; one that
    exists but cannot be read (permissions, a directory, a FIFO, over ``MAX_LOG_BYTES``) is a
    ``StoreError`` naming it, never an empty result.
    """
    folder = path_text(folder)  # str paths: the store loads at the agent's start, pathlib not
    mmap_path, log_path = path_join(folder, f"{name}.mmap2"), path_join(folder, f"{name}.mtlog")
    for _attempt in range(5):
        size_before = _size(log_path)
        journal = _read_bytes(mmap_path)[JOURNAL_OFFSET:BUFFER_SIZE]
        buffer = _read_bytes(mmap_path)
        log_data = _read_bytes(log_path)
        if len(log_data) == size_before:
            break
    return parse_appender(log_data, _with_journal(buffer, journal))


def _with_journal(buffer: bytes, journal: bytes) -> bytes:
    """The buffer with the journal as it was read *before* the data.

    A flush ends by emptying the buffer (its first byte) and then clearing the journal. A read
    of the file runs front to back, so it can see the data still there and the journal already
    cleared: the lines would then count twice, in ``.mtlog`` and in the buffer. A journal read
    before the data is still valid whenever the data is the flushed block.
    """
    if len(buffer) < BUFFER_SIZE or len(journal) != BUFFER_SIZE - JOURNAL_OFFSET:
        return buffer
    return buffer[:JOURNAL_OFFSET] + journal + buffer[BUFFER_SIZE:]


def parse_appender(log_data: bytes, buffer: bytes) -> AppenderContent:
    """Split the contents of ``.mtlog`` and ``.mmap2`` into lines (pure; see ``read_appender``)."""
    from hawkwatch.model.record import Skipped  # readers' type: not loaded at the agent's start

    data = log_data
    hidden = 0
    if buffer[:1] not in (b"", b"\x00"):
        block = _valid_prefix(buffer)
        keep = _journaled_offset(buffer[JOURNAL_OFFSET:BUFFER_SIZE], block, len(log_data))
        if keep is not None:
            data = log_data[:keep]
        if data and not data.endswith(b"\n"):
            data += b"\n"
        data += block
        hidden = _lines_behind_a_stray_nul(buffer, len(block))
    content = _split_lines(data)
    if hidden:
        content.skipped.append(
            Skipped(
                len(data.split(b"\n")),
                f"{hidden} buffered line(s) after a NUL byte where the data should go on "
                "(a damaged .mmap2)",
            )
        )
    return content


def _lines_behind_a_stray_nul(buffer: bytes, end: int) -> int:
    """Lines between the NUL that ends the valid data and the end marker that should be there.

    A healthy buffer has the marker right at ``end``, or (an append killed before its commit)
    one uncommitted line, whole or in part, and then the marker or zeros: hawkwatch zeroes the
    stale bytes of earlier cycles. More than that means a NUL landed inside the data, hiding
    the lines after it. (MTHawkeye's own buffers keep stale lines, so there a kill within the
    first bytes of a copy can look the same.)
    """
    limit = min(len(buffer), JOURNAL_OFFSET)
    if buffer[end : end + 4] == END_MARKER or end >= limit:
        return 0
    marker = buffer.find(b"\n" + END_MARKER, end, limit)
    if marker < 0:
        return 0
    lines = buffer.count(b"\n", end, marker + 1)
    return lines - 1 if lines > 1 else 0


def _split_lines(data: bytes) -> AppenderContent:
    from hawkwatch.model.record import Skipped

    lines: list[bytes] = []
    skipped: list[Skipped] = []
    parts = data.split(b"\n")
    tail = parts.pop()  # empty when the data ends with LF
    for number, line in enumerate(parts, start=1):
        if not line:
            continue
        if b"\x00" in line:
            skipped.append(Skipped(number, "stale bytes (NUL) left by an MTAppenderFile reopen"))
        elif line.startswith(OVERFLOW_NOTICE_PREFIX):
            skipped.append(
                Skipped(number, "MTAppenderFile overflow notice: the writer lost a line")
            )
        else:
            lines.append(line)
    if tail:
        skipped.append(Skipped(len(parts) + 1, "incomplete last line (torn write)"))
    return AppenderContent(lines, skipped)


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _read_bytes(path: str, limit: int = MAX_LOG_BYTES) -> bytes:
    return read_regular(path, limit, too_big="too large to read")
