"""RecordStore and the ``records`` file: MTHawkeye folders, escaping, limits, paging."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hawkwatch.errors import StoreError
from hawkwatch.model import Record
from hawkwatch.store import RecordStore, Session, read_records
from hawkwatch.store.records import encode_record
from tests.builders import (
    END_MARKER,
    MMAP_SIZE,
    OVERFLOW_NOTICE,
    lines_bytes,
    mmap_image,
    write_appender,
    write_hawkeye_records,
)

LAUNCH = "1554251562.052403"
ANR_VALUE = json.dumps(
    {
        "duration": 812,
        "startFrom": 1554251570.25,
        "inBackground": False,
        "stacks": [
            {
                "time": 1554251570.5,
                "stackframes": "0x1a2b3c,0x1a2b40,0x100004f00",
                "titleframe": "0x100004f00",
                "capturedCount": 2,
                "threadCount": 14,
            }
        ],
    },
    separators=(",", ":"),
)
LEAK_VALUE = "MTHomeViewController,Reference By:[_delegate,_cells[3],]"


def mtlog(folder: Path) -> bytes:
    return (folder / "records.mtlog").read_bytes()


def buffered_line(folder: Path) -> bytes:
    """The records in ``records.mmap2`` (the valid prefix, without the end marker)."""
    image = (folder / "records.mmap2").read_bytes()
    return image[: image.index(END_MARKER)]


# -- MTHawkeye folders, as copied from an iPhone ------------------------------------------


def test_an_mthawkeye_folder_reads_back_exactly(tmp_path):
    folder = tmp_path / "2019-04-03_08:32:42+052"  # the docs' colon form of the name
    write_hawkeye_records(
        folder,
        flushed=[
            "collection,key,value",
            f"launch-time,{LAUNCH},{LAUNCH}",
            "r-mem,1554251563.10,212.34",
            "cpu,1554251563.10,87.5",
            f"anr,1554251570_0,{ANR_VALUE}",
        ],
        unflushed=[f"leak,1554251575.5,{LEAK_VALUE}", "fps,1554251576.0,58"],
        stale=lines_bytes(["cpu,1554251500.0,3.0", "fps,1554251500.5,60"]) + b"fps,155425",
    )
    expected = [
        Record("launch-time", LAUNCH, LAUNCH),
        Record("r-mem", "1554251563.10", "212.34"),
        Record("cpu", "1554251563.10", "87.5"),
        Record("anr", "1554251570_0", ANR_VALUE),
        Record("leak", "1554251575.5", LEAK_VALUE),
        Record("fps", "1554251576.0", "58"),
    ]
    result = read_records(folder)
    assert result.records == expected
    assert result.skipped == []
    assert Session.open(folder).records().records == expected
    assert json.loads(result.records[3].value)["stacks"][0]["threadCount"] == 14
    assert read_records(folder, "fps").records == [Record("fps", "1554251576.0", "58")]


def test_an_overflow_notice_is_skipped_and_reported(tmp_path):
    write_hawkeye_records(
        tmp_path, flushed=["cpu,1,10.0", OVERFLOW_NOTICE, "cpu,2,20.0"], unflushed=["cpu,3,30.0"]
    )
    result = read_records(tmp_path)
    assert [r.key for r in result.records] == ["1", "2", "3"]
    assert len(result.skipped) == 1
    assert result.skipped[0].line == 2
    assert "overflow" in result.skipped[0].reason


def test_an_mtlog_with_nuls_from_mtappenderfiles_reopen_bug(tmp_path):
    # MTAppenderFile reopened a buffer holding unflushed data and appended all 153,600 bytes
    # of it to .mtlog: valid lines, the marker, stale bytes and NULs. The next flushed block
    # follows the NULs directly, so its first line shares a line with them.
    dumped = mmap_image(
        lines_bytes(["cpu,3,30.0", "cpu,4,40.0"]),
        stale=b"cpu,0,stale\ncpu,1,stale",
    )
    log = (
        lines_bytes(["cpu,1,10.0", "cpu,2,20.0"])
        + dumped
        + lines_bytes(["cpu,5,lost", "cpu,6,60.0"])
    )
    write_appender(tmp_path, "records", log=log, buffer=mmap_image(b"cpu,7,70.0\n"))
    result = read_records(tmp_path)
    assert [r.key for r in result.records] == ["1", "2", "3", "4", "6", "7"]
    # Every line holding a NUL is dropped and reported: "\0\0\0\rcpu,0,stale" and
    # "cpu,1,stale\0…\0cpu,5,lost" (hawkeye.md §2.5: stale bytes cannot be told from data).
    assert [s.line for s in result.skipped] == [5, 6]
    assert all("NUL" in s.reason for s in result.skipped)


def test_an_mthawkeye_buffer_with_nothing_unflushed_adds_nothing(tmp_path):
    write_hawkeye_records(
        tmp_path, flushed=["cpu,1,10.0"], stale=lines_bytes(["cpu,0,stale", "cpu,0.5,stale"])
    )
    assert read_records(tmp_path).records == [Record("cpu", "1", "10.0")]


# -- the header ------------------------------------------------------------------------------


def test_a_new_store_writes_mthawkeyes_two_header_lines_once(tmp_path):
    with RecordStore(tmp_path, launch_time=1700000000.25) as store:
        store.store("cpu", "1700000001.0", "12.5")
        assert buffered_line(tmp_path) == (
            b"collection,key,value\n"
            b"launch-time,1700000000.25,1700000000.25\n"
            b"cpu,1700000001.0,12.5\n"
        )
    with RecordStore(tmp_path, launch_time=1700000099.0) as store:  # reopened: no new header
        store.store("cpu", "1700000100.0", "13.5")
        assert store.read().records == [
            Record("launch-time", "1700000000.25", "1700000000.25"),
            Record("cpu", "1700000001.0", "12.5"),
            Record("cpu", "1700000100.0", "13.5"),
        ]
    assert mtlog(tmp_path).count(b"collection,key,value") == 1


# -- escaping --------------------------------------------------------------------------------

ESCAPED = [
    ("line\nbreak", "\x1fline\\nbreak"),
    ("cr\rhere", "\x1fcr\\rhere"),
    ("nul\x00byte", "\x1fnul\\0byte"),
    ("nel\x85", "\x1fnel\\x85"),
    ("ls\u2028ps\u2029", "\x1fls\\u2028ps\\u2029"),
    ("\x1fstarts with the prefix", "\x1f\x1fstarts with the prefix"),
    ("back\\slash\nand break", "\x1fback\\\\slash\\nand break"),
    ("\n", "\x1f\\n"),
]


@pytest.mark.parametrize(("value", "on_disk"), ESCAPED)
def test_a_value_with_a_line_break_or_the_prefix_is_escaped_and_restored(tmp_path, value, on_disk):
    with RecordStore(tmp_path, launch_time=1.0) as store:
        store.store("custom", "k", value)
        assert buffered_line(tmp_path).split(b"\n")[2] == f"custom,k,{on_disk}".encode()
        assert store.read("custom").records == [Record("custom", "k", value)]


VERBATIM = [
    "12.5",
    '{"name":"GET /","ms":[1,2,3],"ok":true}',
    "comma,separated,value",
    "tab\there and a vertical\x0btab",
    "literal \\n backslash-n",
    "é ü 漢字 🙂",
    "trailing\x1f",
    "",
]


@pytest.mark.parametrize("value", VERBATIM)
def test_any_other_value_is_stored_byte_for_byte(tmp_path, value):
    with RecordStore(tmp_path, launch_time=1.0) as store:
        store.store("custom", "k", value)
        store.store_async("custom", "k2", value)
        store.flush()
    lines = mtlog(tmp_path).split(b"\n")
    assert lines[2] == f"custom,k,{value}".encode()
    assert lines[3] == f"custom,k2,{value}".encode()
    assert read_records(tmp_path, "custom").records == [
        Record("custom", "k", value),
        Record("custom", "k2", value),
    ]


# -- argument checks -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("collection", "key", "field"),
    [
        ("a,b", "k", "collection"),
        ("line\nbreak", "k", "collection"),
        ("cr\r", "k", "collection"),
        ("nel\x85", "k", "collection"),
        ("", "k", "collection"),
        ("cpu", "k,1", "key"),
        ("cpu", "k\n", "key"),
        ("cpu", "k\u2028", "key"),
        ("cpu", "", "key"),
    ],
)
def test_a_bad_collection_or_key_raises_value_error_naming_the_field(
    tmp_path, collection, key, field
):
    with RecordStore(tmp_path, launch_time=1.0) as store:
        for write in (store.store, store.store_async):
            with pytest.raises(ValueError, match=f"^{field} "):
                write(collection, key, "v")
        with pytest.raises(ValueError, match=f"^{field} "):
            encode_record(collection, key, "v")
        assert len(store.read().records) == 1  # only launch-time


def test_a_record_over_16254_bytes_raises_a_clear_value_error(tmp_path):
    prefix = len("c,k,")
    with RecordStore(tmp_path, launch_time=1.0) as store:
        store.store("c", "k", "v" * (16_254 - prefix))  # exactly at the limit
        with pytest.raises(ValueError, match=r"16,255 bytes.*at most 16,254 bytes.*side file"):
            store.store("c", "k", "v" * (16_254 - prefix + 1))
        # The limit is in UTF-8 bytes, not characters: 'é' takes two.
        with pytest.raises(ValueError, match="at most 16,254 bytes"):
            store.store("c", "k", "é" * 8_126)
        with pytest.raises(ValueError, match="at most 16,254 bytes"):
            store.store_async("c", "k", "é" * 8_126)
        # Escaping counts too: 8,200 LFs take 16,400 bytes once escaped.
        with pytest.raises(ValueError, match="at most 16,254 bytes"):
            store.store("c", "k", "\n" * 8_200)
        values = [r.value for r in store.read("c").records]
    assert values == ["v" * (16_254 - prefix)]


def test_a_lone_surrogate_raises_value_error(tmp_path):
    with RecordStore(tmp_path, launch_time=1.0) as store, pytest.raises(ValueError, match="UTF-8"):
        store.store("c", "k", "bad \ud800 value")


def test_store_after_close_raises_store_error(tmp_path):
    store = RecordStore(tmp_path, launch_time=1.0)
    store.close()
    store.close()
    with pytest.raises(StoreError):
        store.store("cpu", "1", "2")


# -- asynchronous records --------------------------------------------------------------------


def test_store_async_records_are_in_the_file_after_read_or_flush(tmp_path):
    with RecordStore(tmp_path, launch_time=1.0) as store:
        for i in range(50):
            store.store_async("gc-pause", str(i), json.dumps({"duration_ms": i / 4}))
        assert [r.key for r in store.read("gc-pause")] == [str(i) for i in range(50)]
        store.store_async("gc-pause", "50", "last")
        store.flush()
        assert mtlog(tmp_path).endswith(b"gc-pause,50,last\n")
        assert (tmp_path / "records.mmap2").read_bytes()[0] == 0


def test_store_and_store_async_from_one_thread_keep_their_order_per_call_kind(tmp_path):
    with RecordStore(tmp_path, launch_time=1.0) as store:
        for i in range(20):
            store.store("sync", str(i), "s")
            store.store_async("async", str(i), "a")
        records = store.read().records
    assert [r.key for r in records if r.collection == "sync"] == [str(i) for i in range(20)]
    assert [r.key for r in records if r.collection == "async"] == [str(i) for i in range(20)]


# -- paging ----------------------------------------------------------------------------------


def test_pages_filter_by_collection_before_cutting_full_pages(tmp_path):
    with RecordStore(tmp_path, launch_time=1.0) as store:
        for i in range(250):
            store.store("cpu", str(i), str(i % 100))
            store.store("r-mem", str(i), "1.00")
        pages = list(store.pages(100, collection="cpu"))
        assert [len(p) for p in pages] == [100, 100, 50]
        assert all(r.collection == "cpu" for page in pages for r in page)
        assert [r.key for page in pages for r in page] == [str(i) for i in range(250)]

        descending = list(store.pages(100, collection="cpu", descending=True))
        assert [len(p) for p in descending] == [100, 100, 50]
        assert [r.key for page in descending for r in page] == [
            str(i) for i in reversed(range(250))
        ]
        assert descending[0][0].key == "249"

        assert [len(p) for p in store.pages(200)] == [200, 200, 101]  # 501 with launch-time
        assert list(store.pages(10, collection="absent")) == []
        with pytest.raises(ValueError, match="page_size"):
            list(store.pages(0))


def test_the_mmap2_of_a_store_is_exactly_153600_bytes(tmp_path):
    with RecordStore(tmp_path, launch_time=1.0):
        assert len((tmp_path / "records.mmap2").read_bytes()) == MMAP_SIZE
