"""AppenderFile: MTAppenderFile's crash-safe line log, ``<name>.mmap2`` plus ``<name>.mtlog``.

Byte layout (``formats/hawkeye.md`` §2), shared with MTHawkeye:

    <name>.mmap2   153,600 bytes, mapped MAP_SHARED. Valid data: UTF-8 lines ending in LF, from
                   offset 0 up to the first NUL byte. After every append the four bytes
                   00 00 00 0D follow the data. A first byte of 00 means "nothing unflushed".
    <name>.mtlog   plain UTF-8 lines: the blocks flushed out of the buffer, oldest first.

A line reaches the ``.mmap2`` with one memory copy and no system call, and the kernel keeps the
pages of a MAP_SHARED mapping when the process is killed, so every appended line survives a crash.
hawkwatch adds two things that MTHawkeye readers never see (they lie after the first NUL):

* **Commit order.** An append writes the end marker first, then the line from its second byte on,
  and the line's first byte last. That byte replaces the NUL that ended the old data, so a kill at
  any instant leaves either the old valid prefix or the new one, never a torn line.
* **Flush journal.** While a block is copied to ``.mtlog``, the last 24 bytes of the ``.mmap2``
  hold ``{magic, .mtlog offset, length, crc32}``. Reopening (or reading) after a kill in the middle
  of a flush uses it to keep the block exactly once. MTHawkeye's own data never reaches that far.

Unlike MTAppenderFile, a line is never dropped: when the buffer is full the caller's thread flushes.
"""

from __future__ import annotations

import logging
import mmap
import os
import struct
import threading
import zlib
from pathlib import Path
from typing import Final, NamedTuple

from hawkwatch.errors import StoreError
from hawkwatch.model import Skipped
from hawkwatch.store import _worker

log = logging.getLogger(__name__)

BUFFER_SIZE: Final = 153_600
"""Size of every ``.mmap2`` file (MTAppenderFile's ``kBufferBlockLength``)."""
END_MARKER: Final = b"\x00\x00\x00\r"
"""Written right after the data on every append."""
FLUSH_THRESHOLD: Final = BUFFER_SIZE // 3
"""Buffer length at which the background thread is asked to flush (51,200 bytes)."""
MAX_LINE_BYTES: Final = 16_254
"""Longest line body MTAppenderFile keeps (its formatter cuts longer ones); LF not counted."""
OVERFLOW_NOTICE_PREFIX: Final = b"[F]["
"""MTAppenderFile replaces a line it drops with a notice starting with these bytes."""

_JOURNAL = struct.Struct("<8sQII")  # magic, .mtlog offset, block length, crc32 of the block
_JOURNAL_MAGIC: Final = b"hwflush1"
JOURNAL_OFFSET: Final = BUFFER_SIZE - _JOURNAL.size
_CAPACITY: Final = JOURNAL_OFFSET - len(END_MARKER)  # longest data hawkwatch keeps in the buffer


class AppenderContent(NamedTuple):
    """What a tolerant read of an appender found: its lines (without LF) and what it skipped."""

    lines: list[bytes]
    skipped: list[Skipped]


