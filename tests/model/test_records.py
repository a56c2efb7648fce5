"""Record types: encode → decode gives the record back; MTHawkeye's variants decode into the same
types; a record that does not fit is rejected with a reason naming the field."""

from __future__ import annotations

import json
import tempfile

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hawkwatch.model import Record
from hawkwatch.model import collections as c
from hawkwatch.model.profile import CallNode, Profile
from hawkwatch.model.records import (
    RECORD_TYPES,
    Anr,
    AnrGc,
    AnrPoint,
    AnrSample,
    AnrTask,
    AppLaunch,
    AvailableMemory,
    Breadcrumb,
    CallSite,
    CpuHighLoad,
    CpuHighLoadStackframe,
    CpuProfile,
    CpuUsage,
    Crash,
    CrashRecordFrame,
    CustomSpan,
    CustomTimeEvent,
    ExitClassification,
    ExitState,
    Footprint,
    FrameRate,
    GcPause,
    GlFrameRate,
    HangKill,
    HawkwatchError,
    ImportTime,
    IoFrame,
    IoIssue,
    LaunchTime,
    MemoryLevel,
    NetworkAggregate,
    NetworkTransaction,
    Phases,
    PointFrame,
    RecordError,
    Rejected,
    ResidentMemory,
    StackFrame,
    StoreDropped,
    ThreadsCount,
    ThreadShareValue,
    TypedRecord,
    decode,
    decode_all,
    merge_parts,
)
from hawkwatch.model.records.memory import (
    CycleType,
    GcCycles,
    GrowingType,
    LeakSuspect,
    MemFrame,
    MemoryGrowth,
    MemorySnapshot,
    MemoryTrace,
)
from hawkwatch.model.stack import PyFrame, StackTable
from hawkwatch.store import RecordStore
from hawkwatch.store.records import encode_record, encode_typed
from tests.model.test_profile import nodes

# -- strategies: values each writer can produce ---------------------------------------------------

text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
names = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12)
module_names = st.from_regex(r"[a-z_][a-z0-9_.]{0,20}", fullmatch=True)
#: Unix times in µs steps, as the agent rounds them (exact through ``%.6f`` keys).
times = st.integers(1, 4_000_000_000_000_000).map(lambda n: n / 1e6)
durations = st.floats(0, 1e9, allow_nan=False)
counts = st.integers(0, 2**40)
maybe = st.none().__or__
frames = st.builds(StackFrame, names, text, st.integers(0, 10**6))
stacks = st.lists(frames, max_size=4).map(tuple)


def series(kind: type, per_unit: int) -> st.SearchStrategy[TypedRecord]:
    """Series values in the steps their format keeps (``%.2f``: hundredths, ``per_unit`` 100)."""
    values = st.integers(-(10**12), 10**12).map(lambda n: n / per_unit)
    return st.builds(kind, time=times, value=values)


samples = st.builds(
    AnrSample,
    time=times,
    frames=maybe(stacks),
    stackframes=maybe(
        st.lists(st.integers(0, 2**48), max_size=3).map(lambda a: ",".join(f"0x{x:x}" for x in a))
    ),
    titleframe=maybe(st.integers(0, 60) | st.just("0x1a2b")),
    captured_count=maybe(counts),
    thread_count=maybe(counts),
    source=maybe(st.sampled_from(["watchdog", "faulthandler"])),
)
anr = st.builds(
    Anr,
    duration=durations,
    duration_range=maybe(st.tuples(durations, durations)),
    start_from=times,
    in_background=st.booleans(),
    stacks=st.lists(samples, max_size=3).map(tuple),
    loop=maybe(st.sampled_from(["asyncio", "qt", "tk", "heartbeat"])),
    thread=maybe(text),
    thread_id=maybe(counts),
    samples=maybe(counts),
    source=maybe(st.sampled_from(["watchdog", "faulthandler", "late"])),
    gc=maybe(st.builds(AnrGc, counts, durations)),
    point=maybe(
        st.builds(
            AnrPoint,
            st.integers(0, 20),
            st.lists(st.builds(PointFrame, names, text, counts, counts), max_size=3).map(tuple),
            st.integers(0, 3),
            counts,
        )
    ),
    fingerprint=maybe(text),
    task=maybe(st.builds(AnrTask, text, text, stacks)),
    unfinished=st.booleans(),
    repeat_of=maybe(text),
    repeat=maybe(counts),
    part_of=maybe(text),
    side_file=maybe(text),
)


