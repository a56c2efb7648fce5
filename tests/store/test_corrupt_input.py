"""Damaged store files never make a reader raise: valid records come back, the rest is counted."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hawkwatch.errors import StoreError
from hawkwatch.model import Record
from hawkwatch.store import RecordsRead, Session, read_records
from tests.builders import (
    END_MARKER,
    MMAP_SIZE,
    flush_journal,
    lines_bytes,
    mmap_image,
    write_appender,
)

GOOD = ["cpu,1,10.0", "cpu,2,20.0", 'anr,3_0,{"duration":500}']
GOOD_RECORDS = [
    Record("cpu", "1", "10.0"),
    Record("cpu", "2", "20.0"),
    Record("anr", "3_0", '{"duration":500}'),
]


def read_both(folder: Path) -> RecordsRead:
    """``read_records`` and ``Session.records`` must agree; returns the result."""
    result = read_records(folder)
    assert Session(folder).records() == result
    return result


def test_a_missing_folder_reads_as_empty(tmp_path):
    result = read_both(tmp_path / "nowhere")
    assert result.records == []
    assert result.skipped == []


def test_empty_files_read_as_empty(tmp_path):
    write_appender(tmp_path, "records", log=b"", buffer=b"")
    result = read_both(tmp_path)
    assert (result.records, result.skipped) == ([], [])


def test_only_an_mtlog(tmp_path):
    write_appender(tmp_path, "records", log=lines_bytes(GOOD))
    assert read_both(tmp_path).records == GOOD_RECORDS


def test_only_an_mmap2(tmp_path):
    (tmp_path / "records.mmap2").write_bytes(mmap_image(lines_bytes(GOOD)))
    assert read_both(tmp_path).records == GOOD_RECORDS


def test_an_mtlog_cut_inside_a_line(tmp_path):
    log = lines_bytes(GOOD)
    write_appender(tmp_path, "records", log=log[:-5])
    result = read_both(tmp_path)
    assert result.records == GOOD_RECORDS[:2]
    assert len(result.skipped) == 1
    assert "incomplete" in result.skipped[0].reason


def test_an_mtlog_cut_inside_a_line_before_a_buffer(tmp_path):
    write_appender(
        tmp_path, "records", log=b"cpu,1,10.0\ncpu,2,2", buffer=mmap_image(b"cpu,4,40.0\n")
    )
    result = read_both(tmp_path)
    # The torn tail stays a line of its own; it happens to parse, so it is kept as written.
    assert result.records == [
        Record("cpu", "1", "10.0"),
        Record("cpu", "2", "2"),
        Record("cpu", "4", "40.0"),
    ]
    assert result.skipped == []


def test_an_mmap2_cut_short_inside_a_line(tmp_path):
    image = mmap_image(lines_bytes(GOOD))
    (tmp_path / "records.mmap2").write_bytes(image[:15])
    result = read_both(tmp_path)
    assert result.records == GOOD_RECORDS[:1]
    assert len(result.skipped) == 1


def test_an_mmap2_longer_than_153600_bytes(tmp_path):
    image = mmap_image(lines_bytes(GOOD), size=MMAP_SIZE + 4_096)
    write_appender(tmp_path, "records", log=b"cpu,0,0.0\n", buffer=image)
    result = read_both(tmp_path)
    assert result.records == [Record("cpu", "0", "0.0"), *GOOD_RECORDS]
    assert result.skipped == []


def test_an_mmap2_without_any_nul_is_valid_to_its_end(tmp_path):
    # MTAppenderFile with a stalled flush thread fills the buffer and writes no marker.
    lines = [f"cpu,{i},{'9' * 90}" for i in range(1_600)]
    data = lines_bytes(lines)[:MMAP_SIZE]
    (tmp_path / "records.mmap2").write_bytes(data)
    result = read_both(tmp_path)
    complete = data.count(b"\n")
    assert [r.key for r in result.records] == [str(i) for i in range(complete)]
    assert len(result.skipped) == 1  # the torn line at the end of the file


def test_invalid_utf8_and_malformed_lines_are_skipped_and_counted(tmp_path):
    log = lines_bytes(
        [
            b"cpu,1,10.0",
            b"\xff\xfe,1,2",  # not UTF-8
            b"cpu,2,\xc3",  # cut inside a UTF-8 sequence
            b"no commas at all",
            b"only,one comma",
            b",k,empty collection",
            b"cpu,,empty key",
            b"cpu,3,\x1fbad \\q escape",
            b"cpu,4,40.0",
        ]
    )
    write_appender(tmp_path, "records", log=log, buffer=mmap_image(b"cpu,5,\xe2\x82\n"))
    result = read_both(tmp_path)
    assert result.records == [Record("cpu", "1", "10.0"), Record("cpu", "4", "40.0")]
    assert [s.line for s in result.skipped] == [2, 3, 4, 5, 6, 7, 8, 10]
    reasons = [s.reason for s in result.skipped]
    assert reasons.count("not valid UTF-8") == 3
    assert reasons.count("not a collection,key,value record") == 4
    assert "escape" in reasons[6]


def test_a_journal_pointing_past_the_mtlog_is_ignored(tmp_path):
    block = lines_bytes(GOOD[2:])
    image = mmap_image(block, journal=flush_journal(10_000, block))
    write_appender(tmp_path, "records", log=lines_bytes(GOOD[:2]), buffer=image)
    result = read_both(tmp_path)
    assert result.records == GOOD_RECORDS
    assert result.skipped == []


def test_a_file_where_a_folder_should_be_and_a_folder_where_a_file_should_be(tmp_path):
    (tmp_path / "records.mmap2").mkdir()
    write_appender(tmp_path, "records", log=lines_bytes(GOOD))
    # Unflushed records may be in the buffer: reading on without it would hide them.
    with pytest.raises(StoreError, match=r"records\.mmap2: not a regular file"):
        read_records(tmp_path)
    not_a_folder = tmp_path / "file"
    not_a_folder.write_bytes(b"cpu,1,1\n")
    assert read_records(not_a_folder).records == []


def test_seeded_random_bytes_in_both_files_account_for_every_line(tmp_path):
    rng = random.Random(20240611)
    for round_ in range(20):
        folder = tmp_path / str(round_)
        log = rng.randbytes(rng.randrange(0, 20_000))
        buffer = bytearray(rng.randbytes(MMAP_SIZE))
        if round_ % 2:
            buffer[rng.randrange(0, 2_000)] = 0  # give half of them a short valid prefix
        write_appender(folder, "records", log=log, buffer=bytes(buffer))
        result = read_both(folder)
        assert all(isinstance(r.value, str) for r in result.records)
        data = log
        if buffer[0] != 0:
            if data and not data.endswith(b"\n"):
                data += b"\n"
            data += bytes(buffer).split(b"\x00", 1)[0]
        non_empty = [line for line in data.split(b"\n") if line]
        headers = non_empty.count(b"collection,key,value")
        assert len(result.records) + len(result.skipped) + headers == len(non_empty)


@settings(deadline=None, max_examples=60)
@given(
    log=st.binary(max_size=3_000),
    buffer=st.one_of(
        st.binary(max_size=3_000),
        st.builds(
            lambda head, tail: mmap_image(head + END_MARKER + tail),
            st.binary(max_size=500),
            st.binary(max_size=500),
        ),
    ),
)
def test_arbitrary_files_on_disk_never_make_a_reader_raise(log, buffer):
    with tempfile.TemporaryDirectory() as folder:
        write_appender(Path(folder), "records", log=log, buffer=buffer)
        result = read_both(Path(folder))
    for record in result.records:
        assert record.collection
        assert record.key
        assert "," not in record.collection
