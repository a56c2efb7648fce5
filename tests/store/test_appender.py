"""AppenderFile at the byte level: the MTAppenderFile layout, flushes, recovery, the journal."""

from __future__ import annotations

import os
import threading
import time
import warnings
from pathlib import Path

import pytest

from hawkwatch.errors import StoreError
from hawkwatch.store import _worker
from hawkwatch.store.appender import AppenderFile
from hawkwatch.store.appender_read import parse_appender, read_appender
from tests.builders import (
    END_MARKER,
    JOURNAL_SIZE,
    MMAP_SIZE,
    flush_journal,
    lines_bytes,
    mmap_image,
    read_file,
    write_appender,
)

NAME = "log"


def mmap_bytes(folder: Path) -> bytes:
    return (folder / f"{NAME}.mmap2").read_bytes()


def mtlog_bytes(folder: Path) -> bytes:
    return read_file(folder / f"{NAME}.mtlog")


def read_lines(folder: Path) -> list[bytes]:
    content = read_appender(folder, NAME)
    assert content.skipped == []
    return content.lines


def assert_cleared(image: bytes) -> None:
    """Nothing buffered, no stale bytes, no journal: zeros up to the journal's last fields."""
    assert len(image) == MMAP_SIZE
    assert image[: MMAP_SIZE - JOURNAL_SIZE + 8] == bytes(MMAP_SIZE - JOURNAL_SIZE + 8)


def wait_until(condition, timeout_s: float = 10.0) -> None:
    """Poll ``condition`` until it holds; fail after ``timeout_s`` (a deadline, not a sleep)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"condition not met within {timeout_s} s")
        time.sleep(0.001)


# -- layout ----------------------------------------------------------------------------------


def test_a_new_appender_is_an_all_zero_buffer_of_exactly_153600_bytes(tmp_path):
    with AppenderFile(tmp_path, NAME) as appender:
        assert appender.is_new
        assert mmap_bytes(tmp_path) == bytes(MMAP_SIZE)
        assert mtlog_bytes(tmp_path) == b""


def test_every_append_is_followed_by_the_end_marker(tmp_path):
    written = b""
    with AppenderFile(tmp_path, NAME) as appender:
        for line in ["cpu,1.0,12.5", "r-mem,1.5,99.00", 'anr,2_0,{"a":[1,2]}', "x" * 300]:
            appender.append(line)
            written += line.encode() + b"\n"
            image = mmap_bytes(tmp_path)
            assert len(image) == MMAP_SIZE
            assert image[: len(written)] == written
            assert image[len(written) : len(written) + 4] == END_MARKER
            assert appender.buffered_bytes == len(written)
        assert mtlog_bytes(tmp_path) == b""


def test_a_line_given_with_its_lf_is_stored_once_with_one_lf(tmp_path):
    with AppenderFile(tmp_path, NAME) as appender:
        appender.append("one\n")
        appender.append(b"two")
        assert mmap_bytes(tmp_path)[:12] == b"one\ntwo\n" + END_MARKER


def test_flush_moves_exactly_the_lines_to_mtlog_and_zeroes_the_buffer(tmp_path):
    lines = [f"cpu,{i}.0,{i * 1.5}" for i in range(20)]
    data = lines_bytes(lines)
    with AppenderFile(tmp_path, NAME) as appender:
        for line in lines:
            appender.append(line)
        appender.flush()
        # Unlike MTAppenderFile, no stale bytes are left behind (docs/store.md).
        assert_cleared(mmap_bytes(tmp_path))
        assert mtlog_bytes(tmp_path) == data
        assert appender.buffered_bytes == 0
        assert read_lines(tmp_path) == [x.encode() for x in lines]

        appender.append("after")
        image = mmap_bytes(tmp_path)
        assert image[:10] == b"after\n" + END_MARKER
        assert mtlog_bytes(tmp_path) == data  # not flushed yet
        assert read_lines(tmp_path)[-2:] == [lines[-1].encode(), b"after"]


@pytest.mark.parametrize("copied", [0, 1, 3, 9, 25])
def test_an_append_torn_by_a_kill_after_a_flush_reads_as_no_damage(tmp_path, copied):
    """A SIGKILL can stop an append's copy half-way (a page fault is window enough): the new
    line's 00 and part of its body. What lies behind must not read as lines a NUL hides."""
    flushed = [f"cpu,{i},{'v' * (i % 50)}" for i in range(60)]
    buffered = ["mem,1,after-the-flush", "mem,2,still-buffered"]
    with AppenderFile(tmp_path, NAME) as appender:
        for line in flushed:
            appender.append(line)
        appender.flush()
        for line in buffered:
            appender.append(line)
        start = appender.buffered_bytes
        torn = b"\x00" + b"mem,3,torn-in-the-copy\n"[1 : 1 + copied]
        with (tmp_path / f"{NAME}.mmap2").open("r+b") as f:  # what the killed copy left
            f.seek(start)
            f.write(torn)
        content = read_appender(tmp_path, NAME)
        assert content.skipped == []
        assert content.lines == [x.encode() for x in flushed + buffered]


