"""AppenderFile: MTAppenderFile's crash-safe line log, ``<name>.mmap2`` plus ``<name>.mtlog``.

Byte layout (``formats/hawkeye.md`` §2), shared with MTHawkeye:

    <name>.mmap2   153,600 bytes, mapped MAP_SHARED. Valid data: UTF-8 lines ending in LF, from
                   offset 0 up to the first NUL byte. After every append the four bytes
                   00 00 00 0D follow the data. A first byte of 00 means "nothing unflushed".
    <name>.mtlog   plain UTF-8 lines: the blocks flushed out of the buffer, oldest first.

A line reaches the ``.mmap2`` with one memory copy and no system call, and the kernel keeps the
pages of a MAP_SHARED mapping when the process is killed, so every appended line survives a crash.
hawkwatch adds three things that MTHawkeye readers never see (they lie after the first NUL):

* **Commit order.** An append copies the line with its first byte replaced by NUL, and the end
  marker, over the NUL that ended the old data (which so stays NUL); then it writes the line's
  first byte. A kill at any instant leaves either the old valid prefix or the new one, never a
  torn line.
* **No stale bytes.** After a flush, and when a buffer is opened, everything after byte 0 is
  zeroed (MTAppenderFile leaves the old lines there). An append killed in the middle of its
  copy is then followed by zeros, so a reader can tell it from lines hidden by a damaged byte.
* **Flush journal.** While a block is copied to ``.mtlog``, the last 24 bytes of the ``.mmap2``
  hold ``{magic, .mtlog offset, length, digest}``. Reopening (or reading) after a kill in the middle
  of a flush uses it to keep the block exactly once. MTHawkeye's own data never reaches that far.

Unlike MTAppenderFile, a line is never dropped while ``.mtlog`` can be written: when the buffer is
full the caller's thread flushes. The buffer's blocks are reserved when it is created
(``posix_fallocate``), so a full filesystem fails the open instead of killing the process with
SIGBUS on the first page it cannot back. When ``.mtlog`` cannot be written (disk full, quota,
I/O error), the buffered lines stay in the ``.mmap2`` (still crash-safe), one warning is logged,
and lines that find the buffer full are dropped and counted (``dropped``) until a flush succeeds;
then ``drop_notice`` may append one line saying how many were lost.
"""

from __future__ import annotations

import mmap
import os
import threading
import time
import zlib
from _struct import Struct  # struct.Struct, without the struct module
from collections.abc import Callable

from hawkwatch._lazylog import lazy_logger
from hawkwatch.errors import StoreError
from hawkwatch.store import _worker
from hawkwatch.store._buffer_file import map_buffer, open_regular
from hawkwatch.store.files import path_join, path_text, read_regular

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Final, NamedTuple

    from hawkwatch.model.record import Skipped
else:
    from hawkwatch._runtime_typing import NamedTuple

log = lazy_logger(__name__)

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

_JOURNAL = Struct("<8sQII")  # magic, .mtlog offset, block length, _block_digest
_JOURNAL_MAGIC: Final = b"hwflush1"
JOURNAL_OFFSET: Final = BUFFER_SIZE - _JOURNAL.size
_CAPACITY: Final = JOURNAL_OFFSET - len(END_MARKER)  # longest data hawkwatch keeps in the buffer
RETRY_INTERVAL_S: Final = 1.0
"""While ``.mtlog`` cannot be written, appends that find the buffer full retry a flush at most
this often (an explicit ``flush()`` always retries)."""


class AppenderContent(NamedTuple):
    """What a tolerant read of an appender found: its lines (without LF) and what it skipped."""

    lines: list[bytes]
    skipped: list[Skipped]


class Dropped:
    """Lines lost because ``.mtlog`` could not be written: how many, and the first cause."""

    __slots__ = ("bytes", "lines", "reason", "since")

    def __init__(
        self, lines: int = 0, bytes: int = 0, since: float = 0.0, reason: str = ""
    ) -> None:
        self.lines = lines
        self.bytes = bytes
        self.since = since  # Unix time of the first failed write
        self.reason = reason

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Dropped):
            return NotImplemented
        return (self.lines, self.bytes, self.since, self.reason) == (
            other.lines,
            other.bytes,
            other.since,
            other.reason,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"Dropped(lines={self.lines}, bytes={self.bytes}, since={self.since}, "
            f"reason={self.reason!r})"
        )


