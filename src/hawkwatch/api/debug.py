"""``hawkwatch debug dump`` as a function: what is inside a store file, record by record."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hawkwatch.api.session import PathLike
from hawkwatch.errors import HawkwatchError
from hawkwatch.store.appender_read import MAX_LOG_BYTES
from hawkwatch.store.files import read_regular
from hawkwatch.store.inspect import BufferLayout, BufferLine, describe_buffer


@dataclass(frozen=True, slots=True)
class FileDump:
    """A store file laid out: an ``.mmap2`` buffer (``buffer``) or a log's lines (``lines``)."""

    path: str
    size: int
    buffer: BufferLayout | None
    #: a log file's lines: offset, bytes (without the newline); ``is_complete`` is False for a
    #: last line with no newline
    lines: tuple[BufferLine, ...] = ()


def dump_file(path: PathLike) -> FileDump:
    """Lay out a ``.mmap2`` buffer (with its ``.mtlog`` beside it), a MallocStackLogging
    ``.index`` (record by record; the line's offset is the record number) or any line-based
    file."""
    target = Path(path)
    if not target.exists():
        raise HawkwatchError(f"{target}: no such file")
    # regular files only, and bounded: a FIFO or a huge file must not hang or swamp the dump
    data = read_regular(target, MAX_LOG_BYTES, too_big="too large to dump")  # StoreError
    if target.suffix == ".index":  # a MallocStackLogging index: one line per record
        try:
            from hawkwatch.formats.msl import dump_lines
        except ImportError as exc:
            raise HawkwatchError(
                f"reading MallocStackLogging files needs numpy: "
                f"pip install 'hawkwatch[ios-memory]' ({exc})"
            ) from exc
        found = enumerate(dump_lines(data))
        entries = tuple(BufferLine(number, entry.encode(), True) for number, entry in found)
        return FileDump(str(target), len(data), None, entries)
    if target.suffix == ".mmap2":
        log_path = target.with_suffix(".mtlog")
        log_size = log_path.stat().st_size if log_path.exists() else 0
        return FileDump(str(target), len(data), describe_buffer(data, log_size))
    lines = []
    offset = 0
    for text in data.split(b"\n"):
        if offset >= len(data):
            break
        lines.append(BufferLine(offset, text, offset + len(text) < len(data)))
        offset += len(text) + 1
    return FileDump(str(target), len(data), None, tuple(lines))
