"""MallocStackLogging logs written byte for byte in all four record layouts, read back exactly."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hawkwatch.errors import FormatError
from hawkwatch.formats.allocations import read_allocations
from hawkwatch.formats.msl import detect_layout, replay
from hawkwatch.formats.msl_folder import read_msl_folder, replay_allocations
from hawkwatch.formats.msl_table import parse_nodes, parse_serialized, parse_table
from hawkwatch.model.allocations import LiveAllocations
from tests.formats.memory_artifacts import MslTableWriter, Process, scenario

LAYOUTS = ["msl-framework-64", "msl-166-64", "msl-framework-32", "msl-166-32"]
INDEX_NAME = "stack-logs.426.1016bc000.MallocStackLoggingDemo.Kplvj1.index"


def observed(live: LiveAllocations) -> dict:
    out = {}
    for group in live.groups:
        frames = tuple(frame.address for frame in live.stacks.stack(group.stack_id))
        out[(frames, group.category)] = (group.bytes, group.count)
    return out


def make_process(layout: str) -> Process:
    if layout.startswith("msl-166"):
        # libmalloc 166 full mode: pthread_self()+1 as the coldest frame, 64-bit parents
        return Process(layout, MslTableWriter("full166"), thread_frame=0x16F603001)
    return Process(layout, MslTableWriter("framework"))


@pytest.fixture(params=LAYOUTS)
def logged(request, tmp_path):
    process = make_process(request.param)
    snapshots = scenario(process)
    (tmp_path / INDEX_NAME).write_bytes(process.index_bytes())
    (tmp_path / "mytable").write_bytes(process.table.serialized())
    return request.param, process, snapshots, tmp_path


def test_every_layout_is_detected_and_replayed_to_the_live_allocations(logged):
    layout, process, snapshots, folder = logged
    parsed = read_msl_folder(folder)
    live = parsed.value
    assert live.source == layout
    assert observed(live) == snapshots[-1]
    assert live.position == len(process.records)
    assert parsed.skipped == []
    assert any(layout.split("-")[1] in note or "detected" in note for note in live.notes)
    assert live.metadata["pid"] == "426"
    if layout.startswith("msl-framework"):
        assert live.time_s == pytest.approx(7 * len(process.records) / 1e6)


def test_time_travel_gives_what_was_live_at_every_record(logged):
    _layout, process, snapshots, folder = logged
    for at in range(len(process.records) + 1):
        assert observed(read_msl_folder(folder, at=at).value) == snapshots[at], at


def test_sizes_and_vm_split_are_exact(logged):
    _layout, _process, snapshots, folder = logged
    final = snapshots[-1]
    live = read_allocations(folder).value
    iosurface = [v for (frames, cat), v in final.items() if cat == "VM: IOSURFACE"]
    assert iosurface == [(0x100000 - 0x10000, 2)]  # split in two by the partial unmap
    assert live.total_bytes == sum(b for b, _ in final.values())
    assert not any(cat == "VM: mapped file" for _f, cat in observed(live))


def test_chunked_pairing_equals_one_pass(monkeypatch, logged):
    _layout, _process, snapshots, folder = logged
    monkeypatch.setattr("hawkwatch.formats.msl.CHUNK_RECORDS", 2)
    assert observed(read_msl_folder(folder).value) == snapshots[-1]


def test_a_log_without_its_table_keeps_sizes_and_says_why(logged):
    _layout, _process, snapshots, folder = logged
    (folder / "mytable").unlink()
    live = read_msl_folder(folder).value
    assert live.total_bytes == sum(b for b, _ in snapshots[-1].values())
    assert "no uniquing table: stacks unknown" in live.notes


def test_truncated_index_keeps_whole_records_and_notes_the_rest(logged):
    _layout, process, snapshots, folder = logged
    index = folder / INDEX_NAME
    data = index.read_bytes()
    size = len(process.records[0])
    index.write_bytes(data[: 6 * size + 5])
    live = read_msl_folder(folder).value
    assert observed(live) == snapshots[6]
    assert any("5 trailing bytes" in note for note in live.notes)


def test_corrupt_records_are_skipped_and_counted(logged):
    _layout, process, snapshots, folder = logged
    index = folder / INDEX_NAME
    data = bytearray(index.read_bytes())
    size = len(process.records[0])
    # record 4 (realloc's free of the 2000-byte block) gets an impossible type
    record = bytearray(process.records[4])
    if len(record) in (24, 16) and not _layout.startswith("msl-framework"):
        record[-1] = 0x03  # type byte 3: alloc|generic is never logged
    else:
        record[-8:-4] = (3).to_bytes(4, "little")
    data[4 * size : 5 * size] = record
    index.write_bytes(bytes(data))
    parsed = read_msl_folder(folder)
    assert parsed.skipped and "first: record 4" in parsed.skipped[0].reason
    # without its free, the realloc's source block stays live
    expected = snapshots[-1]
    assert parsed.value.total_count == sum(n for _b, n in expected.values()) + 1
    assert parsed.value.total_bytes == sum(b for b, _n in expected.values()) + 2000


def test_lite_table_alone_gives_live_bytes_per_stack(tmp_path):
    table = MslTableWriter("lite")
    a, b = [0x100004F10, 0x100003A2C, 0x1A0001000], [0x100005004, 0x100003A2C, 0x1A0001000]
    table.add(a, 1000)
    table.add(a, 3000)
    table.add(b, 500)
    table.add(b[1:], 64)  # a stack that is a prefix of others
    stack_c = table.add([0x100006008, 0x1A0001000], 70)
    table.release(stack_c, 70)  # freed again: zeroed nodes
    (tmp_path / "mytable").write_bytes(table.serialized())
    live = read_msl_folder(tmp_path).value
    assert live.source == "msl-lite-table"
    assert observed(live) == {
        (tuple(a), "malloc"): (4000, 0),
        (tuple(b), "malloc"): (500, 0),
        (tuple(b[1:]), "malloc"): (64, 0),
    }


def test_raw_and_serialized_tables_unwind_alike():
    table = MslTableWriter("framework")
    frames = [0x100004F10 + 4 * i for i in range(40)]
    stack = table.add(frames)
    raw = parse_nodes(table.node_bytes())
    serialized = parse_serialized(table.serialized())
    assert raw.unwind(stack) == serialized.unwind(stack) == frames
    full = MslTableWriter("full166")
    stack = full.add([*frames, 0x16F603001])
    assert parse_table(full.serialized()).unwind(stack) == frames  # thread frame dropped


def test_layout_detection_on_a_real_mix():
    process = make_process("msl-framework-32")
    scenario(process)
    layout, score = detect_layout(process.index_bytes())
    assert (layout, score) == ("msl-framework-32", 1.0)


def test_not_an_index_is_a_format_error():
    with pytest.raises(FormatError, match="no record layout fits"):
        replay(bytes(range(256)) * 8)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=600), layout=st.sampled_from([None, *LAYOUTS]))
def test_arbitrary_bytes_replay_or_format_error(data, layout):
    try:
        state = replay(data, layout=layout)
    except FormatError:
        return
    assert state.records * state.record_size + state.trailing_bytes == len(data)
    replay_allocations(state, None)


@settings(max_examples=100, deadline=None)
@given(cut=st.integers(0, 2000), flips=st.lists(st.integers(0, 1 << 20), max_size=8))
def test_truncated_or_bit_flipped_tables_never_raise_other_errors(cut, flips):
    table = MslTableWriter("framework", num_pages=1)
    for i in range(30):
        table.add([0x100004F10 + 16 * i, 0x100003A2C, 0x1A0001000])
    data = bytearray(table.serialized())
    for flip in flips:
        data[flip % len(data)] ^= 1 << (flip % 8)
    data = bytes(data[: 0x4000 + cut * 8])
    try:
        parsed = parse_table(data)
    except FormatError:
        return
    for stack_id in range(0, len(parsed), 7):
        assert len(parsed.unwind(stack_id)) <= 512


def test_replay_columns_are_numpy(logged):
    _layout, _process, _snapshots, folder = logged
    state = replay((folder / INDEX_NAME).read_bytes())
    assert state.malloc_address.dtype == np.uint64
    assert state.malloc_record.dtype == np.int64
    assert len(state.malloc_address) == len(state.malloc_size) == len(state.malloc_record) == 3


def test_addresses_spread_wider_than_2_46_take_the_stable_sort_path(tmp_path):
    process = make_process("msl-framework-64")
    high, frames = 0x7FFF00000000_0000 >> 8, (0x100004F10, 0x1A0001000)
    process.alloc(0x10000, 77, frames)
    for index in range(5):
        process.alloc(high + 0x100 * index, 10 + index, frames)
    process.free(high + 0x100, frames)
    process.realloc(high + 0x200, high + 0x300, 99, frames)  # 0x300 was live: replaced
    (tmp_path / INDEX_NAME).write_bytes(process.index_bytes())
    (tmp_path / "mytable").write_bytes(process.table.serialized())
    assert (high - 0x10000) >> 50
    assert observed(read_msl_folder(tmp_path).value) == process.history[-1]