class AppenderFile:
    """A crash-safe append-only log of text lines, byte-compatible with MTAppenderFile.

    Thread-safe: any number of threads may append at once. Appends cost a lock and two memory
    copies; flushes to ``.mtlog`` run on the store's one background thread when the buffer is a
    third full, every 15 minutes, on ``flush()`` and ``close()``, and on the caller's thread only
    when the buffer would otherwise overflow. Opening a buffer that a dead process left with
    unflushed data first moves that data (its valid prefix, never the stale tail) to ``.mtlog``.
    """

    def __init__(self, folder: str | os.PathLike[str], name: str) -> None:
        self._folder = path_text(folder)  # str paths: no pathlib at the agent's start
        self.name = name
        self._mmap_file = path_join(self._folder, f"{name}.mmap2")
        self._log_file = path_join(self._folder, f"{name}.mtlog")
        self._lock = threading.Lock()  # guards the buffer: held briefly by every append
        self._flush_lock = threading.Lock()  # one flush at a time; taken before _lock, never after
        self._flushing_thread: int | None = None
        self._length = 0
        self._flush_requested = False
        self._closed = False
        self._owner_pid = os.getpid()
        self.dropped = Dropped()
        """Lines dropped since ``.mtlog`` last failed (zero while writes succeed)."""
        self.write_failure: str | None = None
        """Why ``.mtlog`` cannot be written right now, or None."""
        self.drop_notice: Callable[[Dropped], bytes | None] | None = None
        """Called once space returns after drops: the encoded line to append, or None."""
        self._retry_at = 0.0
        self._warned = False
        try:
            os.makedirs(self._folder, exist_ok=True)
            self.is_new = not os.path.exists(self._log_file) and not _holds_data(self._mmap_file)
        except OSError as exc:
            raise StoreError(f"{self._folder}: cannot open the appender: {exc.strerror}") from exc
        self._log_fd = open_regular(self._log_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            self._map = map_buffer(self._mmap_file, BUFFER_SIZE)
        except BaseException:
            os.close(self._log_fd)
            raise
        try:
            self._recover()
        except BaseException:
            self._map.close()
            os.close(self._log_fd)
            raise
        _worker.register(self)

    @property
    def folder(self) -> Path:
        from pathlib import Path  # readers' view; the writer works with str paths

        return Path(self._folder)

    @property
    def mmap_path(self) -> Path:
        from pathlib import Path

        return Path(self._mmap_file)

    @property
    def log_path(self) -> Path:
        from pathlib import Path

        return Path(self._log_file)

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
        """Append a line already encoded as ``body + LF + END_MARKER``."""
        self.append_split(data[0], b"\x00" + data[1:])

    def append_split(self, first: int, data: bytes) -> None:
        """The hot path: ``data`` is ``body + LF + END_MARKER`` with the body's first byte
        replaced by NUL, and ``first`` is that byte.

        ``data`` is copied whole over the NUL that ends the valid data, which stays NUL; then
        ``first`` commits the line. ``RecordStore.store`` builds both in one step, so the commit
        order costs no extra copy.
        """
        lock = self._lock
        lock.acquire()  # acquire/release: half the cost of a with-block on this path
        try:
            start = self._length
            end = start + len(data) - 4
            while end + 4 > _CAPACITY:  # full: flush on this thread rather than drop the line
                if self.write_failure is not None and time.monotonic() < self._retry_at:
                    self._drop(len(data) - 4)  # .mtlog is failing: count the line, no retry yet
                    return
                lock.release()
                try:
                    flushed = self._flush()
                finally:
                    lock.acquire()
                start = self._length
                end = start + len(data) - 4
                if not flushed and end + 4 > _CAPACITY:
                    self._drop(len(data) - 4)
                    return
            buf = self._map
            buf[start : end + 4] = data
            buf[start] = first  # the commit: until now the valid data ended at `start`
            self._length = end
            if end >= FLUSH_THRESHOLD and not self._flush_requested:
                self._flush_requested = True
                _worker.request_flush(self)
        except ValueError:
            if self._closed:
                raise StoreError(f"{self._mmap_file}: the appender is closed") from None
            raise
        finally:
            lock.release()

    def try_append_encoded(self, data: bytes) -> bool:
        """``append_encoded`` if that needs no waiting right now; False (nothing written) if not.

        Never blocks, so it is safe where the calling thread may already be inside this
        appender: ``gc`` callbacks, finalizers, signal handlers.
        """
        if self._flushing_thread == threading.get_ident():
            return False  # re-entered from inside our own flush
        if not self._lock.acquire(blocking=False):
            return False
        has_room = self._length + len(data) <= _CAPACITY
        self._lock.release()
        if not has_room:
            return False
        # Another thread may take the lock in between; append_encoded then waits for it briefly,
        # which is fine: only this thread holding it (re-entry) could deadlock, and it does not.
        self.append_encoded(data)
        return True

    def flush_if_due(self) -> None:
        """Flush if the buffer is still a third full (the request may be stale: the appending
        thread can have flushed it in the meantime)."""
        if self._length >= FLUSH_THRESHOLD:
            self.flush()
        else:
            self._flush_requested = False

    def flush(self) -> None:
        """Move the buffered lines to ``.mtlog`` now.

        The bulk is written without holding the buffer's lock (its bytes no longer change:
        appends only write after them), so other threads keep appending meanwhile; the lines
        they added are written under the lock, and the buffer is emptied. When ``.mtlog``
        cannot be written the lines stay in the buffer and ``write_failure`` says why (one
        warning is logged per appender); nothing is raised, so a full disk never reaches the
        thread that appends.
        """
        self._flush()

    def _flush(self) -> bool:
        """``flush``; False when ``.mtlog`` could not be written."""
        try:
            self._flush_once()
        except OSError as exc:
            self._note_failure(exc)
            return False
        if self.write_failure is not None:
            self._note_recovery()
        return True

    def _flush_once(self) -> None:
        with self._flush_lock:
            with self._lock:
                if self._closed:
                    return
                self._flush_requested = False
                length = self._length
                if length == 0:
                    return
                offset = os.fstat(self._log_fd).st_size
                self._write_journal(offset, length)
            self._flushing_thread = threading.get_ident()
            try:
                self._write_block(offset, 0, length)
                with self._lock:
                    end = self._length
                    if end > length:
                        self._write_journal(offset, end)
                        self._write_block(offset, length, end)
                    self._map[0] = 0  # commits the flush: nothing unflushed
                    self._map[1 : end + 4] = _ZEROS[: end + 3]
                    self._map[JOURNAL_OFFSET : JOURNAL_OFFSET + 8] = bytes(8)
                    self._length = 0
            finally:
                self._flushing_thread = None

    def _write_journal(self, offset: int, length: int) -> None:
        """Record that bytes [0, length) of the buffer go to ``.mtlog`` at ``offset``."""
        buf = self._map
        with memoryview(buf) as whole, whole[:length] as block:
            journal = _JOURNAL.pack(b"\x00" * 8, offset, length, _block_digest(block))
        buf[JOURNAL_OFFSET + 8 : BUFFER_SIZE] = journal[8:]
        buf[JOURNAL_OFFSET : JOURNAL_OFFSET + 8] = _JOURNAL_MAGIC  # written last: commits it

    def _write_block(self, offset: int, start: int, end: int) -> None:
        """Write buffer bytes [start, end) to ``.mtlog``, which must then hold offset + end."""
        try:
            with memoryview(self._map) as whole, whole[start:end] as block:
                _write_all(self._log_fd, block)
        except OSError:
            # The lines stay in the buffer (a later flush or the next open retries them); what
            # part of them reached .mtlog is cut off again so that nothing is written twice.
            try:
                os.ftruncate(self._log_fd, offset)
            except OSError:
                pass
            raise

    def _drop(self, size: int) -> None:
        """Count one line lost to a failing ``.mtlog`` (called with the buffer's lock held)."""
        self.dropped.lines += 1
        self.dropped.bytes += size

    def _note_failure(self, exc: OSError) -> None:
        self._retry_at = time.monotonic() + RETRY_INTERVAL_S
        if self.write_failure is not None:
            return
        self.write_failure = exc.strerror or type(exc).__name__
        if not self.dropped.since:
            self.dropped.since = time.time()
            self.dropped.reason = self.write_failure
        if not self._warned:
            self._warned = True
            log.warning(
                "hawkwatch: %s: cannot write (%s); recording paused, lines that do not fit in "
                "the buffer are dropped and counted until space returns",
                self._log_file,
                self.write_failure,
            )

    def _note_recovery(self) -> None:
        """``.mtlog`` is writable again: say, in the log itself, how many lines were lost."""
        self.write_failure = None
        dropped, self.dropped = self.dropped, Dropped()
        if not dropped.lines:
            return
        log.info(
            "hawkwatch: %s: writable again; %d lines had been dropped",
            self._log_file,
            dropped.lines,
        )
        notice = self.drop_notice(dropped) if self.drop_notice is not None else None
        if notice is not None:
            try:
                self.append_encoded(notice)
            except (ValueError, StoreError):
                pass

    def close(self) -> None:
        """Flush, zero the buffer (as MTAppenderFile does) and release the files. Idempotent."""
        is_owner = os.getpid() == self._owner_pid
        if is_owner:
            self.flush()  # does nothing once closed
        with self._flush_lock, self._lock:
            if self._closed:
                return
            self._closed = True
            if is_owner and self.dropped.lines:
                log.warning(
                    "hawkwatch: %s: %d lines (%d bytes) were dropped since %s: %s; the %d bytes "
                    "still buffered are kept in %s",
                    self._log_file,
                    self.dropped.lines,
                    self.dropped.bytes,
                    time.strftime("%H:%M:%S", time.localtime(self.dropped.since)),
                    self.dropped.reason,
                    self._length,
                    os.path.basename(self._mmap_file),
                )
            try:
                if is_owner and self._length == 0:
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
        from hawkwatch.store.appender_read import read_appender

        return read_appender(self._folder, self.name)

    # -- internals -----------------------------------------------------------------------

    def _recover(self) -> None:
        """Move what a dead writer left in the buffer to ``.mtlog``, exactly once."""
        buf = self._map
        if buf[0] == 0:
            _clear_stale(buf)
            buf[JOURNAL_OFFSET : JOURNAL_OFFSET + 8] = bytes(8)
            return
        block = _valid_prefix(buf[:BUFFER_SIZE])
        offset = os.fstat(self._log_fd).st_size
        keep = _journaled_offset(buf[JOURNAL_OFFSET:BUFFER_SIZE], block, offset)
        if keep is None and len(block) < JOURNAL_OFFSET:  # the NUL ending it stays clear
            # Journal this move as a flush is journaled, so that a kill before byte 0 is cleared
            # cannot make the next open write the block a second time.
            self._write_journal(offset, len(block))
            keep = offset
        # A torn last line (foreign writers only) must not swallow the next block's first line.
        data = block if block.endswith(b"\n") else block + b"\n"
        try:
            if keep is not None:
                # A move or flush of this very block was under way: drop what it wrote.
                os.ftruncate(self._log_fd, keep)
                offset = keep
            if offset and not _log_ends_with_newline(self._log_file):
                data = b"\n" + data  # keep a torn last line from swallowing the first one
            _write_all(self._log_fd, data)
        except OSError as exc:
            raise StoreError(f"{self._log_file}: cannot recover unflushed data: {exc}") from exc
        log.info(
            "%s: recovered %d unflushed bytes from a previous process", self._mmap_file, len(block)
        )
        buf[0] = 0
        _clear_stale(buf)
        buf[JOURNAL_OFFSET : JOURNAL_OFFSET + 8] = bytes(8)

    def _detach_after_fork(self) -> None:
        """In a forked child: give up this appender without touching the parent's files.

        The parent may have held the lock at the fork, so it is replaced, never acquired. Unmapping
        and closing here only drop the child's references; the parent's stay valid.
        """
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._flushing_thread = None
        self._closed = True
        self._flush_requested = False
        try:
            self._map.close()
            os.close(self._log_fd)
        except (OSError, ValueError, BufferError):
            pass


_ZEROS: Final = memoryview(bytes(BUFFER_SIZE))


def _clear_stale(buf: mmap.mmap) -> None:
    """Zero what earlier cycles left after byte 0 (already ``00``), up to the journal.

    A kill in the middle of an append's copy leaves the new line's ``00`` and part of its body,
    then whatever lay there before. With stale lines there, a reader could not tell them from
    lines a damaged byte hides; with zeros it can (``appender_read``).
    """
    data = buf[:JOURNAL_OFFSET]
    if data == bytes(JOURNAL_OFFSET):  # the common case, a new buffer: compared, not scanned
        return
    used = len(data.rstrip(b"\x00"))
    if used > 1:
        buf[1:used] = _ZEROS[: used - 1]


def _valid_prefix(buffer: bytes) -> bytes:
    end = buffer.find(b"\x00")
    return buffer if end < 0 else buffer[:end]


def _journaled_offset(journal: bytes, block: bytes, log_size: int) -> int | None:
    """The ``.mtlog`` size before an interrupted flush of ``block``, or None if none was running.

    The journal covers the first ``length`` bytes of the valid data (lines appended during the
    flush may follow them); ``.mtlog`` then holds, from ``offset``, some prefix of the block.
    """
    if len(journal) != _JOURNAL.size:
        return None
    magic, offset, length, digest = _JOURNAL.unpack(journal)
    if magic != _JOURNAL_MAGIC or length > len(block) or digest != _block_digest(block[:length]):
        return None
    return offset if offset <= log_size else None


def _block_digest(block: bytes | memoryview) -> int:
    """Identifies the block a journal was written for: crc32 of its first and last 4 KiB.

    The block cannot change while its flush runs, so the journal only has to tell it from other
    data; hashing all 150 KB on every flush would cost the writer 40 µs for nothing.
    """
    if len(block) <= 8192:
        return zlib.crc32(block)
    return zlib.crc32(block[-4096:], zlib.crc32(block[:4096]))


def _write_all(fd: int, data: bytes | memoryview) -> None:
    written = os.write(fd, data)
    while written < len(data):  # a short write: disk nearly full, or a signal
        written += os.write(fd, data[written:])


def _holds_data(path: str) -> bool:
    try:
        return read_regular(path, 1) not in (b"", b"\x00")
    except StoreError:
        return False


def _log_ends_with_newline(path: str) -> bool:
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"