def test_flush_of_an_empty_buffer_writes_nothing(tmp_path):
    with AppenderFile(tmp_path, NAME) as appender:
        appender.flush()
        assert mtlog_bytes(tmp_path) == b""
        assert mmap_bytes(tmp_path) == bytes(MMAP_SIZE)


def test_no_flush_below_a_third_and_a_background_flush_once_past_51200_bytes(tmp_path):
    line = "cpu,1700000000.123456," + "7" * 77  # 100 bytes with its LF
    with AppenderFile(tmp_path, NAME) as appender:
        for _ in range(511):
            appender.append(line)
        assert appender.buffered_bytes == 51_100
        assert _worker.drain()
        assert mtlog_bytes(tmp_path) == b""

        appender.append(line)  # 51,200: the flush thread is woken
        expected = lines_bytes([line] * 512)
        wait_until(lambda: len(mtlog_bytes(tmp_path)) == len(expected))
        assert _worker.drain()
        assert mtlog_bytes(tmp_path) == expected
        assert mmap_bytes(tmp_path)[0] == 0
        assert appender.buffered_bytes == 0


def test_a_full_buffer_never_drops_a_line_and_never_writes_an_overflow_notice(tmp_path):
    lines = [f"big,{i},{'v' * (900 + i % 250)}" for i in range(600)]  # ~ 650 KB, 4x the buffer
    with AppenderFile(tmp_path, NAME) as appender:
        for line in lines:
            appender.append(line)
        assert read_lines(tmp_path) == [x.encode() for x in lines]
        appender.flush()
    assert mtlog_bytes(tmp_path) == lines_bytes(lines)
    assert b"[F][" not in mtlog_bytes(tmp_path)
    assert len(mmap_bytes(tmp_path)) == MMAP_SIZE


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("a\x00b", "NUL"),
        ("a\rb", "CR"),
        ("a\nb", "LF"),
        ("x" * 16_255, "16254"),
    ],
)
def test_a_line_the_format_cannot_hold_raises_value_error(tmp_path, line, message):
    with AppenderFile(tmp_path, NAME) as appender:
        with pytest.raises(ValueError, match=message):
            appender.append(line)
        appender.append("x" * 16_254)  # the longest line MTAppenderFile keeps
        assert read_lines(tmp_path) == [b"x" * 16_254]


# -- reading ---------------------------------------------------------------------------------


def test_reading_takes_mtlog_first_then_the_buffer(tmp_path):
    write_appender(
        tmp_path,
        NAME,
        log=lines_bytes(["first", "second"]),
        buffer=mmap_image(lines_bytes(["third", "fourth"])),
    )
    assert read_lines(tmp_path) == [b"first", b"second", b"third", b"fourth"]


