"""The I/O canary's rules on real files in this process: which issue, with which numbers, opened
where; de-duplication; what it leaves alone; and that its own failures never reach the app."""

from __future__ import annotations

import asyncio
import builtins
import gc
import io
import os
import re
import threading
import time
from pathlib import Path

import pytest

import hawkwatch
from hawkwatch.agent.plugins import io_hooks, io_threads
from hawkwatch.model.io import IoRules
from tests.agent.plugins.io_support import canary

EVERY_LOOP_OP = IoRules(loop_op_ns=-1)  # any op on a loop thread breaks the rule: no timing
#: The leaks under test warn, as they should; pytest would turn the warning into an error.
leaks = pytest.mark.filterwarnings(
    "ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning"
)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data.bin"
    path.write_bytes(bytes(range(256)) * 64)  # 16 KB
    return path


def read_in_small_pieces(path: Path) -> int:
    with open(path, "rb", buffering=0) as f:
        return sum(len(chunk) for chunk in iter(lambda: f.read(100), b""))


def read_buffered(path: Path) -> int:
    with open(path, "rb") as f:
        return sum(len(chunk) for chunk in iter(lambda: f.read(100), b""))


def test_small_unbuffered_reads_are_a_small_buffer_issue(data: Path) -> None:
    with canary() as watched:
        assert read_in_small_pieces(data) == read_buffered(data) == 16384
    [issue] = watched.issues()
    assert issue.type == "small-buffer"
    assert issue.frames[0].function == "read_in_small_pieces"
    assert issue.frames[0].file == __file__
    assert issue.path == str(data)
    assert issue.ops == 165  # 164 reads of 100 bytes and the one at the end
    assert issue.bytes == 16384 and issue.buffer_size == 100
    assert issue.thread == threading.current_thread().name
    assert issue.count == 1


def test_small_buffer_thresholds_are_the_configured_ones(data: Path) -> None:
    with canary(IoRules(small_buffer_ops=200)) as watched:
        read_in_small_pieces(data)  # 165 ops: not more than 200
    assert watched.issues() == []
    with canary(IoRules(small_buffer_bytes=100)) as watched:
        read_in_small_pieces(data)  # asks for 100 on average: not fewer
    assert watched.issues() == []
    with canary(IoRules(small_buffer=False)) as watched:
        read_in_small_pieces(data)
    assert watched.issues() == []


def test_the_small_buffer_rule_can_ask_for_a_continual_run(data: Path) -> None:
    # IOCanary's extra gate: the small ops must also form a continual run of at least this long.
    # 165 reads of a file make a run far shorter than 1000 s, and longer than 1 ns.
    with canary(IoRules(small_buffer_min_run_ns=10**12)) as watched:
        read_in_small_pieces(data)
    assert watched.issues() == []
    with canary(IoRules(small_buffer_min_run_ns=1)) as watched:
        read_in_small_pieces(data)
    [issue] = watched.issues()
    assert (issue.type, issue.ops, issue.bytes) == ("small-buffer", 165, 16384)
    assert issue.frames[0].function == "read_in_small_pieces"


def test_a_file_that_breaks_no_rule_leaves_nothing_behind(data: Path) -> None:
    with canary() as watched:
        f = open(data, "rb")  # noqa: SIM115 - looked at after close
        assert f.read() == data.read_bytes()
        f.close()
        raw = f.raw
        assert (raw._hw_ops, raw._hw_eof > 0, raw._hw_more) == (1, True, None)  # type: ignore[attr-defined]
        assert raw._hw_owner.active is False  # type: ignore[attr-defined]  # counts no more
    assert watched.issues() == []


def test_small_writes_through_os_write_are_counted(tmp_path: Path) -> None:
    def write_records(path: Path) -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            for i in range(30):
                os.write(fd, b"%04d\n" % i)
        finally:
            os.close(fd)

    with canary() as watched:
        write_records(tmp_path / "out.txt")
    [issue] = watched.issues()
    assert (issue.type, issue.ops, issue.bytes, issue.buffer_size) == ("small-buffer", 30, 150, 5)
    assert issue.frames[0].function.endswith(".write_records")
    assert (tmp_path / "out.txt").read_bytes().count(b"\n") == 30


def test_os_fdopen_keeps_the_stack_of_os_open(data: Path) -> None:
    def open_by_descriptor(path: Path) -> int:
        fd = os.open(path, os.O_RDONLY)
        with os.fdopen(fd, "rb", buffering=0) as f:
            return sum(len(f.read(64)) for _ in range(40))

    with canary() as watched:
        assert open_by_descriptor(data) == 40 * 64
    [issue] = watched.issues()
    assert issue.type == "small-buffer"
    assert issue.frames[0].function.endswith(".open_by_descriptor")
    assert issue.path == str(data)


