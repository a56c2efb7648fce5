"""RecordStore: MTHawkeye's ``records`` file of ``collection,key,value`` lines.

Layout (``formats/hawkeye.md`` §3): an AppenderFile named ``records``; a new file starts with the
lines ``collection,key,value`` and ``launch-time,<t>,<t>`` (process start, Unix seconds); then one
record per line, split by readers at the first two commas, so values may hold commas.

Value escaping (hawkwatch's rule; MTHawkeye has none and forbids line breaks). A value that
contains a line break MTHawkeye's reader would split at (LF, CR, U+0085, U+2028, U+2029) or NUL, or
that begins with U+001F (the ASCII unit separator, invisible in a terminal), is stored as U+001F
followed by the value with ``\\`` → ``\\\\``,
LF → ``\\n``, CR → ``\\r``, NUL → ``\\0``, U+0085 → ``\\x85``, U+2028 → ``\\u2028``, U+2029 →
``\\u2029``. Every other value is stored byte for byte, so MTHawkeye sees one line per record and
JSON values stay JSON; hawkwatch's reader restores escaped values exactly.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Iterable, Iterator

from hawkwatch.model import plain_records
from hawkwatch.store import _worker
from hawkwatch.store._files import lock_for_writing
from hawkwatch.store._process import process_start_time
from hawkwatch.store.appender import (
    END_MARKER,
    MAX_LINE_BYTES,
    AppenderFile,
    Dropped,
)
from hawkwatch.store.files import path_text

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    import re
    from pathlib import Path
    from typing import Any, Final, Protocol

    from hawkwatch.model.record import Record, Skipped
    from hawkwatch.model.records import JsonRecord

    class WritableRecord(Protocol):
        """What the store needs of a record: a typed one (``model.records``) or a stand-in
        written before the typed model is loaded (``model.plain_records``)."""

        @property
        def collection(self) -> str: ...

        def record_key(self) -> str: ...

        def encode_value(self) -> bytes: ...


RECORDS_NAME: Final = "records"
HEADER: Final = "collection,key,value"
ESCAPE_PREFIX: Final = "\x1f"  # not printable, so the fast path needs no extra check

_BREAKS = "\n\r\x00\x85\u2028\u2029"  # what escaping replaces, NUL among them
_ESCAPES = {
    "\\": "\\\\",
    "\n": "\\n",
    "\r": "\\r",
    "\x00": "\\0",
    "\x85": "\\x85",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}
_ESCAPE_TABLE = str.maketrans(_ESCAPES)
# Collections are few, so each is checked once; the fast path then splits off its first byte.
_collection_heads: dict[str, tuple[int, str]] = {}
# The same for records whose value is already UTF-8 bytes (typed records): "\x00<rest>," encoded.
_byte_heads: dict[str, tuple[int, bytes]] = {}
_MAX_ENCODED_BYTES: Final = MAX_LINE_BYTES + 1 + len(END_MARKER)
BATCH_BYTES: Final = 32_768
"""Lines ``write_many`` commits together (a fifth of the buffer: it flushes at a third)."""
_LINE_END: Final = b"\n"
_UNESCAPE = {v: k for k, v in _ESCAPES.items()}


@functools.cache
def _unescape_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """An escape sequence, and one hawkwatch never writes: compiled at the first escaped value
    read, not at every agent start (nor is ``re`` imported then)."""
    import re

    return (
        re.compile(r"\\(?:\\|n|r|0|x85|u2028|u2029)"),
        re.compile(r"\\(?!\\|n|r|0|x85|u2028|u2029)"),
    )


def escape_value(value: str) -> str:
    """The on-disk form of ``value`` (identity unless it holds a line break or the prefix)."""
    if not _has_break(value) and not value.startswith(ESCAPE_PREFIX):
        return value
    return ESCAPE_PREFIX + value.translate(_ESCAPE_TABLE)


def unescape_value(stored: str) -> str:
    """Invert ``escape_value``; ``ValueError`` for an escape sequence hawkwatch never writes."""
    if not stored.startswith(ESCAPE_PREFIX):
        return stored
    body = stored[len(ESCAPE_PREFIX) :]
    sequence, bad = _unescape_patterns()
    if bad.search(body.replace("\\\\", "")):
        raise ValueError("unknown escape sequence in an escaped value")
    return sequence.sub(lambda m: _UNESCAPE[m.group()], body)


def encode_record(collection: str, key: str, value: str) -> bytes:
    """One record as the appender stores it: the line, LF and the end marker.

    ``ValueError`` names the field when the collection or key is empty or holds a comma or a line
    break, and when the line would exceed MTHawkeye's 16,254-byte line limit.
    """
    # Fast path first: isprintable() is False for every line break, NUL and other controls.
    if collection not in _collection_heads:
        _check_name("collection", collection)
        if len(_collection_heads) < 1024 and collection[0].isascii():
            # For the fast path: the first byte apart, and the rest behind a NUL standing in for it.
            _collection_heads[collection] = (ord(collection[0]), "\x00" + collection[1:])
            _byte_heads[collection] = (ord(collection[0]), f"\x00{collection[1:]},".encode())
    if not key or not key.isprintable() or "," in key:
        _check_name("key", key)
    if not value.isprintable() or value.startswith(ESCAPE_PREFIX):
        value = escape_value(value)
    try:
        data = f"{collection},{key},{value}\n\x00\x00\x00\r".encode()
    except UnicodeEncodeError as exc:
        raise ValueError(f"record {collection},{key}: not encodable as UTF-8") from exc
    if len(data) > _MAX_ENCODED_BYTES:
        raise ValueError(
            f"record {collection},{key}: {len(data) - 5:,} bytes; a record may take at most "
            f"{MAX_LINE_BYTES:,} bytes (MTHawkeye's line limit) - store large data in a side file"
        )
    return data


def encode_typed(record: WritableRecord, key: str | None = None) -> bytes:
    """A typed record as ``encode_record`` stores it (``key`` overrides ``record_key()``).

    A typed value is JSON or a formatted number: it never holds a raw control character (JSON
    escapes them) nor starts with the escape prefix, so an ASCII value is stored as it is; other
    values (U+0085, U+2028, U+2029 may need escaping) take ``encode_record``'s way.
    """
    collection = record.collection
    key = key or record.record_key()
    value = record.encode_value()
    head = _byte_heads.get(collection)
    if head is not None and value.isascii() and key and "," not in key and key.isprintable():
        data = b"".join((collection.encode(), b",", key.encode(), b",", value, b"\n\x00\x00\x00\r"))
        if len(data) <= _MAX_ENCODED_BYTES:
            return data
    try:
        text = value.decode()
    except UnicodeDecodeError as exc:
        raise ValueError(f"record {collection},{key}: value is not UTF-8") from exc
    return encode_record(collection, key, text)


def _check_name(field: str, text: str) -> None:
    if text and text.isprintable() and "," not in text:
        return
    if not text:
        raise ValueError(f"{field} is empty")
    if "," in text or _has_break(text):
        raise ValueError(
            f"{field} {text!r} contains a comma or a line break, which records cannot hold"
        )


def _has_break(text: str) -> bool:
    """Whether ``text`` holds a line break or NUL (``_BREAKS``; no ``re`` at the agent's start)."""
    return any(character in text for character in _BREAKS)


class RecordsRead:
    """Records read back in stored order, and the lines that could not be used."""

    __slots__ = ("records", "skipped")

    def __init__(self, records: list[Record], skipped: list[Skipped]) -> None:
        self.records = records
        self.skipped = skipped

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RecordsRead):
            return NotImplemented
        return (self.records, self.skipped) == (other.records, other.skipped)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"RecordsRead(records={self.records!r}, skipped={self.skipped!r})"

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)