def test_a_buffer_whose_first_byte_is_zero_holds_nothing_unflushed(tmp_path):
    stale = lines_bytes(["old-1", "old-2"])
    write_appender(
        tmp_path, NAME, log=lines_bytes(["kept"]), buffer=mmap_image(b"\x00" + stale[1:])
    )
    assert read_lines(tmp_path) == [b"kept"]
    with AppenderFile(tmp_path, NAME):
        assert mtlog_bytes(tmp_path) == b"kept\n"
        assert_cleared(mmap_bytes(tmp_path))  # the stale lines too


def test_reading_changes_no_file(tmp_path):
    buffer = mmap_image(lines_bytes(["b1", "b2"]), stale=b"stale\nmore stale\n")
    write_appender(tmp_path, NAME, log=b"l1\n", buffer=buffer)
    assert read_lines(tmp_path) == [b"l1", b"b1", b"b2"]
    assert mtlog_bytes(tmp_path) == b"l1\n"
    assert mmap_bytes(tmp_path) == buffer


# -- recovery from a dead writer ---------------------------------------------------------


def test_reopen_after_a_dead_writer_moves_only_the_valid_prefix_to_mtlog(tmp_path):
    valid = lines_bytes(["cpu,1,2", "cpu,2,3", 'anr,3_0,{"x":1}'])
    stale = lines_bytes(["cpu,0.5,stale", "r-mem,0.7,stale"]) + b"half a stale li"
    write_appender(tmp_path, NAME, log=b"old,1,1\n", buffer=mmap_image(valid, stale=stale))

    with AppenderFile(tmp_path, NAME) as appender:
        assert not appender.is_new
        assert mtlog_bytes(tmp_path) == b"old,1,1\n" + valid
        assert_cleared(mmap_bytes(tmp_path))  # no stale bytes stay behind
        assert appender.buffered_bytes == 0
        appender.append("new,1,1")
        assert read_lines(tmp_path) == [
            b"old,1,1",
            b"cpu,1,2",
            b"cpu,2,3",
            b'anr,3_0,{"x":1}',
            b"new,1,1",
        ]


def test_a_buffer_of_the_wrong_size_is_recovered_and_resized(tmp_path):
    write_appender(tmp_path, NAME, buffer=lines_bytes(["a", "b"]) + END_MARKER)
    with AppenderFile(tmp_path, NAME) as appender:
        assert len(mmap_bytes(tmp_path)) == MMAP_SIZE
        appender.append("c")
        assert read_lines(tmp_path) == [b"a", b"b", b"c"]


