"""Hypothesis properties of the records file and the appender format."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from hawkwatch.model import Record
from hawkwatch.store import RecordStore, _worker, read_records
from hawkwatch.store.appender_read import parse_appender
from hawkwatch.store.records import encode_record, escape_value, parse_records, unescape_value
from tests.builders import END_MARKER, flush_journal, lines_bytes, mmap_image

ON_DISK = settings(deadline=None, max_examples=100)

# Every string UTF-8 can encode: all of Unicode except the surrogates.
encodable_text = st.text(alphabet=st.characters(codec="utf-8"))
values = st.one_of(
    encodable_text,
    st.text(alphabet='\n\r\x00\x85\u2028\u2029\x1f\\nrx0u2,{}"é'),  # escaping's edge cases
)
names = st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters=",\n\r\x00\x85\u2028\u2029"),
    min_size=1,
    max_size=20,
)


def new_store(folder: str) -> RecordStore:
    return RecordStore(folder, launch_time=1.0)


@ON_DISK
@given(records=st.lists(st.tuples(names, names, values), max_size=20))
def test_any_valid_record_round_trips_through_store_and_read(records):
    assume(all(r != ("collection", "key", "value") for r in records))  # the header line
    with tempfile.TemporaryDirectory() as folder:
        with new_store(folder) as store:
            for collection, key, value in records:
                store.store(collection, key, value)
            assert store.read().records[1:] == [Record(*r) for r in records]
        assert read_records(folder).records[1:] == [Record(*r) for r in records]


@given(value=values)
def test_escaping_is_inverted_exactly_and_leaves_no_line_break(value):
    stored = escape_value(value)
    assert unescape_value(stored) == value
    assert not any(c in stored for c in "\n\r\x00\x85\u2028\u2029")
    if stored != value:
        assert stored.startswith("\x1f")


surrogate_texts = st.builds(
    lambda before, surrogate, after: before + surrogate + after,
    encodable_text,
    st.characters(categories=["Cs"]),
    encodable_text,
)


@given(value=surrogate_texts)
def test_a_value_with_a_lone_surrogate_raises_value_error(value):
    with pytest.raises(ValueError, match="UTF-8"):
        encode_record("c", "k", value)


@ON_DISK
@given(text=surrogate_texts, where=st.sampled_from(["collection", "key", "value"]))
def test_no_record_with_a_lone_surrogate_is_ever_written(text, where):
    assume(where == "value" or not any(c in text for c in ",\n\r\x00\x85\u2028\u2029"))
    fields = {"collection": "c", "key": "k", "value": "v"} | {where: text}
    with tempfile.TemporaryDirectory() as folder, new_store(folder) as store:
        with pytest.raises(ValueError):
            store.store(**fields)
        with pytest.raises(ValueError):
            store.store_async(**fields)
        assert store.read().records == [Record("launch-time", "1.0", "1.0")]


long_values = st.builds(
    lambda n, tail: "v" * n + tail, st.integers(16_230, 16_260), st.text(max_size=3)
)
# past the store's short-value check: JSON-like ASCII with a stray break, prefix or non-ASCII char
medium_values = st.builds(
    lambda head, body, tail: head + body + tail,
    st.sampled_from(["", "\x1f", "{", "\n"]),
    st.text(alphabet=st.characters(max_codepoint=127), min_size=64, max_size=300),
    st.text(max_size=4),
)


@ON_DISK
@given(
    collection=names,
    key=st.one_of(names, st.text(max_size=5)),
    value=st.one_of(values, medium_values, long_values),
)
def test_the_fast_path_writes_exactly_the_bytes_encode_record_produces(collection, key, value):
    with tempfile.TemporaryDirectory() as folder, new_store(folder) as store:
        store.flush()
        assert _worker.drain()
        encode_record(collection, "warm", "up")  # a known collection takes the fast path
        try:
            expected = encode_record(collection, key, value)
        except ValueError:
            with pytest.raises(ValueError):
                store.store(collection, key, value)
            return
        store.store(collection, key, value)
        image = (Path(folder) / "records.mmap2").read_bytes()
        assert image[: len(expected)] == expected
        assert expected.endswith(b"\n" + END_MARKER)


@ON_DISK
@given(
    records=st.lists(st.tuples(st.sampled_from(["cpu", "mem", "fps"]), names), max_size=60),
    page_size=st.integers(1, 25),
    collection=st.sampled_from([None, "cpu", "mem", "fps", "absent"]),
    descending=st.booleans(),
)
def test_pages_are_full_except_the_last_and_concatenate_to_the_filtered_read(
    records, page_size, collection, descending
):
    with tempfile.TemporaryDirectory() as folder, new_store(folder) as store:
        for i, (name, value) in enumerate(records):
            store.store(name, str(i), value)
        pages = list(store.pages(page_size, collection, descending))
        expected = store.read(collection).records
        if descending:
            expected.reverse()
    assert all(len(page) == page_size for page in pages[:-1])
    assert all(0 < len(page) <= page_size for page in pages)
    assert [r for page in pages for r in page] == expected


# -- the appender format ---------------------------------------------------------------------

line_texts = st.binary(min_size=1, max_size=60).filter(
    lambda b: b"\n" not in b and b"\x00" not in b and not b.startswith(b"[F][")
)


@given(log=st.binary(max_size=2_000), buffer=st.binary(max_size=2_000))
def test_parse_appender_never_raises_on_arbitrary_bytes(log, buffer):
    content = parse_appender(log, buffer)
    for line in content.lines:
        assert line
        assert b"\n" not in line
        assert b"\x00" not in line
        assert not line.startswith(b"[F][")
    parse_records(content.lines, content.skipped)  # nor does the records layer


@given(
    head=st.lists(line_texts, max_size=10),
    noise=st.binary(max_size=300),
    offset=st.integers(0, 200),
)
def test_parse_appender_never_raises_on_a_damaged_full_size_buffer(head, noise, offset):
    data = lines_bytes(head)
    image = bytearray(mmap_image(data, journal=flush_journal(offset, data)))
    image[len(data) // 2 : len(data) // 2 + len(noise)] = noise  # may hit marker and data
    image[-300:] = noise.ljust(300, b"\x01")[:300]  # and the journal
    content = parse_appender(data[: offset % (len(data) + 1)], bytes(image))
    assert all(line and b"\n" not in line for line in content.lines)


@given(lines=st.lists(line_texts, max_size=30), data=st.data())
def test_any_cut_of_an_mtlog_reads_as_a_prefix_of_its_lines(lines, data):
    log = lines_bytes(lines)
    cut = data.draw(st.integers(0, len(log)))
    content = parse_appender(log[:cut], b"")
    complete = log[:cut].count(b"\n")
    assert content.lines == lines[:complete]
    torn = cut > 0 and not log[:cut].endswith(b"\n")
    assert len(content.skipped) == (1 if torn else 0)


@given(lines=st.lists(line_texts, min_size=1, max_size=30), data=st.data())
def test_any_cut_of_an_mmap2_reads_as_a_prefix_of_its_lines(lines, data):
    buffered = lines_bytes(lines)
    cut = data.draw(st.integers(0, len(buffered) + 10))
    content = parse_appender(b"", mmap_image(buffered)[:cut])
    complete = buffered[:cut].count(b"\n")
    assert content.lines == lines[:complete]


@given(
    flushed=st.lists(line_texts, max_size=10),
    buffered=st.lists(line_texts, min_size=1, max_size=10),
    written=st.data(),
)
def test_a_flush_cut_at_any_byte_reads_each_line_exactly_once(flushed, buffered, written):
    before, block = lines_bytes(flushed), lines_bytes(buffered)
    n = written.draw(st.integers(0, len(block)))
    image = mmap_image(block, stale=b"stale\n", journal=flush_journal(len(before), block))
    content = parse_appender(before + block[:n], image)
    assert content.lines == flushed + buffered
    assert content.skipped == []
