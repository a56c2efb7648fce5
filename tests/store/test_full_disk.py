"""A full or filling disk, on a real small filesystem: never SIGBUS, never a flood, never silent."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from hawkwatch.errors import StoreError
from hawkwatch.store import AppenderFile, RecordStore, read_records
from hawkwatch.store.appender import BUFFER_SIZE
from tests.smallfs import fill, free_bytes, small_filesystem


@pytest.mark.parametrize("free", [0, 40 * 1024, 100 * 1024])
def test_a_buffer_the_filesystem_cannot_back_is_refused_at_open(tmp_path: Path, free: int) -> None:
    # A sparse buffer would open fine and kill the process with SIGBUS on the first page the
    # filesystem cannot back; the blocks are reserved at open instead, so the open fails.
    with small_filesystem(tmp_path / "fs", 1024) as fs:
        fill(fs, free)
        assert free_bytes(fs) < BUFFER_SIZE
        with pytest.raises(StoreError, match=r"records\.mmap2: cannot reserve the 150 KB buffer"):
            AppenderFile(fs / "session", "records")


def test_a_buffer_is_fully_allocated_when_there_is_room(tmp_path: Path) -> None:
    with small_filesystem(tmp_path / "fs", 1024) as fs, AppenderFile(fs, "records"):
        blocks = (fs / "records.mmap2").stat().st_blocks * 512
        assert blocks >= BUFFER_SIZE


def test_a_full_disk_drops_and_counts_with_one_warning_then_records_the_count(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="hawkwatch")
    total = 60_000
    with small_filesystem(tmp_path / "fs", 2048) as fs:
        store = RecordStore(fs / "session", launch_time=1.0)
        filler = fill(fs, 0)
        for i in range(total):
            store.store("custom-time-event", f"{i}", f'{{"event":"e{i}"}}')  # never raises
        dropped = store.dropped.lines
        assert dropped > 0
        assert store.write_failure == "No space left on device"
        warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(warnings) == 1, [r.getMessage() for r in warnings]
        assert "records.mtlog: cannot write (No space left on device)" in warnings[0].getMessage()

        filler.unlink()  # space returns
        store.flush()
        assert store.write_failure is None and store.dropped.lines == 0
        store.close()
        records = read_records(fs / "session").records
    kept = [r for r in records if r.collection == "custom-time-event"]
    notices = [json.loads(r.value) for r in records if r.collection == "store-dropped"]
    assert len(notices) == 1
    assert notices[0]["records"] == dropped
    assert notices[0]["reason"] == "No space left on device"
    assert len(kept) + dropped == total  # every record is either kept or counted
    assert [r.key for r in kept] == [str(i) for i in range(len(kept))]  # the oldest are kept


def test_closing_while_the_disk_is_still_full_keeps_the_buffer_and_says_what_was_lost(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with small_filesystem(tmp_path / "fs", 2048) as fs:
        store = RecordStore(fs / "session", launch_time=1.0)
        fill(fs, 0)
        for i in range(20_000):
            store.store("cpu", f"{i}", "1.0")
        store.close()
        warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(warnings) == 2
        assert f"{store.dropped.lines} lines" in warnings[1]
        # The lines in the buffer are still on disk, read back from the .mmap2.
        kept = read_records(fs / "session", "cpu").records
        assert len(kept) + store.dropped.lines == 20_000
