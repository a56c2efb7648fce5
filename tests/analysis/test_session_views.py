"""The report's drawable views: bounded series, pruned flame graph, waterfall, stall stacks."""

from __future__ import annotations

from hawkwatch.analysis.series import Sample
from hawkwatch.analysis.session_report import build_session_report
from hawkwatch.analysis.session_views import build_flame, build_timeline, build_waterfall
from hawkwatch.model import collections as c
from hawkwatch.model.profile import CallNode, CallTree
from hawkwatch.model.records import Anr, NetworkTransaction, Phases
from hawkwatch.model.records.stall import AnrPoint, AnrSample, PointFrame, StackFrame
from hawkwatch.model.session_views import MAX_MARKS, MAX_SERIES_POINTS
from hawkwatch.model.stack import PyFrame
from tests.builders import launch_time_record, series_records

T0 = 1_700_000_000.0


def timeline(**overrides):
    fields = dict(start=T0, end=T0 + 100, series=[], anr=[], pauses=[], spans=[], events=[],
                  crashes=[], exit_time=None)  # fmt: skip
    fields.update(overrides)
    return build_timeline(**fields)


def test_long_series_are_downsampled_and_keep_their_peak() -> None:
    samples = [Sample(T0 + i * 0.01, float(i % 97)) for i in range(50_000)]
    samples[31_337] = Sample(samples[31_337].time, 5000.0)

    drawn = timeline(series=[("r-mem", "memory footprint", "MB", samples)]).series[0]

    assert len(drawn.values) <= MAX_SERIES_POINTS
    assert drawn.count == 50_000
    assert max(drawn.values) == 5000.0
    assert min(drawn.values) == 0.0
    assert list(drawn.offsets_s) == sorted(drawn.offsets_s)


def test_short_series_are_kept_whole_as_offsets() -> None:
    samples = [Sample(T0 + 1, 10.0), Sample(T0 + 2.5, 12.0)]

    drawn = timeline(series=[("cpu", "CPU", "%", samples)]).series[0]

    assert (drawn.offsets_s, drawn.values) == ((1.0, 2.5), (10.0, 12.0))


def anr(start: float, duration: float, **fields) -> tuple[str, Anr]:
    value = Anr(duration=duration, start_from=start, in_background=False, **fields)
    return f"{start:.6f}_0", value


def test_stalls_carry_their_blocking_stack_and_back_offs_borrow_it() -> None:
    frames = (PointFrame("sleep", "/app/a.py", 3, 5), PointFrame("main", "/app/a.py", 9, 5))
    full = anr(T0 + 1, 800.0, stacks=(), point=AnrPoint(0, frames, 0, 5), thread="MainThread")
    backoff = anr(T0 + 5, 300.0, stacks=(), repeat_of=full[0])

    marks = timeline(anr=[full, backoff]).stalls

    assert [m.offset_s for m in marks] == [1.0, 5.0]
    assert marks[0].stack == ("sleep (/app/a.py:3)", "main (/app/a.py:9)")
    assert marks[0].frame == "sleep (/app/a.py:3)"
    assert marks[1].stack == marks[0].stack
    assert marks[0].thread == "MainThread"


def test_stalls_without_a_point_stack_use_their_samples() -> None:
    stack = (StackFrame("work", "/b.py", 4), StackFrame("run", "/b.py", 1))
    sample = AnrSample(time=T0 + 1, frames=stack, titleframe=0)
    marks = timeline(anr=[anr(T0 + 1, 500.0, stacks=(sample,))]).stalls

    assert marks[0].stack == ("work (/b.py:4)", "run (/b.py:1)")
    assert marks[0].blocking == 0


def test_only_the_longest_marks_are_kept_in_time_order() -> None:
    many = [anr(T0 + i, float(i), stacks=()) for i in range(1, MAX_MARKS + 101)]

    drawn = timeline(anr=many)

    assert drawn.stalls_total == MAX_MARKS + 100
    assert len(drawn.stalls) == MAX_MARKS
    assert min(m.duration_ms for m in drawn.stalls) == 101.0
    assert [m.offset_s for m in drawn.stalls] == sorted(m.offset_s for m in drawn.stalls)


