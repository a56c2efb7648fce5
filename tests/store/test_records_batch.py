"""``RecordStore.write_many``: the lines ``write`` would store, many per buffer commit."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hawkwatch.model.records import CallSite, NetworkTransaction, Phases
from hawkwatch.store import RecordStore
from hawkwatch.store.appender import BUFFER_SIZE
from hawkwatch.store.records import BATCH_BYTES


def transaction(index: int, url: str = "http://h:80/p", thread: str = "MainThread") -> (
    NetworkTransaction
):  # fmt: skip
    return NetworkTransaction(
        start=1_700_000_000.125 + index / 1000, index=index, method="GET", url=url,
        host="h:80", library="requests", status=200, http_version="1.1", reused=True,
        phases_ms=Phases(queue=0.01, send=0.02, ttfb=1.5, receive=0.2, total=1.73),
        response_bytes=1024, thread=thread, frames=(CallSite("main", "/app.py", 7),),
    )  # fmt: skip


def stored(folder: Path) -> bytes:
    """Every byte of the records file (flushed log, then the buffer's valid data)."""
    log = folder / "records.mtlog"
    buffer = (folder / "records.mmap2").read_bytes()
    return (log.read_bytes() if log.exists() else b"") + buffer.split(b"\x00", 1)[0]


def written_by(folder: Path, write: str, records: list[NetworkTransaction]) -> bytes:
    folder.mkdir()
    with RecordStore(folder, launch_time=1.0) as store:
        store.write(transaction(0))  # the collection is known: the batched path from here on
        if write == "write_many":
            store.write_many(iter(records))
        else:
            for record in records:
                store.write(record)
    return stored(folder)


def test_the_lines_are_those_write_stores_across_several_commits(tmp_path: Path) -> None:
    records = [transaction(i) for i in range(1, 600)]  # ~200 KB: more than the buffer holds
    assert sum(len(r.encode_value()) for r in records) > max(BUFFER_SIZE, 4 * BATCH_BYTES)
    batched = written_by(tmp_path / "many", "write_many", records)
    one_by_one = written_by(tmp_path / "one", "write", records)
    assert batched == one_by_one
    assert batched.count(b"\nnetwork-transaction,") == len(records) + 1


def test_records_that_need_escaping_or_are_new_take_writes_way_in_order(tmp_path: Path) -> None:
    records = [
        transaction(1),
        transaction(2, url="http://h:80/caf\u00e9"),  # not ASCII: stored as UTF-8
        transaction(3, thread="odd\u2028name"),  # a line break to MTHawkeye: escaped
        transaction(4),
    ]
    batched = written_by(tmp_path / "many", "write_many", records)
    assert batched == written_by(tmp_path / "one", "write", records)
    assert "caf\u00e9".encode() in batched and b"\x1f" in batched


def test_a_line_over_the_limit_fails_as_in_write_and_keeps_what_came_before(
    tmp_path: Path,
) -> None:
    huge = transaction(2, url="http://h:80/" + "a" * 17_000)
    with RecordStore(tmp_path, launch_time=1.0) as store:
        store.write(transaction(0))
        with pytest.raises(ValueError, match="MTHawkeye's line limit"):
            store.write_many([transaction(1), huge, transaction(3)])
    text = stored(tmp_path)
    assert b',"index":1,' in text and b',"index":3,' not in text


def test_a_generator_that_raises_keeps_what_it_gave_before(tmp_path: Path) -> None:
    def made() -> Iterator[NetworkTransaction]:
        yield transaction(1)
        yield transaction(2)
        raise RuntimeError("a bug while making the third")

    with RecordStore(tmp_path, launch_time=1.0) as store:
        store.write(transaction(0))
        with pytest.raises(RuntimeError):
            store.write_many(made())
        assert [r.key for r in store.read("network-transaction")] == [
            transaction(i).record_key() for i in range(3)
        ]