def test_a_full_foreign_buffer_without_a_marker_is_recovered_whole(tmp_path):
    # MTAppenderFile with a stalled flush thread: valid data up to the last byte, no NUL.
    lines = [f"cpu,{i:05d},{'7' * 89}" for i in range(MMAP_SIZE // 100)]
    data = lines_bytes(lines)
    assert len(data) == MMAP_SIZE
    write_appender(tmp_path, NAME, buffer=data)
    with AppenderFile(tmp_path, NAME) as appender:
        assert mtlog_bytes(tmp_path) == data
        appender.append("next")
        assert read_lines(tmp_path) == [*(x.encode() for x in lines), b"next"]


def test_a_torn_foreign_line_is_not_glued_to_the_next_flushed_line(tmp_path):
    # MTAppenderFile killed inside memcpy: the valid prefix ends in the middle of a line.
    write_appender(tmp_path, NAME, buffer=mmap_image(b"a,1,1\nb,2,2\nc,3,", marker=False))
    assert read_appender(tmp_path, NAME).lines == [b"a,1,1", b"b,2,2"]
    with AppenderFile(tmp_path, NAME) as appender:
        appender.append("d,4,4")
        appender.flush()
        lines = read_lines(tmp_path)
    assert lines == [b"a,1,1", b"b,2,2", b"c,3,", b"d,4,4"]


def test_a_torn_last_mtlog_line_is_not_glued_to_the_recovered_block(tmp_path):
    write_appender(tmp_path, NAME, log=b"a\nto", buffer=mmap_image(b"b\nc\n"))
    content = read_appender(tmp_path, NAME)
    assert content.lines == [b"a", b"to", b"b", b"c"]
    with AppenderFile(tmp_path, NAME):
        assert mtlog_bytes(tmp_path) == b"a\nto\nb\nc\n"


# -- the flush journal -------------------------------------------------------------------


@pytest.mark.parametrize("written", ["none", "half", "all"])
def test_an_interrupted_flush_keeps_every_line_exactly_once(tmp_path, written):
    # The journal says: a flush of this block to .mtlog offset len(before) was under way.
    before = lines_bytes(["old-1", "old-2"])
    block = lines_bytes([f"line-{i}" for i in range(40)])
    log = {
        "none": before,
        "half": before + block[: len(block) // 2],
        "all": before + block,
    }[written]
    buffer = mmap_image(block, stale=b"stale\n", journal=flush_journal(len(before), block))
    write_appender(tmp_path, NAME, log=log, buffer=buffer)
    expected = [b"old-1", b"old-2"] + [f"line-{i}".encode() for i in range(40)]

    assert read_lines(tmp_path) == expected  # a reader applies the journal without writing
    assert mtlog_bytes(tmp_path) == log

    with AppenderFile(tmp_path, NAME):
        assert mtlog_bytes(tmp_path) == before + block
        image = mmap_bytes(tmp_path)
        assert image[0] == 0
        assert image[-JOURNAL_SIZE:][:8] == bytes(8)  # journal cleared
        assert read_lines(tmp_path) == expected
    with AppenderFile(tmp_path, NAME):  # a second reopen changes nothing
        assert mtlog_bytes(tmp_path) == before + block


def test_a_journal_of_another_block_is_ignored(tmp_path):
    block = lines_bytes(["new-1", "new-2"])
    stale_journal = flush_journal(0, lines_bytes(["something", "else"]))
    log = lines_bytes(["old-1", "old-2"])
    write_appender(tmp_path, NAME, log=log, buffer=mmap_image(block, journal=stale_journal))
    expected = [b"old-1", b"old-2", b"new-1", b"new-2"]
    assert read_lines(tmp_path) == expected
    with AppenderFile(tmp_path, NAME):
        assert mtlog_bytes(tmp_path) == log + block
        assert read_lines(tmp_path) == expected


def test_a_journal_left_after_the_flush_completed_is_ignored(tmp_path):
    # Killed after byte 0 was cleared but before the journal was: nothing is unflushed.
    block = lines_bytes(["a", "b"])
    buffer = bytearray(mmap_image(block, journal=flush_journal(0, block)))
    buffer[0] = 0
    write_appender(tmp_path, NAME, log=block, buffer=bytes(buffer))
    assert read_lines(tmp_path) == [b"a", b"b"]
    with AppenderFile(tmp_path, NAME) as appender:
        appender.append("c")
        assert read_lines(tmp_path) == [b"a", b"b", b"c"]


def test_parse_appender_matches_read_appender(tmp_path):
    block = lines_bytes(["b1"])
    buffer = mmap_image(block, journal=flush_journal(3, block))
    write_appender(tmp_path, NAME, log=b"l1\nb1", buffer=buffer)
    assert parse_appender(b"l1\nb1", buffer) == read_appender(tmp_path, NAME)
    assert parse_appender(b"l1\nb1", buffer).lines == [b"l1", b"b1"]


# -- close, threads, fork -----------------------------------------------------------------


def test_close_flushes_and_zeroes_the_whole_buffer(tmp_path):
    appender = AppenderFile(tmp_path, NAME)
    appender.append("a")
    appender.append("b")
    appender.close()
    appender.close()  # idempotent
    assert mmap_bytes(tmp_path) == bytes(MMAP_SIZE)
    assert mtlog_bytes(tmp_path) == b"a\nb\n"


def test_appending_after_close_raises_store_error(tmp_path):
    appender = AppenderFile(tmp_path, NAME)
    appender.close()
    with pytest.raises(StoreError, match="closed"):
        appender.append("late")
    with pytest.raises(StoreError, match="closed"):
        appender.append_encoded(b"late\n" + END_MARKER)
    appender.flush()  # a no-op, not an error
    assert mtlog_bytes(tmp_path) == b""


def test_appends_from_8_threads_all_arrive_whole_and_in_each_threads_order(tmp_path):
    threads_n, per_thread = 8, 1_500

    def line(t: int, i: int) -> bytes:
        return f"t{t},{i},".encode() + b"abcdefghij" * (1 + (i * 7 + t) % 40)

    start = threading.Barrier(threads_n)
    with AppenderFile(tmp_path, NAME) as appender:

        def work(t: int) -> None:
            start.wait()
            for i in range(per_thread):
                appender.append(line(t, i))

        threads = [threading.Thread(target=work, args=(t,)) for t in range(threads_n)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        lines = read_lines(tmp_path)

    assert len(lines) == threads_n * per_thread
    seen: dict[int, list[int]] = {t: [] for t in range(threads_n)}
    for raw in lines:
        t, i, _ = raw.split(b",", 2)
        assert raw == line(int(t[1:]), int(i)), "a torn or mixed line"
        seen[int(t[1:])].append(int(i))
    assert all(order == list(range(per_thread)) for order in seen.values())
    assert read_lines(tmp_path) == lines  # after close, everything is in .mtlog


def test_a_forked_child_cannot_write_into_the_parents_appender(tmp_path):
    from hawkwatch.agent.runtime import install_process_hooks

    install_process_hooks()  # the runtime is the one owner of the at-fork hooks
    with AppenderFile(tmp_path, NAME) as appender:
        appender.append("parent-1")
        before = (mmap_bytes(tmp_path), mtlog_bytes(tmp_path))
        with warnings.catch_warnings():
            # Python 3.12+ warns that fork() in a process with threads may deadlock.
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # the child: never return into pytest
            code = 3
            try:
                try:
                    appender.append("child")
                    code = 1
                except StoreError:
                    code = 0
                appender.flush()
                appender.close()
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, "the child's append did not raise"
        assert (mmap_bytes(tmp_path), mtlog_bytes(tmp_path)) == before

        appender.append("parent-2")
        assert read_lines(tmp_path) == [b"parent-1", b"parent-2"]


def test_a_read_torn_by_the_end_of_a_flush_counts_no_line_twice(tmp_path, monkeypatch):
    """A flush empties the buffer and then clears the journal; a reader going front to back can
    see the lines still buffered and the journal already cleared. The journal it read before
    the data keeps the flushed lines from counting twice."""
    from hawkwatch.store.appender import BUFFER_SIZE, JOURNAL_OFFSET
    from hawkwatch.store.appender_read import _with_journal

    appender = AppenderFile(tmp_path, NAME)
    snapshots: list[bytes] = []
    write_block = appender._write_block

    def write_and_snapshot(offset: int, start: int, end: int) -> None:
        write_block(offset, start, end)
        snapshots.append(mmap_bytes(tmp_path))  # data and journal, the block in .mtlog

    monkeypatch.setattr(appender, "_write_block", write_and_snapshot)
    for i in range(20):
        appender.append(f"line {i}")
    appender.flush()
    log = mtlog_bytes(tmp_path)
    appender.close()
    during = snapshots[0]
    torn = during[:JOURNAL_OFFSET] + bytes(BUFFER_SIZE - JOURNAL_OFFSET) + during[BUFFER_SIZE:]
    expected = [f"line {i}".encode() for i in range(20)]
    assert parse_appender(log, torn).lines == expected * 2  # what a torn read used to give
    repaired = _with_journal(torn, during[JOURNAL_OFFSET:BUFFER_SIZE])
    assert parse_appender(log, repaired).lines == expected