def parse_records(lines: Iterable[bytes], skipped: list[Skipped] | None = None) -> RecordsRead:
    """Turn appender lines into records, skipping header lines and anything malformed."""
    from hawkwatch.model.record import Record, Skipped  # readers' types: not at the agent's start

    records: list[Record] = []
    skipped = list(skipped or [])
    for number, raw in enumerate(lines, start=1):
        try:
            line = raw.decode()
        except UnicodeDecodeError:
            skipped.append(Skipped(number, "not valid UTF-8"))
            continue
        if line == HEADER:
            continue
        parts = line.split(",", 2)
        if len(parts) != 3 or not parts[0] or not parts[1]:
            skipped.append(Skipped(number, "not a collection,key,value record"))
            continue
        collection, key, value = parts
        try:
            value = unescape_value(value)
        except ValueError as exc:
            skipped.append(Skipped(number, str(exc)))
            continue
        records.append(Record(collection, key, value))
    return RecordsRead(records, skipped)


def read_records(folder: str | os.PathLike[str], collection: str | None = None) -> RecordsRead:
    """Read a session folder's records without changing any file (ours or MTHawkeye's)."""
    from hawkwatch.store.appender_read import read_appender  # readers only: not the agent's start

    content = read_appender(folder, RECORDS_NAME)
    result = parse_records(content.lines, content.skipped)
    if collection is None:
        return result
    return RecordsRead([r for r in result.records if r.collection == collection], result.skipped)