@st.composite
def profiles(draw: st.DrawFn) -> CpuProfile:
    table = StackTable()
    counted: dict[int, tuple[int, int]] = {}
    for stack in draw(st.lists(st.lists(st.builds(PyFrame, names, text, counts), min_size=1))):
        counted[table.add(stack)] = (draw(counts), draw(counts))
    window = Profile(draw(times), draw(durations), draw(counts), draw(durations), table, counted)
    return CpuProfile.of(window)


RECORDS: dict[str, st.SearchStrategy[TypedRecord]] = {
    c.LAUNCH_TIME: st.builds(LaunchTime, start=times),
    c.APP_LAUNCH: st.builds(
        AppLaunch,
        process_start=times,
        interpreter_ready=times,
        agent_started=times,
        main_started=times,
        ready=times,
        duration_s=durations,
    )
    | st.builds(AppLaunch, appLaunchTime=times, appDidLaunchExitTime=maybe(times)),
    c.MEMORY_RESIDENT: series(ResidentMemory, 100),
    c.RESIDENT_FOOTPRINT: series(Footprint, 100),
    c.AVAILABLE_MEMORY: series(AvailableMemory, 100),
    c.CPU: series(CpuUsage, 10),
    c.THREADS_COUNT: series(ThreadsCount, 1),
    c.FPS: series(FrameRate, 100),
    c.GL_FPS: series(GlFrameRate, 100),
    c.GC_PAUSE: st.builds(
        GcPause,
        start=times,
        generation=st.integers(0, 2),
        duration_ms=durations,
        collected=maybe(counts),
        uncollectable=maybe(counts),
        thread=maybe(text),
    ),
    c.CUSTOM_SPAN: st.builds(
        CustomSpan,
        name=names,
        start=times,
        duration_ms=durations,
        thread=maybe(text),
        error=maybe(text),
    ),
    c.IMPORT_TIME: st.builds(
        ImportTime,
        time=maybe(times),
        self_us=maybe(counts),
        cumulative_us=counts,
        parent=maybe(module_names),
        thread=maybe(text),
        module=module_names,
    ),
    c.CUSTOM_TIME_EVENT: st.builds(
        CustomTimeEvent, time=times, event=maybe(text), extra=maybe(text)
    ),
    c.EXIT_STATE: st.builds(
        ExitState,
        clean=st.booleans(),
        exit_code=maybe(st.integers(-255, 255)),
        signal=maybe(st.integers(1, 64)),
        signal_name=maybe(text),
        reason=maybe(text),
        exception=maybe(text),
        source=maybe(st.sampled_from(["agent", "supervisor"])),
        time=times,
    ),
    c.HAWKWATCH_ERROR: st.builds(
        HawkwatchError, plugin=text, phase=text, error=text, traceback=maybe(text), time=times
    ),
    c.ANR: anr,
    c.HANG_KILL: st.builds(
        HangKill,
        previous_session=text,
        pid=maybe(counts),
        source=maybe(st.sampled_from(["marker", "faulthandler"])),
        start=maybe(times),
        last_seen=maybe(times),
        duration_ms=maybe(durations),
        thread=maybe(text),
        thread_id=maybe(counts),
        loop=maybe(text),
        stack=stacks,
        backstop_stack=maybe(stacks),
        time=times,
    ),
    c.CPU_HIGHLOAD: st.builds(
        CpuHighLoad,
        start=times,
        lasting=st.integers(0, 10**10).map(lambda n: n / 100),
        average=st.integers(0, 10**7).map(lambda n: n / 100),
        threads=maybe(
            st.lists(st.builds(ThreadShareValue, text, counts, st.floats(0, 1)), max_size=3).map(
                tuple
            )
        ),
    ),
    c.CPU_HIGHLOAD_STACKFRAME: st.builds(
        CpuHighLoadStackframe,
        key=times.map(lambda t: f"{t:.6f}"),
        roots=st.lists(nodes(), max_size=3).map(tuple),
    ),
    c.CPU_PROFILE: profiles()
    | profiles().map(lambda p: p.summary(f"cpu-profile/{p.record_key()}.json")),
    c.NETWORK_TRANSACTION: st.builds(
        NetworkTransaction,
        start=times,
        index=counts,
        method=st.sampled_from(["GET", "POST"]),
        url=text,
        host=text,
        library=st.sampled_from(["requests", "httpx", "aiohttp"]),
        status=maybe(st.integers(100, 599)),
        http_version=maybe(st.sampled_from(["1.1", "2"])),
        reused=maybe(st.booleans()),
        phases_ms=st.builds(
            Phases,
            queue=maybe(durations),
            dns=maybe(durations),
            ttfb=maybe(durations),
            total=maybe(durations),
        ),
        request_bytes=maybe(counts),
        response_bytes=maybe(counts),
        error=maybe(text),
        failed_phase=maybe(st.sampled_from(["dns", "tcp", "tls", "ttfb"])),
        thread=maybe(text),
        on_loop_thread=st.booleans(),
        frames=st.lists(st.builds(CallSite, names, text, counts), max_size=3).map(tuple),
        traced=st.booleans(),
    ),
    c.NETWORK_AGGREGATE: st.builds(
        NetworkAggregate,
        start=times,
        end=times,
        host=text,
        method=st.sampled_from(["GET", "POST"]),
        status_class=st.sampled_from(["2xx", "5xx", "failed"]),
        library=st.sampled_from(["requests", "httpx", "aiohttp"]),
        index=counts,
        count=counts,
        errors=counts,
        traced=counts,
        response_bytes=counts,
        total_ms_sum=durations,
        total_ms_max=durations,
        histogram=st.lists(st.tuples(counts, counts), max_size=4).map(tuple),
    ),
    c.IO_ISSUE: st.builds(
        IoIssue,
        type=st.sampled_from(["loop-thread-io", "small-buffer", "repeated-read", "unclosed"]),
        path=text,
        thread=text,
        ops=counts,
        bytes=counts,
        buffer_size=counts,
        cost_ms=durations,
        frames=st.lists(st.builds(IoFrame, names, text, counts), max_size=4).map(tuple),
        count=counts,
    ),
    c.CRASH: st.builds(
        Crash,
        time=times,
        kind=st.sampled_from(["exception", "signal"]),
        fatal=st.booleans(),
        type=names,
        message=text,
        thread=text,
        frames=st.lists(
            st.builds(CrashRecordFrame, function=names, file=text, line=counts), max_size=3
        ).map(tuple),
        breadcrumbs=st.lists(
            st.builds(Breadcrumb, time=times, kind=text, text=text), max_size=2
        ).map(tuple),
        pid=maybe(counts),
    ),
    c.EXIT_CLASSIFICATION: st.builds(
        ExitClassification,
        time=times,
        kind=st.sampled_from(["clean", "exit-code", "killed", "oom-killed", "unknown"]),
        exit_code=maybe(st.integers(-255, 255)),
        signal=maybe(st.integers(1, 64)),
        evidence=st.lists(text, max_size=3).map(tuple),
        source=text,
    ),
    c.MEMORY_LEVEL: st.builds(
        MemoryLevel,
        time=times,
        level=st.sampled_from([25, 50, 75, 95]),
        footprint_mb=durations,
        limit_mb=durations,
        limit_source=text,
    ),
    c.MEMORY_GROWTH: st.builds(
        MemoryGrowth,
        time=times,
        window_s=durations,
        start_bytes=durations,
        end_bytes=durations,
        growth_bytes=durations,
        growth_percent=durations,
        slope_bytes_per_s=durations,
        samples=counts,
    ),
    c.MEMORY_TRACE: st.builds(
        MemoryTrace,
        time=times,
        state=text,
        reason=text,
        snapshots=counts,
        backend=st.sampled_from(["tracemalloc", "memray"]),
        capture_bytes=counts,
        native=st.booleans(),
    ),
    c.MEMORY_SNAPSHOT: st.builds(
        MemorySnapshot,
        time=times,
        index=counts,
        total_bytes=counts,
        count=counts,
        stack_count=counts,
    ),
    c.MEMORY_LEAK: st.builds(
        LeakSuspect,
        time=times,
        rank=counts,
        frames=st.lists(st.builds(MemFrame, names, text, counts, st.booleans()), max_size=3).map(
            tuple
        ),
        growth_bytes=st.integers(-(10**9), 10**9),
        live_bytes=counts,
        count=counts,
        grown=counts,
        steps=counts,
        rate_bytes_per_s=durations,
    ),
    c.MEMORY_TYPES: st.builds(
        GrowingType,
        time=times,
        type=names,
        count=counts,
        count_growth=st.integers(-(10**6), 10**6),
        referrer_path=st.lists(text, max_size=3).map(tuple),
    ),
    c.MEMORY_CYCLES: st.builds(
        GcCycles,
        time=times,
        window_s=durations,
        collections=counts,
        with_garbage=counts,
        collected=counts,
        gc_s=durations,
        sampled=counts,
        types=st.lists(st.builds(CycleType, names, counts, counts), max_size=3).map(tuple),
        uncollectable=st.lists(st.builds(CycleType, names, counts, counts), max_size=2).map(tuple),
        uncollectable_total=counts,
    ),
    c.STORE_DROPPED: st.builds(
        StoreDropped, since=times, until=times, records=counts, bytes=counts, reason=text
    ),
}