def settings_every_time(path: Path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def test_five_whole_reads_from_one_place_are_a_repeated_read(data: Path) -> None:
    seen = []
    with canary() as watched:
        for _ in range(10):  # one place, one stack
            settings_every_time(data)
            seen.append(len(watched.issues()))
    assert seen == [0, 0, 0, 0, 1, 1, 1, 1, 1, 1]
    [issue] = watched.issues()
    assert issue.frames[0].function == "settings_every_time"
    assert issue.count == 2  # ten reads: the rule fired twice
    assert (issue.ops, issue.bytes) == (1, 16384)


def test_a_write_in_between_or_a_long_pause_starts_the_row_again(data: Path) -> None:
    with canary() as watched:
        for i in range(8):
            settings_every_time(data)
            if i == 3:
                data.write_bytes(data.read_bytes())  # the content changed: reading it is right
    assert watched.issues() == []
    with canary(IoRules(repeat_window_ns=0)) as watched:  # every read is "later" than 0 ns
        for _ in range(6):
            settings_every_time(data)
    assert watched.issues() == []


def test_reads_from_different_places_are_not_a_row(data: Path) -> None:
    with canary() as watched:
        for _ in range(3):
            settings_every_time(data)
            with open(data, "rb") as f:  # another stack
                f.read()
    assert watched.issues() == []


def test_a_partial_read_is_not_a_whole_read(data: Path) -> None:
    def header(path: Path) -> bytes:
        with open(path, "rb") as f:
            return f.read(16)

    with canary() as watched:
        for _ in range(6):
            header(data)
    assert watched.issues() == []


def leak(path: Path) -> int:
    f = open(path, "rb")  # noqa: SIM115 - the misuse under test
    return len(f.read(10))


@leaks
def test_a_file_finalised_while_open_is_unclosed_with_its_opening_stack(data: Path) -> None:
    with canary() as watched:
        leak(data)
        gc.collect()
        with open(data, "rb") as f:
            f.read(10)
    [issue] = watched.issues()
    assert issue.type == "unclosed"
    assert issue.frames[0].function == "leak"
    assert issue.frames[1].function == (
        "test_a_file_finalised_while_open_is_unclosed_with_its_opening_stack"
    )
    assert (issue.ops, issue.bytes, issue.path) == (1, 4096, str(data))  # the buffer's fill


@leaks
def test_an_unbuffered_file_dropped_open_is_unclosed(data: Path) -> None:
    def leak_raw(path: Path) -> None:
        f = open(path, "rb", buffering=0)  # noqa: SIM115
        f.read(1)

    with canary() as watched:
        leak_raw(data)
        gc.collect()
    [issue] = watched.issues()
    assert (issue.type, issue.frames[0].function.rsplit(".")[-1]) == ("unclosed", "leak_raw")


@leaks
def test_issues_are_deduplicated_by_path_and_top_frames_with_a_count(data: Path) -> None:
    with canary() as watched:
        for _ in range(5):
            leak(data)
        gc.collect()
    # Written at the first, second and fourth; the last count comes with the flush.
    assert [i.count for i in watched.written] == [1, 2, 4]
    watched.collector.flush()
    assert [i.count for i in watched.written] == [1, 2, 4, 5]
    assert [(i.type, i.count) for i in watched.issues()] == [("unclosed", 5)]
    assert len({i.record_key() for i in watched.written}) == 1


def blocking_read(path: Path) -> int:
    with open(path, "rb") as f:
        return len(f.read())


def test_io_on_an_asyncio_loop_is_loop_thread_io_and_off_it_is_not(data: Path) -> None:
    async def handler() -> None:
        blocking_read(data)  # on the loop
        await asyncio.to_thread(blocking_read, data)  # the right way

    with canary(EVERY_LOOP_OP) as watched:
        asyncio.run(handler())
    [issue] = watched.issues()
    assert (issue.type, issue.frames[0].function) == ("loop-thread-io", "blocking_read")
    assert (issue.ops, issue.bytes, issue.thread) == (1, 16384, threading.current_thread().name)


def test_the_loop_rule_thresholds(data: Path) -> None:
    async def handler() -> None:
        blocking_read(data)

    with canary(IoRules(loop_op_ns=10**12, loop_continual_ns=10**12)) as watched:
        asyncio.run(handler())  # 16 KB never takes 1000 s
    assert watched.issues() == []
    with canary(IoRules(loop_op_ns=10**12, loop_continual_ns=-1)) as watched:
        asyncio.run(handler())  # any continual run counts
    assert [i.type for i in watched.issues()] == ["loop-thread-io"]
    with canary(IoRules(loop_thread=False, loop_op_ns=-1)) as watched:
        asyncio.run(handler())
    assert watched.issues() == []


def test_a_thread_the_app_marks_is_a_loop_thread(data: Path) -> None:
    def custom_loop() -> None:
        hawkwatch.mark_loop_thread()
        blocking_read(data)

    with canary(EVERY_LOOP_OP) as watched:
        blocking_read(data)  # the main thread is no loop here
        worker = threading.Thread(target=custom_loop, name="game-loop")
        worker.start()
        worker.join()
    [issue] = watched.issues()
    assert (issue.type, issue.thread) == ("loop-thread-io", "game-loop")
    io_threads.refresh()
    assert worker.ident not in io_threads.loop_ids  # forgotten once the thread ended


@leaks
def test_home_is_shortened_and_the_redaction_pattern_applies(tmp_path: Path) -> None:
    home = tmp_path / "home"
    secret = home / "users" / "alice-42" / "notes.txt"
    secret.parent.mkdir(parents=True)
    secret.write_text("x" * 50)
    with canary(home=str(home), redact=re.compile(r"alice-\d+")) as watched:
        leak(secret)
        gc.collect()
    [issue] = watched.issues()
    assert issue.path == "~/users/***/notes.txt"


@leaks
def test_system_files_the_session_folder_and_agent_threads_are_left_alone(
    tmp_path: Path, data: Path
) -> None:
    sessions = str(tmp_path / "sessions") + os.sep
    (tmp_path / "sessions").mkdir()
    own = tmp_path / "sessions" / "x.bin"
    own.write_bytes(b"x" * 1000)
    with canary(ignore_prefixes=("/proc/", sessions)) as watched:
        for _ in range(6):
            with open("/proc/self/stat", "rb") as f:
                f.read()
            leak(own)
        thread = threading.Thread(target=lambda: [leak(data) for _ in range(3)], name="hawkwatch-x")
        watched.collector.ignore_threads = frozenset()
        thread.start()
        watched.collector.ignore_threads = frozenset({thread.ident or 0})
        thread.join()
        gc.collect()
        with open("/proc/self/stat", "rb") as f:
            assert type(f.raw) is io.FileIO  # not even wrapped
    assert all(i.path == str(data) for i in watched.issues())


def test_a_failing_collector_never_reaches_the_app(data: Path) -> None:
    with canary() as watched:
        collector = watched.collector

        def broken(frame: object) -> None:
            raise RuntimeError("collector bug")

        collector.site_at = broken  # type: ignore[method-assign]
        collector.sites.clear()  # no known site: each open asks site_at
        assert settings_every_time(data) == data.read_bytes()  # io.open did it
        assert isinstance(collector.failure.error, RuntimeError)
        assert collector.active is False
    with canary() as watched:
        collector = watched.collector
        collector.ignore_prefixes = 42  # type: ignore[assignment]  # the inline check raises
        assert settings_every_time(data) == data.read_bytes()
        assert isinstance(collector.failure.error, TypeError)
        assert collector.active is False
    with canary() as watched:
        with open(data, "rb") as f:
            f.raw._hw_ops = "many"  # type: ignore[attr-defined]  # accounting now raises
            assert f.read() == data.read_bytes()
        assert isinstance(watched.collector.failure.error, TypeError)


def test_stop_puts_the_real_functions_back_and_open_files_keep_working(data: Path) -> None:
    with canary() as watched:
        f = open(data, "rb")  # noqa: SIM115 - open across the stop
        assert builtins.open is io_hooks.OPEN and os.read is io_hooks.OS_READ
    assert builtins.open is io.open is io_hooks.REAL_OPEN
    assert (os.open, os.write, os.close) == (
        io_hooks.REAL_OS_OPEN,
        io_hooks.REAL_OS_WRITE,
        io_hooks.REAL_OS_CLOSE,
    )
    watched.collector.active = False  # as the monitor does at stop
    assert f.read(5) == bytes(range(5))
    f.close()
    assert watched.written == []


def test_a_function_another_tool_wrapped_is_left_to_it(data: Path) -> None:
    def tool_open(*args: object, **kwargs: object) -> object:
        return io_hooks.REAL_OPEN(*args, **kwargs)  # type: ignore[call-overload]

    builtins.open = tool_open  # type: ignore[assignment]
    try:
        from hawkwatch.agent.plugins.io_issues import IssueCollector

        collector = IssueCollector(IoRules(), lambda issue: None)
        assert io_hooks.install(collector) == ["builtins.open"]
        assert builtins.open is tool_open and io.open is io_hooks.OPEN
        io_hooks.remove(collector)
        assert builtins.open is tool_open and io.open is io_hooks.REAL_OPEN
    finally:
        builtins.open = io_hooks.REAL_OPEN


def open_for_reading(path: Path) -> io.BufferedReader:
    return open(path, "rb")  # the caller closes it


def first_site(path: Path) -> io.BufferedReader:
    return open_for_reading(path)


def second_site(path: Path) -> io.BufferedReader:
    return open_for_reading(path)


def test_files_opened_from_one_site_share_one_stack(data: Path) -> None:
    with canary():
        files = [open_for_reading(data) for _ in range(3)]
        stacks = [f.raw._hw_stack for f in files]  # type: ignore[attr-defined]
        for f in files:
            f.close()
    assert stacks[0] is stacks[1] is stacks[2]  # found by the site, not captured again
    assert stacks[0][0] is open_for_reading.__code__


@leaks
def test_sites_that_differ_one_frame_deeper_are_two_issues(data: Path) -> None:
    with canary() as watched:
        for site in (first_site, second_site, first_site):  # the same line calls both
            site(data).read(1)
        gc.collect()
    stacks = {issue.frames[1].function: issue for issue in watched.issues()}
    assert sorted(stacks) == ["first_site", "second_site"]  # not one site with both's files
    assert stacks["first_site"].count == 2 and stacks["second_site"].count == 1
    assert {issue.frames[0].function for issue in stacks.values()} == {"open_for_reading"}
    assert stacks["first_site"].frames[2].function == (
        "test_sites_that_differ_one_frame_deeper_are_two_issues"
    )  # named after every frame of the site has returned


def test_a_site_first_reached_on_an_agent_thread_stays_the_agents(data: Path) -> None:
    """The thread test runs once per site (when it is captured), not at every open."""
    raws: list[type] = []

    def agent_work() -> None:
        for _ in range(3):  # the first open captures the site, the others find it
            with open_for_reading(data) as f:
                raws.append(type(f.raw))

    me = frozenset({threading.get_ident()})
    with canary() as watched:
        for agents in (me, frozenset()):  # this thread as the agent's, then as the app's
            watched.collector.ignore_threads = agents
            agent_work()  # one site, first reached "on an agent thread"
        with open(data, "rb") as f:  # another site, on the app's thread: watched
            assert type(f.raw) is not io.FileIO
        agents_sites = [site for site in watched.collector.sites.values() if site[4] is None]
    assert raws == [io.FileIO] * 6  # left alone: the site is the agent's
    assert len(agents_sites) == 1 and agents_sites[0][0] is open_for_reading.__code__


def read_whole_in_pieces(path: Path) -> int:
    with open(path, "rb", buffering=0) as f:
        return sum(len(chunk) for chunk in iter(lambda: f.read(1000), b""))


@pytest.mark.parametrize("small_buffer", [True, False])
def test_a_file_of_many_ops_read_whole_again_and_again_is_a_repeated_read(
    data: Path, small_buffer: bool
) -> None:
    """Files over ``small_buffer_ops`` ops go through the collector's whole ``closed``, the
    others through the raw file's own close: either way the row is counted."""
    with canary(IoRules(small_buffer=small_buffer, small_buffer_bytes=1001)) as watched:
        for _ in range(5):
            assert read_whole_in_pieces(data) == 16384  # 18 ops each: 16 of 1000 B, 384 B, the end
    kinds = sorted(issue.type for issue in watched.issues())
    assert kinds == ["repeated-read"]
    with canary(IoRules(small_buffer=small_buffer, small_buffer_ops=10)) as watched:
        for _ in range(5):
            read_whole_in_pieces(data)
    kinds = sorted(issue.type for issue in watched.issues())
    assert kinds == (["repeated-read", "small-buffer"] if small_buffer else ["repeated-read"])


def test_the_read_that_reached_the_end_dates_the_whole_read(data: Path) -> None:
    with canary(), open(data, "rb") as f:
        before = time.perf_counter_ns()
        f.read()
        after = time.perf_counter_ns()
        assert before <= f.raw._hw_eof <= after  # type: ignore[attr-defined]  # not the close


def test_a_raw_file_built_other_than_by_the_hooks_counts_nothing(data: Path) -> None:
    with canary() as watched:
        with open(data, "rb") as f:
            kind = type(f.raw)
        raw = kind(str(data), "rb")  # no owner set: every op takes it as OFF
        assert raw.read(10) == data.read_bytes()[:10]
        assert raw.readall() == data.read_bytes()[10:]
        raw.seek(0)
        buffer = bytearray(5)
        assert raw.readinto(buffer) == 5
        raw.close()
        with kind(str(data.with_suffix(".out")), "wb") as out:
            assert out.write(b"abc") == 3
        watched.collector.failure.raise_if_failed()
        assert watched.collector.active
    assert watched.issues() == []
