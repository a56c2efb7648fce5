"""build_session_report: records and metadata in, a SessionReport out — no files involved."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hawkwatch.analysis.session_report import build_session_report
from hawkwatch.model import Record
from hawkwatch.model import collections as c
from hawkwatch.model.report import CollectionCount, Finding, MetadataEntry
from tests.builders import (
    event_record,
    exit_state_record,
    gc_pause_record,
    hawkwatch_error_record,
    hawkwatch_launch_record,
    import_record,
    launch_time_record,
    mthawkeye_launch_record,
    series_records,
    span_record,
    time_key,
)

T0 = 1_700_000_000.0


def build(records, metadata=None, **options):
    return build_session_report(records, metadata or {}, name="s", **options)


# -- resources --------------------------------------------------------------------------------


def test_series_statistics_are_weighted_by_how_long_each_sample_held():
    # cpu is 10 % for 1 s, 20 % for 2 s, 50 % for the last 1 s (the session ends at T0+4).
    records = [
        launch_time_record(T0),
        *series_records(c.CPU, (T0, 10), (T0 + 1, 20), (T0 + 3, 50)),
        event_record(T0 + 4, "App::Exit"),
    ]

    report = build(records, chart_points=4)

    (cpu,) = report.resources
    assert (cpu.collection, cpu.label, cpu.unit, cpu.count) == (c.CPU, "CPU", "%", 3)
    assert (cpu.min, cpu.max, cpu.last) == (10.0, 50.0, 50.0)
    assert cpu.mean == pytest.approx(25.0)  # (10·1 + 20·2 + 50·1) / 4; per sample it'd be 26.7
    assert cpu.p95 == 50.0
    assert cpu.points == pytest.approx((10.0, 20.0, 20.0, 50.0))
    assert (cpu.first_time, cpu.last_time, cpu.first_offset_s) == (T0, T0 + 3, 0.0)


def test_a_short_spike_does_not_make_the_time_weighted_p95():
    # 100 MB for 19 s, then 200 MB for 1 s: a per-sample p95 would say 200.
    records = [
        launch_time_record(T0),
        *series_records(c.RESIDENT_FOOTPRINT, (T0, 100), (T0 + 19, 200)),
        event_record(T0 + 20, "App::Exit"),
    ]

    (footprint,) = build(records).resources

    assert footprint.p95 == 100.0
    assert footprint.mean == pytest.approx(105.0)
    assert footprint.max == 200.0


def test_samples_are_put_in_time_order_and_series_in_report_order():
    records = [
        *series_records(c.THREADS_COUNT, (T0 + 2, 4), (T0 + 1, 2)),
        *series_records(c.MEMORY_RESIDENT, (T0 + 1, 50)),
        *series_records(c.FPS, (T0 + 1, 60)),
    ]

    report = build(records)

    assert [s.collection for s in report.resources] == [c.MEMORY_RESIDENT, c.THREADS_COUNT, c.FPS]
    threads = report.resources[1]
    assert (threads.first_time, threads.last) == (T0 + 1, 4.0)
    assert threads.mean == pytest.approx(2.0)  # 2 held 1 s; 4 held 0 s (it is the end)


# -- malformed input --------------------------------------------------------------------------


def test_malformed_values_are_skipped_and_counted_not_raised():
    records = [
        Record(c.LAUNCH_TIME, "soon", "soon"),
        launch_time_record(T0),
        *series_records(c.CPU, (T0 + 1, 30)),
        Record(c.CPU, time_key(T0 + 2), "busy"),
        Record(c.CPU, time_key(T0 + 3), "nan"),
        Record(c.CPU, "yesterday", "10.0"),
        Record(c.CPU, time_key(T0 + 4), "also busy"),
        Record(c.CUSTOM_SPAN, time_key(T0), "{not json"),
        Record(c.CUSTOM_SPAN, time_key(T0), '{"name": "x"}'),
        Record(c.GC_PAUSE, time_key(T0), '{"duration_ms": 3}'),
        Record(c.CUSTOM_TIME_EVENT, time_key(T0), "[1, 2]"),
        Record(c.APP_LAUNCH, "0", "{}"),
        Record(c.EXIT_STATE, time_key(T0), '{"clean": "yes"}'),
        Record(c.IMPORT_TIME, "json", '{"cumulative_us": true}'),
    ]

    report = build(records)

    assert report.findings == (
        Finding(c.APP_LAUNCH, "not a hawkwatch or MTHawkeye app-launch value", 1, "0"),
        Finding(c.CPU, "key is not a number", 1, "yesterday"),
        Finding(c.CPU, "value is not a finite number", 1, time_key(T0 + 3)),
        Finding(c.CPU, "value is not a number", 2, time_key(T0 + 2)),
        Finding(c.CUSTOM_SPAN, "Object missing required field `duration_ms`", 1, time_key(T0)),
        Finding(c.CUSTOM_SPAN, "value is not JSON", 1, time_key(T0)),
        Finding(c.CUSTOM_TIME_EVENT, "value is not a JSON object", 1, time_key(T0)),
        Finding(c.EXIT_STATE, "Expected `bool`, got `str` - at `$.clean`", 1, time_key(T0)),
        Finding(c.GC_PAUSE, "Object missing required field `generation`", 1, time_key(T0)),
        Finding(c.IMPORT_TIME, "Expected `int`, got `bool` - at `$.cumulative_us`", 1, "json"),
        Finding(c.LAUNCH_TIME, "key is not a number", 1, "soon"),
    )
    assert report.session.start_time == T0  # from the next launch-time record
    (cpu,) = report.resources
    assert cpu.count == 1
    assert (report.launch, report.spans, report.gc, report.imports, report.exit) == (None,) * 5
    assert report.events == ()


@given(
    st.lists(
        st.builds(
            Record,
            st.sampled_from(
                [
                    *c.RESOURCE_SERIES,
                    c.FPS,
                    c.APP_LAUNCH,
                    c.CUSTOM_TIME_EVENT,
                    c.CUSTOM_SPAN,
                    c.GC_PAUSE,
                    c.IMPORT_TIME,
                    c.EXIT_STATE,
                    c.HAWKWATCH_ERROR,
                    c.LAUNCH_TIME,
                    "anr",
                ]
            ),
            st.one_of(st.text(max_size=12), st.floats().map(repr)),
            st.one_of(
                st.text(max_size=40),
                st.floats().map(repr),
                st.recursive(
                    st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=5),
                    lambda inner: (
                        st.lists(inner, max_size=3)
                        | st.dictionaries(
                            st.sampled_from(
                                [
                                    "time",
                                    "event",
                                    "name",
                                    "start",
                                    "duration_ms",
                                    "generation",
                                    "clean",
                                    "cumulative_us",
                                    "ready",
                                    "process_start",
                                    "appLaunchTime",
                                    "extra",
                                ]
                            ),
                            inner,
                            max_size=4,
                        )
                    ),
                    max_leaves=8,
                ).map(lambda v: __import__("json").dumps(v)),
            ),
        ),
        max_size=30,
    )
)
def test_any_records_give_a_report_and_every_record_is_used_or_counted(records):
    report = build(records, max_events=1000, max_rows=1000)

    used = (
        sum(s.count for s in report.resources)
        + report.events_total
        + (report.spans.count if report.spans else 0)
        + (report.gc.count if report.gc else 0)
        + (report.imports.count if report.imports else 0)
        + report.errors_total
        + sum(o.count for o in report.other_collections)
    )
    skipped = sum(f.count for f in report.findings)
    # launch-time, app-launch and exit-state records: only one of each is used
    singles = sum(r.collection in (c.LAUNCH_TIME, c.APP_LAUNCH, c.EXIT_STATE) for r in records)
    assert used + skipped <= len(records) <= used + skipped + singles
    assert report.session.record_count == len(records)
    for stats in report.resources:
        assert stats.min <= stats.mean <= stats.max or math.isclose(stats.mean, stats.min)
        assert stats.min <= stats.p95 <= stats.max


def test_each_bad_part_of_one_stall_is_counted_on_its_own():
    # Two parts of the same stall (same key before "_"), neither usable: two findings, not one
    # (the property above once flaked when parts were grouped before they were checked).
    records = [
        Record(c.ANR, "5.000000_0", '{"duration": "long"}'),
        Record(c.ANR, "5.000000_1", "[]"),
        Record(c.ANR, "5.000000_2", '{"duration": 1, "startFrom": 5, "stacks": []}'),
    ]

    report = build(records)

    assert report.findings == (
        Finding(c.ANR, "Expected `float`, got `str` - at `$.duration`", 1, "5.000000_0"),
        Finding(c.ANR, "value is not a JSON object", 1, "5.000000_1"),
    )
    assert report.stalls is not None
    assert (report.stalls.count, report.stalls.total_ms) == (1, 1.0)


def test_cpu_records_that_do_not_decode_are_findings_and_not_other_collections():
    records = [
        Record(c.CPU_HIGHLOAD, "1.000000", '{"start":"1.00","lasting":"61","average":"90"}'),
        Record(c.CPU_HIGHLOAD, "2.000000", '{"start":"2.00","lasting":"soon","average":"90"}'),
        Record("view-ctrl", "0", '{"name":"VC"}'),
    ]

    report = build(records)

    assert report.other_collections == (
        CollectionCount(c.CPU_HIGHLOAD, 1),
        CollectionCount("view-ctrl", 1),
    )
    assert report.findings == (
        Finding(c.CPU_HIGHLOAD, "Expected `float`, got `str` - at `$.lasting`", 1, "2.000000"),
    )


# -- launch -----------------------------------------------------------------------------------


def test_hawkwatch_launch_phases_with_offsets_and_steps():
    records = [
        launch_time_record(T0),
        hawkwatch_launch_record(process_start=T0, interpreter_ready=T0 + 0.04),
        hawkwatch_launch_record(
            process_start=T0,
            interpreter_ready=T0 + 0.04,
            agent_started=T0 + 0.05,
            main_started=T0 + 0.125,
            ready=T0 + 0.5,
            duration_s=0.5,
        ),
    ]

    launch = build(records).launch

    assert launch is not None  # the last record wins
    assert (launch.layout, launch.origin_time, launch.end_label) == ("hawkwatch", T0, "ready")
    assert launch.duration_ms == pytest.approx(500)
    assert [p.label for p in launch.phases] == [
        "process start",
        "interpreter ready",
        "agent started",
        "main started",
        "ready",
    ]
    assert [p.offset_ms for p in launch.phases] == pytest.approx([0, 40, 50, 125, 500], abs=1e-3)
    assert [p.delta_ms for p in launch.phases] == pytest.approx([0, 40, 10, 75, 375], abs=1e-3)
    assert launch.not_captured == ()


def test_launch_not_ready_yet_has_no_duration_and_says_what_is_missing():
    records = [
        launch_time_record(T0),
        hawkwatch_launch_record(interpreter_ready=T0 + 0.04, main_started=T0 + 0.1),
    ]

    launch = build(records).launch

    assert launch is not None
    assert launch.origin_time == T0  # process_start not captured: the session start
    assert launch.duration_ms is None
    assert launch.not_captured == ("process start", "agent started", "ready")
    assert [p.offset_ms for p in launch.phases] == pytest.approx([40, 100], abs=1e-3)


def test_mthawkeye_launch_fields_in_time_order():
    start = 1554251562.052403
    records = [
        mthawkeye_launch_record(
            appLaunchTime=start,
            firstObjcLoadStartTime=start + 0.20,
            lastObjcLoadEndTime=start + 0.25,
            staticInitializerStartTime=start + 0.10,  # before the first +load
            staticInitializerEndTime=start + 0.15,
            applicationInitTime=0,
            appDidLaunchEnterTime=start + 0.40,
            appDidLaunchExitTime=start + 0.90,
        )
    ]

    launch = build(records).launch

    assert launch is not None
    assert (launch.layout, launch.origin_time) == ("mthawkeye", start)
    assert launch.end_label == "didFinishLaunching end"
    assert launch.duration_ms == pytest.approx(900, abs=1e-3)
    assert [p.name for p in launch.phases] == [
        "appLaunchTime",
        "staticInitializerStartTime",
        "staticInitializerEndTime",
        "firstObjcLoadStartTime",
        "lastObjcLoadEndTime",
        "appDidLaunchEnterTime",
        "appDidLaunchExitTime",
    ]
    assert [p.delta_ms for p in launch.phases] == pytest.approx(
        [0, 100, 50, 50, 50, 150, 500], abs=1e-3
    )
    assert launch.not_captured == ("UIApplication init",)


def test_an_app_launch_with_a_field_that_is_not_a_number_is_left_out_and_counted():
    records = [
        hawkwatch_launch_record(process_start=T0, main_started=T0 + 0.2),
        hawkwatch_launch_record(process_start=T0, ready="soon"),
    ]

    report = build(records)

    assert report.launch is not None  # the last record that decodes
    assert [p.name for p in report.launch.phases] == ["process_start", "main_started"]
    assert report.findings == (
        Finding(c.APP_LAUNCH, "Expected `float | null`, got `str` - at `$.ready`", 1, "0"),
    )


# -- events, spans, GC, imports, exit, errors ----------------------------------------------------


def test_events_in_time_order_with_offsets_capped_with_the_total():
    records = [
        launch_time_record(T0),
        event_record(T0 + 9, "App::Exit", '{"exit_code": 0}'),
        event_record(T0 + 0.5, "App::Start"),
        *(event_record(T0 + 1 + i / 100, f"tick {i}") for i in range(60)),
        event_record(T0 + 2, None),
    ]

    report = build(records, max_events=50)

    assert report.events_total == 63
    assert len(report.events) == 50
    assert report.events[0].name == "App::Start"
    assert report.events[0].offset_s == pytest.approx(0.5)
    assert [e.time for e in report.events] == sorted(e.time for e in report.events)
    full = build(records, max_events=100).events
    assert (full[-1].name, full[-1].extra) == ("App::Exit", '{"exit_code": 0}')
    assert full[-2].name == ""  # MTHawkeye's "event" is optional


def test_spans_grouped_by_name_with_the_slowest_listed():
    records = [
        launch_time_record(T0),
        span_record(T0 + 1, "query", 10),
        span_record(T0 + 2, "query", 30, error="TimeoutError"),
        span_record(T0 + 3, "query", 20),
        span_record(T0 + 4, "render", 100, thread="worker"),
        span_record(T0 + 5, "tiny", 1),
    ]

    spans = build(records, max_rows=2).spans

    assert spans is not None
    assert (spans.count, spans.group_count) == (5, 3)
    render, query = spans.groups  # largest total first, capped at max_rows
    assert (render.name, render.count, render.total_ms) == ("render", 1, 100)
    assert (query.name, query.count, query.error_count) == ("query", 3, 1)
    assert (query.total_ms, query.mean_ms, query.p95_ms, query.max_ms) == (60, 20, 30, 30)
    assert [(s.name, s.duration_ms) for s in spans.slowest] == [("render", 100), ("query", 30)]
    assert spans.slowest[0].thread == "worker"
    assert spans.slowest[1].error == "TimeoutError"
    assert spans.slowest[1].offset_s == pytest.approx(2)


def test_gc_pauses_by_generation_and_worst():
    records = [
        gc_pause_record(T0 + 1, 0, 11.0),
        gc_pause_record(T0 + 2, 2, 40.5, collected=900),
        gc_pause_record(T0 + 3, 0, 12.0),
    ]

    gc = build(records, max_rows=2).gc

    assert gc is not None
    assert (gc.count, gc.total_ms, gc.max_ms) == (3, 63.5, 40.5)
    assert [(g.generation, g.count, g.total_ms, g.max_ms) for g in gc.by_generation] == [
        (0, 2, 23.0, 12.0),
        (2, 1, 40.5, 40.5),
    ]
    assert [(p.generation, p.duration_ms, p.collected) for p in gc.worst] == [
        (2, 40.5, 900),
        (0, 12.0, 0),
    ]


def test_imports_top_by_cumulative_time_with_self_time():
    records = [
        import_record("json", 2_000, 500),
        import_record("numpy", 95_000, 20_000),
        import_record("numpy.core", 60_000, 40_000, parent="numpy"),
    ]

    imports = build(records, max_rows=2).imports

    assert imports is not None
    assert imports.count == 3
    assert [(i.module, i.cumulative_ms, i.self_ms, i.parent) for i in imports.top] == [
        ("numpy", 95.0, 20.0, None),
        ("numpy.core", 60.0, 40.0, "numpy"),
    ]


def test_the_last_exit_state_wins_and_errors_are_listed():
    records = [
        launch_time_record(T0),
        exit_state_record(T0 + 5, clean=True, exit_code=0, source="agent"),
        exit_state_record(T0 + 5.5, clean=False, exit_code=None, signal=9, source="supervisor"),
        hawkwatch_error_record(T0 + 2, "io", "run", "OSError: boom\nmore"),
    ]

    report = build(records)

    assert report.exit is not None
    exit_state = report.exit
    assert (exit_state.clean, exit_state.signal, exit_state.source) == (False, 9, "supervisor")
    assert exit_state.offset_s == pytest.approx(5.5)
    assert report.errors_total == 1
    assert (report.errors[0].plugin, report.errors[0].error) == ("io", "OSError: boom\nmore")


# -- session ----------------------------------------------------------------------------------


def test_session_runs_from_process_start_to_the_last_moment_recorded():
    records = [
        launch_time_record(T0),
        *series_records(c.CPU, (T0 + 1, 5)),
        span_record(T0 + 2, "long", 4_500),  # ends at T0 + 6.5
        event_record(T0 + 3, "App::Exit"),
        import_record("late", 1, 1, t=T0 + 100),  # imports carry no session time
        Record("anr", "1700000999_0", "{}"),
    ]

    session = build(records).session

    assert (session.start_time, session.end_time) == (T0, T0 + 6.5)
    assert session.duration_s == pytest.approx(6.5)
    assert session.record_count == 6


def test_start_falls_back_to_metadata_then_to_the_earliest_record():
    records = [*series_records(c.CPU, (T0 + 3, 5), (T0 + 1, 6))]

    assert build(records, {"start_time": T0}).session.start_time == T0
    assert build(records).session.start_time == T0 + 1
    assert build([]).session.start_time is None
    assert build([]).session.duration_s is None


def test_metadata_is_shown_and_the_rest_kept_as_details():
    metadata = {
        "format": "hawkwatch-session",
        "start_time": T0,
        "app_name": "shop",
        "app_version": "2.1",
        "pid": 4242,
        "python_implementation": "CPython",
        "python_version": "3.12.1",
        "argv": ["app.py", "--port", "8 080"],
        "hostname": "box",
        "resources": {"available_memory_source": "cgroup v2"},
        "ppid": 1,
        "tags": ["a", "b"],
        "note": None,
    }

    session = build([], metadata).session

    assert session.source == "hawkwatch"
    assert (session.app_name, session.app_version, session.pid) == ("shop", "2.1", 4242)
    assert session.python == "CPython 3.12.1"
    assert session.command == "app.py --port '8 080'"
    assert session.hostname == "box"
    assert session.details == (
        MetadataEntry("ppid", "1"),
        MetadataEntry("resources.available_memory_source", "cgroup v2"),
        MetadataEntry("tags", '["a","b"]'),
    )


def test_mthawkeye_folders_have_no_metadata_and_other_collections_are_counted():
    records = [
        launch_time_record(T0),
        Record("anr", "1700000001_0", "{}"),
        Record("anr", "1700000002_0", "{}"),
        Record("view-ctrl", "0", "{}"),
        *series_records(c.GL_FPS, (T0 + 1, 30)),
    ]

    report = build(records, skipped_lines=3)

    assert report.session.source == "mthawkeye"
    assert report.other_collections == (CollectionCount("view-ctrl", 1),)
    assert report.stalls is None  # the two anr values hold no stall: findings
    assert [s.label for s in report.resources] == ["GL frame rate"]
    assert report.skipped_lines == 3
    assert build(records, source="hawkwatch").session.source == "hawkwatch"