def test_every_collection_has_a_strategy_here() -> None:
    assert set(RECORDS) == set(RECORD_TYPES)


@pytest.mark.parametrize("collection", sorted(RECORDS))
@given(data=st.data())
def test_encode_then_decode_gives_the_record_back(collection: str, data: st.DataObject) -> None:
    record = data.draw(RECORDS[collection])
    stored = record.to_record()
    assert stored.collection == collection == type(record).collection
    back = decode(stored)
    if isinstance(record, CpuHighLoadStackframe):  # proportions are derived, not kept
        assert isinstance(back, CpuHighLoadStackframe) and back.key == record.key
        assert back.encode_value() == record.encode_value()
        assert back.roots == record.roots  # the strategy's trees are far above the depth cut
    else:
        assert back == record


@pytest.mark.parametrize("collection", sorted(RECORDS))
@given(data=st.data())
def test_the_stores_fast_path_writes_what_encode_record_writes(
    collection: str, data: st.DataObject
) -> None:
    record = data.draw(RECORDS[collection])
    stored = record.to_record()
    assert encode_typed(record) == encode_record(*stored)


@given(st.lists(st.tuples(st.sampled_from(sorted(RECORDS)), st.data()), max_size=6))
def test_records_written_to_a_store_read_back_as_the_same_records(drawn) -> None:
    records = [data.draw(RECORDS[collection]) for collection, data in drawn]
    with tempfile.TemporaryDirectory() as folder:
        store = RecordStore(folder, launch_time=1.0)
        for index, record in enumerate(records):
            (store.write if index % 2 else store.write_nowait)(record)
        read = store.read().records[1:]  # after launch-time
        store.close()
    assert read == [record.to_record() for record in records]