def node(name: str, count: int, *children: CallNode) -> CallNode:
    return CallNode(PyFrame(name, "/app/x.py", 1), count, children)


def test_flame_graph_is_preorder_with_parents_and_prunes_tiny_subtrees() -> None:
    hot = node("hot", 9_000, node("leaf", 8_000))
    tiny = node("tiny", 5, node("tinier", 5))
    tree = CallTree((node("main", 10_000, hot, node("cold", 995), tiny),))

    flame = build_flame(tree)

    assert flame is not None
    assert flame.total == 10_000
    labels = [flame.frames[frame] for _, frame, _ in flame.nodes]
    assert labels == ["main (/app/x.py:1)", "hot (/app/x.py:1)", "leaf (/app/x.py:1)",
                      "cold (/app/x.py:1)"]  # fmt: skip
    assert [parent for parent, _, _ in flame.nodes] == [-1, 0, 1, 0]
    assert [count for _, _, count in flame.nodes] == [10_000, 9_000, 8_000, 995]
    assert flame.pruned == 1  # "tiny" and its child: under 0.1 % of the samples


def test_an_empty_tree_has_no_flame_graph() -> None:
    assert build_flame(CallTree(())) is None


def test_waterfall_lists_requests_in_start_order_with_their_phases() -> None:
    def request(start: float, index: int, **fields) -> NetworkTransaction:
        return NetworkTransaction(start=start, index=index, method="GET", url="http://h/x",
                                  host="h", library="urllib", **fields)  # fmt: skip

    late = request(T0 + 2, 1, status=200, phases_ms=Phases(dns=1.0, tcp=2.0, ttfb=30.0,
                                                           receive=4.0, total=37.0))  # fmt: skip
    early = request(T0 + 1, 0, error="refused", failed_phase="connect")

    waterfall = build_waterfall([late, early], T0)

    assert waterfall is not None
    assert [bar.offset_s for bar in waterfall.requests] == [1.0, 2.0]
    bar = waterfall.requests[1]
    assert (bar.dns_ms, bar.connect_ms, bar.ttfb_ms, bar.receive_ms, bar.total_ms) == (
        1.0, 2.0, 30.0, 4.0, 37.0)  # fmt: skip
    assert (waterfall.total, waterfall.failed) == (2, 1)
    assert build_waterfall([], T0) is None


def test_session_report_fills_the_views_from_records() -> None:
    records = [launch_time_record(T0), *series_records(c.CPU, (T0 + 1, 10), (T0 + 3, 50))]
    first, second = anr(T0 + 2, 400.0, stacks=(), point=AnrPoint(
        0, (PointFrame("f", "/a.py", 1, 2),), 0, 2))  # fmt: skip
    records.append(second.to_record(first))
    records.append(NetworkTransaction(start=T0 + 1.5, method="GET", url="http://h/", host="h",
                                      library="urllib", status=200).to_record())  # fmt: skip

    report = build_session_report(records, {}, name="s")

    assert report.timeline is not None
    assert report.timeline.duration_s == 3.0
    assert [s.collection for s in report.timeline.series] == ["cpu"]
    assert [m.frame for m in report.timeline.stalls] == ["f (/a.py:1)"]
    assert report.network is not None and report.network.requests[0].offset_s == 1.5
    assert report.flame is None  # no profiler windows in these records


def test_a_stack_deeper_than_pythons_recursion_limit_is_drawn_whole() -> None:
    deepest = node("leaf", 10)
    for depth in range(3_000):
        deepest = CallNode(PyFrame(f"f{depth}", "/app/deep.py", depth), 10, (deepest,))

    flame = build_flame(CallTree((deepest,)))

    assert flame is not None
    assert len(flame.nodes) == 3_001
    assert flame.nodes[-1] == (2_999, 3_000, 10)  # each node's parent is the one before