class AppenderFile:
    """A crash-safe append-only log of text lines, byte-compatible with MTAppenderFile.

    Thread-safe: any number of threads may append at once. Appends cost a lock and two memory
    copies; flushes to ``.mtlog`` run on the store's one background thread when the buffer is a
    third full, every 15 minutes, on ``flush()`` and ``close()``, and on the caller's thread only
    when the buffer would otherwise overflow. Opening a buffer that a dead process left with
    unflushed data first moves that data (its valid prefix, never the stale tail) to ``.mtlog``.
    """

    def __init__(self, folder: str | os.PathLike[str], name: str) -> None:
        self.folder = Path(folder)
        self.name = name
        self.mmap_path = self.folder / f"{name}.mmap2"
        self.log_path = self.folder / f"{name}.mtlog"
        self._lock = threading.Lock()
        self._length = 0
        self._flush_requested = False
        self._closed = False
        self._owner_pid = os.getpid()
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self.is_new = not self.log_path.exists() and not _holds_data(self.mmap_path)
            self._log_fd = os.open(self.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            self._map = _map_buffer(self.mmap_path)
        except OSError as exc:
            raise StoreError(f"{self.mmap_path}: cannot open the appender: {exc.strerror}") from exc
        self._recover()
        _worker.register(self)

    # -- writing -------------------------------------------------------------------------

    def append(self, line: str | bytes) -> None:
        """Append one line; a trailing LF is added when missing.

        The line may not contain NUL or a line break other than a final LF, and may not be
        longer than ``MAX_LINE_BYTES`` in UTF-8 (``ValueError``).
        """
        data = line.encode() if isinstance(line, str) else bytes(line)
        if not data.endswith(b"\n"):
            data += b"\n"
        if b"\x00" in data or b"\n" in data[:-1] or b"\r" in data:
            raise ValueError(f"{self.name}: a line may not contain NUL, CR or an inner LF")
        if len(data) - 1 > MAX_LINE_BYTES:
            raise ValueError(
                f"{self.name}: line is {len(data) - 1} bytes; the limit is {MAX_LINE_BYTES}"
            )
        self.append_encoded(data + END_MARKER)

    def append_encoded(self, data: bytes) -> None:
        """Append a line already encoded as ``body + LF + END_MARKER`` (the hot path).

        The caller guarantees the shape; ``RecordStore`` builds it in one step.
        """
        lock = self._lock
        lock.acquire()  # acquire/release: half the cost of a with-block on this path
        try:
            start = self._length
            end = start + len(data) - 4
            if end + 4 > _CAPACITY:
                self._flush_locked()
                start = 0
                end = len(data) - 4
            buf = self._map
            # Marker and all but the first byte land after the NUL that ends the valid data;
            # the first byte, written last, commits the line.
            buf[start + 1 : end + 4] = data[1:]
            buf[start] = data[0]
            self._length = end
            if end >= FLUSH_THRESHOLD and not self._flush_requested:
                self._flush_requested = True
                _worker.request_flush(self)
        except ValueError:
            if self._closed:
                raise StoreError(f"{self.mmap_path}: the appender is closed") from None
            raise
        finally:
            lock.release()

    def flush(self) -> None:
        """Move the buffered lines to ``.mtlog`` now."""
        with self._lock:
            if not self._closed:
                self._flush_locked()

    def close(self) -> None:
        """Flush, zero the buffer (as MTAppenderFile does) and release the files. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            try:
                if os.getpid() == self._owner_pid:
                    self._flush_locked()
                    self._map[:] = bytes(BUFFER_SIZE)
            finally:
                self._map.close()
                os.close(self._log_fd)
        _worker.unregister(self)

    def __enter__(self) -> AppenderFile:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def buffered_bytes(self) -> int:
        """Bytes appended since the last flush."""
        return self._length

    # -- reading -------------------------------------------------------------------------

    def read(self) -> AppenderContent:
        """Read every line written so far: ``.mtlog`` first, then the buffer (chronological)."""
        return read_appender(self.folder, self.name)

    # -- internals -----------------------------------------------------------------------

    def _flush_locked(self) -> None:
        self._flush_requested = False
        length = self._length
        if length == 0:
            return
        buf = self._map
        block = buf[:length]
        offset = os.fstat(self._log_fd).st_size
        journal = _JOURNAL.pack(b"\x00" * 8, offset, length, zlib.crc32(block))
        buf[JOURNAL_OFFSET + 8 : BUFFER_SIZE] = journal[8:]
        buf[JOURNAL_OFFSET : JOURNAL_OFFSET + 8] = _JOURNAL_MAGIC
        try:
            _write_all(self._log_fd, block)
        except OSError as exc:
            # The block stays in the buffer; a later flush (or the next open) retries it.
            buf[JOURNAL_OFFSET : JOURNAL_OFFSET + 8] = bytes(8)
            raise StoreError(f"{self.log_path}: cannot write: {exc.strerror}") from exc
        buf[0] = 0
        buf[JOURNAL_OFFSET : JOURNAL_OFFSET + 8] = bytes(8)
        self._length = 0

    def _recover(self) -> None:
        """Move what a dead writer left in the buffer to ``.mtlog``, exactly once."""
        buf = self._map
        if buf[0] == 0:
            buf[JOURNAL_OFFSET : JOURNAL_OFFSET + 8] = bytes(8)
            return
        block = _valid_prefix(buf[:BUFFER_SIZE])
        offset = os.fstat(self._log_fd).st_size
        keep = _journaled_offset(buf[JOURNAL_OFFSET:BUFFER_SIZE], block, offset)
        try:
            if keep is not None:
                # A flush of this very block was under way: drop what it wrote, write it whole.
                os.ftruncate(self._log_fd, keep)
            elif offset and not _log_ends_with_newline(self.log_path):
                block = b"\n" + block  # keep a torn last line from swallowing the first one
            _write_all(self._log_fd, block)
        except OSError as exc:
            raise StoreError(f"{self.log_path}: cannot recover unflushed data: {exc}") from exc
        log.info(
            "%s: recovered %d unflushed bytes from a previous process", self.mmap_path, len(block)
        )
        buf[0] = 0
        buf[JOURNAL_OFFSET : JOURNAL_OFFSET + 8] = bytes(8)

    def _detach_after_fork(self) -> None:
        """In a forked child: give up this appender without touching the parent's files.

        The parent may have held the lock at the fork, so it is replaced, never acquired. Unmapping
        and closing here only drop the child's references; the parent's stay valid.
        """
        self._lock = threading.Lock()
        self._closed = True
        self._flush_requested = False
        try:
            self._map.close()
            os.close(self._log_fd)
        except (OSError, ValueError, BufferError):
            pass


def read_appender(folder: str | os.PathLike[str], name: str) -> AppenderContent:
    """Read an appender's lines without changing its files; tolerant of any corruption.

    Safe against a writer in another thread or process: if a flush moves data between the two
    files while they are read, the read is repeated.
    """
    folder = Path(folder)
    mmap_path, log_path = folder / f"{name}.mmap2", folder / f"{name}.mtlog"
    for _attempt in range(5):
        size_before = _size(log_path)
        buffer = _read_bytes(mmap_path)
        log_data = _read_bytes(log_path)
        if len(log_data) == size_before:
            break
    return parse_appender(log_data, buffer)


def parse_appender(log_data: bytes, buffer: bytes) -> AppenderContent:
    """Split the contents of ``.mtlog`` and ``.mmap2`` into lines (pure; see ``read_appender``)."""
    data = log_data
    if buffer[:1] not in (b"", b"\x00"):
        block = _valid_prefix(buffer)
        keep = _journaled_offset(buffer[JOURNAL_OFFSET:BUFFER_SIZE], block, len(log_data))
        if keep is not None:
            data = log_data[:keep]
        elif data and not data.endswith(b"\n"):
            data += b"\n"
        data += block
    return _split_lines(data)


def _split_lines(data: bytes) -> AppenderContent:
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


def _valid_prefix(buffer: bytes) -> bytes:
    end = buffer.find(b"\x00")
    return buffer if end < 0 else buffer[:end]


def _journaled_offset(journal: bytes, block: bytes, log_size: int) -> int | None:
    """The ``.mtlog`` size before an interrupted flush of ``block``, or None if none was running."""
    if len(journal) != _JOURNAL.size:
        return None
    magic, offset, length, crc = _JOURNAL.unpack(journal)
    if magic != _JOURNAL_MAGIC or length != len(block) or crc != zlib.crc32(block):
        return None
    return offset if offset <= log_size else None


def _map_buffer(path: Path) -> mmap.mmap:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if os.fstat(fd).st_size != BUFFER_SIZE:
            os.ftruncate(fd, BUFFER_SIZE)
        return mmap.mmap(fd, BUFFER_SIZE, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _holds_data(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(1) not in (b"", b"\x00")
    except OSError:
        return False


def _log_ends_with_newline(path: Path) -> bool:
    with path.open("rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""