def test_values_are_compact_json_in_field_order_with_unknowns_omitted() -> None:
    pause = GcPause(start=12.5, generation=2, duration_ms=13.25, thread="MainThread")
    assert pause.to_record() == Record(
        "gc-pause",
        "12.500000",
        '{"start":12.5,"generation":2,"duration_ms":13.25,"thread":"MainThread"}',
    )
    error = HawkwatchError(plugin="stall", phase="run", error="boom", time=3.0)
    assert error.encode_value() == b'{"plugin":"stall","phase":"run","error":"boom","time":3.0}'
    event = CustomTimeEvent(time=1.0, event="é\u2028", extra=None)
    assert event.encode_value() == '{"time":1.0,"event":"é\u2028"}'.encode()


def test_an_older_value_without_the_field_its_key_holds_takes_it_from_the_key() -> None:
    old = Record("gc-pause", "1700000000.250000", '{"generation":0,"duration_ms":11.5}')
    assert GcPause.from_record(old).start == 1_700_000_000.25
    old_import = Record("import-time", "json", '{"time":1.0,"self_us":5,"cumulative_us":9}')
    imported = ImportTime.from_record(old_import)
    assert (imported.module, imported.parent, imported.cumulative_ms) == ("json", None, 0.009)
    old_exit = Record("exit-state", "5.5", '{"clean":false,"exit_code":1}')
    assert ExitState.from_record(old_exit) == ExitState(
        clean=False,
        exit_code=1,
        signal=None,
        signal_name=None,
        reason=None,
        exception=None,
        source=None,
        time=5.5,
    )


