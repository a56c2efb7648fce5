"""The allocation report's listing rules (Matrix, MTHawkeye) and caller choice."""

from __future__ import annotations

from hawkwatch.analysis.allocations import app_image_names, build_allocation_report
from hawkwatch.model.allocation_report import KIB, MIB, ReportRules
from hawkwatch.model.allocations import Group, LiveAllocations, NativeFrame
from hawkwatch.model.crash import CrashImage
from hawkwatch.model.stack import UniquingTable

APP = "/private/var/containers/Bundle/Application/X/Demo.app/Demo"
IMAGES = (
    CrashImage("Demo", 0x100000000, path=APP),
    CrashImage("libswiftCore.dylib", 0x101000000,
               path="/private/var/containers/Bundle/Application/X/Demo.app/Frameworks/"
               "libswiftCore.dylib"),
    CrashImage("libsystem_malloc.dylib", 0x1A0000000,
               path="/usr/lib/system/libsystem_malloc.dylib"),
)  # fmt: skip


def test_app_images_are_the_bundle_minus_swift_runtime():
    assert app_image_names(IMAGES, APP) == {"Demo"}
    assert app_image_names(IMAGES, None) == {"Demo"}  # MTHawkeye's /private/var/ rule


def _live(groups_spec):
    table: UniquingTable = UniquingTable()
    groups = []
    for index, (category, size, count) in enumerate(groups_spec):
        stack = table.add(
            [NativeFrame(0x1A0000100, "libsystem_malloc.dylib"),
             NativeFrame(0x100000400 + 4 * index, "Demo"), NativeFrame(0x100000010, "Demo")]
        )  # fmt: skip
        groups.append(Group(stack, category, size, count))
    return LiveAllocations("test", table, tuple(groups), images=IMAGES, process_path=APP)


def test_categories_and_stacks_follow_matrix_rules():
    spec = [("small", 10 * KIB, 1)] * 12  # one category, twelve small stacks
    spec += [("big", 200 * KIB, 1)] * 12  # twelve stacks ≥ 128 KiB: all listed
    spec += [(f"tiny{i}", 100, 1) for i in range(20)]  # twenty tiny categories
    report = build_allocation_report(_live(spec))
    names = [category.name for category in report.categories]
    assert names[:2] == ["big", "small"]
    assert len(names) == 15  # the rest of the 22 categories are < 1 MiB and past rank 15
    big, small = report.categories[0], report.categories[1]
    assert len(big.stacks) == 12 and big.stack_count == 12
    assert len(small.stacks) == 10 and small.stack_count == 12  # top 10 of small stacks
    assert report.category_count == 22


def test_large_categories_are_listed_past_rank_15():
    spec = [(f"c{i}", 2 * MIB, 1) for i in range(20)]
    assert len(build_allocation_report(_live(spec)).categories) == 20


def test_thresholds_and_caller():
    live = _live([("malloc", 512_000, 3), ("VM: IOSURFACE", 600_000, 1), ("malloc", 1000, 40)])
    report = build_allocation_report(live, ReportRules(top=2))
    flags = {(s.bytes, s.over_threshold) for c in report.categories for s in c.stacks}
    assert flags == {(512_000, True), (600_000, False), (1000, False)}  # VM needs 1 MiB
    stack = report.categories[0].stacks[0]
    assert stack.caller == stack.frames[1]  # first frame in the app's own image
    assert [s.count for s in report.top_by_count] == [40, 3]
    assert report.total_live_bytes == 1_113_000 and report.live_count == 44