def paginate(
    records: list[Record], page_size: int = 100, descending: bool = False
) -> Iterator[list[Record]]:
    """Cut records into full pages of ``page_size`` (the last may be shorter)."""
    if page_size < 1:
        raise ValueError(f"page_size must be at least 1, not {page_size}")
    ordered = records[::-1] if descending else records
    for start in range(0, len(ordered), page_size):
        yield ordered[start : start + page_size]


class RecordStore:
    """The ``records`` file of one session folder, opened for writing.

    ``store`` costs the calling thread no system call; ``store_async`` only queues the record,
    so it is safe from ``gc`` callbacks, finalizers and signal handlers.
    """

    def __init__(self, folder: str | os.PathLike[str], *, launch_time: float | None = None) -> None:
        self._folder = path_text(folder)  # str paths: no pathlib at the agent's start
        self._pid = os.getpid()
        self._lock_fd = _worker.hold_lock(lock_for_writing(self._folder))  # one writer per folder
        try:
            self._appender = AppenderFile(self._folder, RECORDS_NAME)
        except BaseException:
            _worker.release_lock(self._lock_fd)
            raise
        self._append_split = self._appender.append_split
        self._appender.drop_notice = _drop_notice
        if self._appender.is_new:
            started = launch_time if launch_time is not None else process_start_time()
            self._appender.append_encoded(HEADER.encode() + b"\n" + END_MARKER)
            self._appender.append_encoded(encode_typed(plain_records.launch_time(started)))

    @property
    def folder(self) -> Path:
        from pathlib import Path  # readers' view; the writer works with str paths

        return Path(self._folder)

    @property
    def dropped(self) -> Dropped:
        """Records dropped since ``records.mtlog`` last failed (zero while writes succeed)."""
        return self._appender.dropped

    @property
    def write_failure(self) -> str | None:
        """Why ``records.mtlog`` cannot be written right now, or None."""
        return self._appender.write_failure

    def store(self, collection: str, key: str, value: str) -> None:
        """Append one record now, on the calling thread (about a microsecond, no system call)."""
        # Fast path, equivalent to encode_record() for the common case (tested against it):
        # a known collection, and a key and value that are printable, so need no escaping.
        head = _collection_heads.get(collection)
        if (
            head is not None
            and key
            and "," not in key
            and key.isprintable()
            and (
                value.isprintable()  # fastest for short values; per character it is slow
                if len(value) < 64
                else value.isascii()  # O(1); then only these can need escaping
                and "\n" not in value
                and "\r" not in value
                and "\x00" not in value
                and value[:1] != ESCAPE_PREFIX
            )
        ):
            data = f"{head[1]},{key},{value}\n\x00\x00\x00\r".encode()
            if len(data) <= _MAX_ENCODED_BYTES:
                self._append_split(head[0], data)
                return
        self._appender.append_encoded(encode_record(collection, key, value))

    def write(self, record: WritableRecord, key: str | None = None) -> None:
        """Append a typed record now (like ``store``); ``key`` overrides ``record_key()``."""
        # Fast paths: what encode_typed() gives, split for the commit byte (tested against it).
        collection = record.collection
        line_text = getattr(record, "line_text", None)  # a series value: nothing to check
        if key is None and line_text is not None:
            head_text = _collection_heads.get(collection)
            if head_text is not None:
                line = f"{head_text[1]},{line_text()}\n\x00\x00\x00\r"
                self._append_split(head_text[0], line.encode())
                return
        key = key or record.record_key()
        value = record.encode_value()
        head = _byte_heads.get(collection)
        if head is not None and value.isascii() and key and "," not in key and key.isprintable():
            data = b"".join((head[1], key.encode(), b",", value, b"\n\x00\x00\x00\r"))
            if len(data) <= _MAX_ENCODED_BYTES:
                self._append_split(head[0], data)
                return
        self._appender.append_encoded(encode_typed(record, key))

    def write_many(self, records: Iterable[JsonRecord]) -> None:
        """Append JSON records now, many per buffer operation, in order.

        Lines of up to ``BATCH_BYTES`` are encoded into one buffer (msgspec's ``encode_into``:
        no value copied twice) and committed together, so a crash keeps all of them or none;
        each line is what ``write`` stores (tested against it). A record ``write`` would check
        further (a collection not written yet, an unusual key, its own encoding, a line over
        the limit, a value that is not ASCII) is left to ``write``. ``records`` may be a
        generator: what it gave before it raised is written.
        """
        encode_into, json_value = _json_encoding()
        batch = bytearray()
        first = 0
        try:
            for record in records:
                collection = record.collection
                head = _byte_heads.get(collection)
                key = record.record_key()
                start = len(batch)
                if (
                    head is None
                    or "," in key
                    or not key.isprintable()
                    or type(record).encode_value is not json_value
                ):
                    self._commit_batch(batch, first)
                    self.write(record, key)
                    continue
                if start:
                    batch += _LINE_END
                    batch += collection.encode()
                    batch += b","
                else:
                    batch += head[1]
                    first = head[0]
                batch += key.encode()
                batch += b","
                encode_into(record, batch, len(batch))
                body = len(batch) - start - (1 if start else 0)
                if body > MAX_LINE_BYTES or not batch[start:].isascii():
                    del batch[start:]
                    self._commit_batch(batch, first)
                    self.write(record, key)  # says what is wrong, or escapes what needs it
                elif len(batch) >= BATCH_BYTES:
                    self._commit_batch(batch, first)
        finally:  # what came before a record that failed to be made is kept
            self._commit_batch(batch, first)

    def _commit_batch(self, batch: bytearray, first: int) -> None:
        if batch:
            batch += _LINE_END
            batch += END_MARKER
            self._append_split(first, bytes(batch))
            batch.clear()

    def write_nowait(self, record: WritableRecord, key: str | None = None) -> None:
        """Append a typed record without ever blocking (like ``store_nowait``)."""
        data = encode_typed(record, key)
        if not self._appender.try_append_encoded(data):
            _worker.submit_append(self._appender, data)

    def store_async(self, collection: str, key: str, value: str) -> None:
        """Queue one record for the store's background thread; never blocks.

        Arguments are checked here, so a bad record still raises ``ValueError`` at the call.
        """
        if os.getpid() != self._pid:
            return  # a child forked without fork hooks: never into the parent's files
        _worker.submit_append(self._appender, encode_record(collection, key, value))

    def store_nowait(self, collection: str, key: str, value: str) -> None:
        """Write now if the buffer is free, else queue like ``store_async``; never blocks.

        For code that may run while its own thread is inside ``store``: ``gc`` callbacks,
        finalizers, signal handlers, and API calls made from any of them.
        """
        if os.getpid() != self._pid:
            return  # a child forked without fork hooks: never into the parent's files
        data = encode_record(collection, key, value)
        if not self._appender.try_append_encoded(data):
            _worker.submit_append(self._appender, data)

    def read(self, collection: str | None = None) -> RecordsRead:
        """Every record written to this folder so far (queued ``store_async`` records included)."""
        _worker.drain()
        return read_records(self._folder, collection)

    def pages(
        self, page_size: int = 100, collection: str | None = None, descending: bool = False
    ) -> Iterator[list[Record]]:
        """Records in pages of ``page_size``, filtered by collection *before* cutting pages."""
        return paginate(self.read(collection).records, page_size, descending)

    def flush(self) -> None:
        """Write queued records and move the buffer to ``.mtlog``."""
        _worker.drain()
        self._appender.flush()

    def close(self) -> None:
        """Flush and release the files. Idempotent."""
        _worker.drain()
        self._appender.close()
        if os.getpid() == self._pid:
            _worker.release_lock(self._lock_fd)
        self._lock_fd = None

    def __enter__(self) -> RecordStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


@functools.cache
def _json_encoding() -> tuple[Any, Any]:
    """msgspec's ``encode_into`` and ``JsonRecord.encode_value``: loaded with the typed model,
    at the first batch (a short program writes none)."""
    import msgspec

    from hawkwatch.model.records import JsonRecord

    return msgspec.json.Encoder().encode_into, JsonRecord.encode_value


def _drop_notice(dropped: Dropped) -> bytes:
    """The ``store-dropped`` record saying how many records a failing disk cost."""
    from hawkwatch.model.records.store import StoreDropped

    record = StoreDropped(
        since=round(dropped.since, 6),
        until=round(time.time(), 6),
        records=dropped.lines,
        bytes=dropped.bytes,
        reason=dropped.reason[:200],
    )
    return encode_typed(record)