# -- MTHawkeye's variants ------------------------------------------------------------------------


def test_mthawkeye_cpu_highload_strings_and_cfabsolute_key() -> None:
    load = CpuHighLoad.from_record(
        Record(
            "cpu-highload",
            "575944364.50",
            '{"start":"575944364.50","lasting":"64.30","average":"93.50"}',
        )
    )
    assert (load.start, load.lasting, load.average, load.threads) == (575944364.5, 64.3, 93.5, None)
    assert load.start_unix("cfabsolute") == 575944364.5 + 978_307_200
    assert load.start_unix("unix") == 575944364.5


def test_mthawkeye_stackframe_nodes_with_addresses_and_string_counts() -> None:
    value = (
        '[{"frame":"0x1a2b3c4d0","count":"10","proportion":1.0,'
        '"children":[{"frame":"0x1a2b3c500","count":6,"proportion":0.6}]}]'
    )
    tree = CpuHighLoadStackframe.from_record(Record("cpu-highload-stackframe", "1.00", value))
    assert tree.roots == (CallNode(0x1A2B3C4D0, 10, (CallNode(0x1A2B3C500, 6),)),)


def test_mthawkeye_anr_parts_merge_into_one_stall_with_addresses() -> None:
    first = {
        "duration": 500,
        "startFrom": 1554251565,
        "inBackground": False,
        "stacks": [
            {
                "time": 1554251565.1,
                "stackframes": "0x1a2b3c4d0,0x1a2b3c500",
                "titleframe": "0x1a2b3c4d0",
                "capturedCount": 3,
                "threadCount": 9,
            }
        ],
    }
    second = {"duration": "200", "startFrom": 1554251564.9, "inBackground": False, "stacks": []}
    decoded = decode_all(
        [
            Record("anr", "1554251565_0", json.dumps(first)),
            Record("anr", "1554251565_1", json.dumps(second)),
        ]
    )
    assert decoded.rejected == []
    (stall,) = merge_parts(decoded.keyed(Anr))
    assert (stall.key, stall.start, stall.duration_ms) == ("1554251565", 1554251564.9, 700.0)
    (sample,) = stall.stacks
    assert sample.addresses() == [0x1A2B3C4D0, 0x1A2B3C500]
    assert (sample.titleframe, sample.captured, sample.frames) == ("0x1a2b3c4d0", 3, None)


