"""The shared live-allocation model with Python frames (the Python memory issue's side) and
native frames: uniquing, growth between snapshots, call trees of live bytes."""

from __future__ import annotations

import io

import pytest

from hawkwatch.formats import collapsed
from hawkwatch.model.allocations import (
    Group,
    LiveAllocations,
    NativeFrame,
    call_tree,
    growth,
    map_frames,
    merge_groups,
    with_image_names,
)
from hawkwatch.model.crash import CrashImage
from hawkwatch.model.stack import PyFrame, UniquingTable

LOAD = PyFrame("load", "app/cache.py", 12, "app.cache")
HANDLE = PyFrame("handle", "app/views.py", 40, "app.views")
MAIN = PyFrame("main", "app/main.py", 3, "app.main")


def test_uniquing_table_shares_tails_and_round_trips():
    table: UniquingTable = UniquingTable()
    a = table.add([LOAD, HANDLE, MAIN])
    b = table.add([HANDLE, MAIN])
    assert table.add([LOAD, HANDLE, MAIN]) == a
    assert table.stack(a) == (LOAD, HANDLE, MAIN)
    assert table.stack(b) == (HANDLE, MAIN)
    assert len(table) == 3 and len(table.frames) == 3  # b is a's parent node
    assert table.add([]) == -1 and table.stack(-1) == ()


def test_growth_between_snapshots_of_one_table():
    table: UniquingTable = UniquingTable()
    leak, churn = table.add([LOAD, HANDLE, MAIN]), table.add([HANDLE, MAIN])
    before = LiveAllocations("tracemalloc", table, (Group(leak, "python", 1000, 10),
                                                      Group(churn, "python", 500, 5)))  # fmt: skip
    after = LiveAllocations("tracemalloc", table, (Group(leak, "python", 5000, 50),))
    changes = growth(before, after)
    assert [(g.stack_id, g.bytes_delta, g.count_delta) for g in changes] == [
        (leak, 4000, 40),
        (churn, -500, -5),
    ]
    other = LiveAllocations("tracemalloc", UniquingTable(), ())
    with pytest.raises(ValueError, match="different stack tables"):
        growth(before, other)


def test_merge_groups_sums_equal_keys_largest_first():
    merged = merge_groups([Group(1, "a", 10, 1), Group(2, "a", 30, 1), Group(1, "a", 5, 2)])
    assert merged == (Group(2, "a", 30, 1), Group(1, "a", 15, 3))


def test_call_tree_weighs_live_bytes_and_exports_collapsed():
    table: UniquingTable = UniquingTable()
    a = table.add([LOAD, HANDLE, MAIN])
    b = table.add([HANDLE, MAIN])
    live = LiveAllocations("tracemalloc", table, (Group(a, "x", 300, 3), Group(b, "y", 100, 7)))
    tree = call_tree(live)
    assert tree.total == 400
    out = io.StringIO()
    collapsed.render(tree, out)
    assert out.getvalue().splitlines() == [
        "main (app/main.py:3);handle (app/views.py:40) 100",
        "main (app/main.py:3);handle (app/views.py:40);load (app/cache.py:12) 300",
    ]
    assert call_tree(live, weight="count").total == 10


def test_native_frames_get_image_names_and_can_expand_to_inlined_frames():
    table: UniquingTable = UniquingTable()
    stack = table.add([NativeFrame(0x104A04F10), NativeFrame(0x1A0001000), NativeFrame(0x50)])
    images = (CrashImage("Demo", 0x104A00000, 0x104A07FFF), CrashImage("libc", 0x1A0000000))
    live = LiveAllocations("x", table, (Group(stack, "malloc", 64, 1),), images=images)
    named = with_image_names(live)
    frames = named.stacks.stack(named.groups[0].stack_id)
    assert [f.image for f in frames] == ["Demo", "libc", ""]

    def expand(frame):
        if frame.address == 0x104A04F10:
            return (frame._replace(symbol="inner", inlined=True), frame._replace(symbol="outer"))
        return (frame,)

    expanded = map_frames(named, expand)
    frames = expanded.stacks.stack(expanded.groups[0].stack_id)
    assert [f.symbol for f in frames] == ["inner", "outer", "", ""]
    assert frames[0].label == "inner (Demo)"
    assert frames[3].label == "0x50"