def test_mthawkeye_app_launch_and_custom_time_event() -> None:
    launch = AppLaunch.from_record(
        Record(
            "app-launch",
            "0",
            '{"appLaunchTime":1554251562.05,"appDidLaunchExitTime":"1554251562.95"}',
        )
    )
    assert launch.layout == "mthawkeye"
    assert launch.phases()[0] == ("appLaunchTime", "process start", 1554251562.05)
    assert launch.phases()[-1] == ("appDidLaunchExitTime", "didFinishLaunching end", 1554251562.95)
    event = CustomTimeEvent.from_record(
        Record("custom-time-event", "1554251564.123000", '{"event":"App::DidBecomeActive"}')
    )
    assert (event.time, event.event, event.extra) == (1554251564.123, "App::DidBecomeActive", None)


# -- rejects -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        (
            Record("gc-pause", "1.0", '{"generation":2,"duration_ms":-1}'),
            "Expected `float` >= 0.0 - at `$.duration_ms`",
        ),
        (Record("gc-pause", "soon", '{"generation":2,"duration_ms":1}'), "key is not a number"),
        (
            Record("custom-span", "1.0", '{"name":"","start":1,"duration_ms":1}'),
            "Expected `str` of length >= 1 - at `$.name`",
        ),
        (
            Record("anr", "1_0", '{"duration":1,"startFrom":1,"stacks":[{"time":"x"}]}'),
            "Expected `float`, got `str` - at `$.stacks[0].time`",
        ),
        (
            Record("anr", "1_0", '{"duration":1,"startFrom":1e300}'),
            "Expected `float` <= 1000000000000000.0 - at `$.startFrom`",
        ),
        (
            Record("exit-state", "1.0", '{"clean":"maybe"}'),
            "Expected `bool`, got `str` - at `$.clean`",
        ),
        (
            Record("app-launch", "0", '{"ready":0,"process_start":0}'),
            "app-launch captured no phase",
        ),
        (Record("app-launch", "0", '{"foo":1}'), "not a hawkwatch or MTHawkeye app-launch value"),
        (
            Record("cpu-highload-stackframe", "1", '{"frame":"f"}'),
            "value is not a JSON array of nodes",
        ),
        (
            Record("cpu-profile", "1", '{"start":1,"duration_s":1,"samples":1,"rate_hz":1}'),
            "a profile needs a table and counts, or a file",
        ),
        (Record("r-mem", "1.0", "12 MB"), "value is not a number"),
        (
            Record("hang-kill", "1.0", '{"stack":[["f","x.py"]]}'),
            "Expected `array` of length 3, got 2 - at `$.stack[0]`",
        ),
        (Record("custom-time-event", "1.0", '{"time":'), "value is not JSON"),
    ],
)
def test_a_record_that_does_not_fit_is_rejected_with_a_reason_naming_the_field(
    record: Record, reason: str
) -> None:
    with pytest.raises(RecordError) as caught:
        decode(record)
    assert str(caught.value) == reason
    assert decode_all([record]).rejected == [Rejected(record.collection, record.key, reason)]


def test_a_value_nested_too_deeply_is_rejected_not_a_recursion_error() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    (rejected,) = decode_all([Record("anr", "1_0", deep)]).rejected
    # msgspec stops at its depth limit on some Pythons; where it does not, the array is no object
    assert rejected.reason in ("value is nested too deeply", "value is not a JSON object")


@given(st.sampled_from(sorted(RECORD_TYPES)), text, st.text(max_size=60))
def test_any_text_decodes_or_is_rejected_never_raises_anything_else(
    collection: str, key: str, value: str
) -> None:
    decoded = decode_all([Record(collection, key, value)])
    assert len(decoded.rejected) + decoded.count(collection) == 1


def test_collections_without_a_type_pass_through_raw() -> None:
    record = Record("view-ctrl", "0", '{"name":"VC"}')
    decoded = decode_all([record])
    assert decoded.raw_of("view-ctrl") == [record] and decoded.count("view-ctrl") == 1
