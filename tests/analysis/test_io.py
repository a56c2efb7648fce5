"""IOCanary's rules on hand-built file stats, and the report's I/O section from records."""

from __future__ import annotations

import io

import msgspec

from hawkwatch.analysis.io import build_io_issues
from hawkwatch.analysis.io_rules import RepeatedReads, loop_thread_io, small_buffer
from hawkwatch.analysis.session_report import build_session_report
from hawkwatch.model import Record
from hawkwatch.model.io import FileStats, IoRules
from hawkwatch.model.records import decode_all
from hawkwatch.model.records.io import IoFrame, IoIssue
from hawkwatch.report import console
from hawkwatch.report.json_report import to_json_dict
from hawkwatch.web import sections

RULES = IoRules()


def stats(**fields: object) -> FileStats:
    s = FileStats("/data/a.bin", 1, ("stack",))
    for name, value in fields.items():
        setattr(s, name, value)
    return s


def test_small_buffer_needs_more_than_20_ops_under_4096_bytes_on_average() -> None:
    assert small_buffer(stats(ops=21, requested=21 * 4095), RULES)
    assert not small_buffer(stats(ops=20, requested=20), RULES)
    assert not small_buffer(stats(ops=21, requested=21 * 4096), RULES)
    gated = IoRules(small_buffer_min_run_ns=13_000_000)  # IOCanary's extra condition
    assert not small_buffer(stats(ops=50, requested=50, max_run_ns=12_999_999), gated)
    assert small_buffer(stats(ops=50, requested=50, max_run_ns=13_000_000), gated)


def test_loop_thread_io_is_one_op_over_13_ms_or_a_run_over_500_ms() -> None:
    assert loop_thread_io(stats(loop_max_op_ns=13_000_001), RULES)
    assert not loop_thread_io(stats(loop_max_op_ns=13_000_000), RULES)
    assert loop_thread_io(stats(loop_max_run_ns=500_000_001), RULES)
    assert not loop_thread_io(stats(loop_max_op_ns=10**9), IoRules(loop_thread=False))


def whole_read(thread: int = 1, stack: object = ("a",), size: int = 100) -> FileStats:
    return stats(thread=thread, stack=stack, transferred=size, eof=True, ops=1)


def test_repeated_reads_fire_at_the_fifth_identical_read_then_start_again() -> None:
    rows = RepeatedReads(RULES)
    fired = [rows.observe(whole_read(), now=i * 1000) for i in range(10)]
    assert fired == [False, False, False, False, True] * 2


def test_a_different_thread_stack_or_size_is_another_row() -> None:
    rows = RepeatedReads(RULES)
    reads = [whole_read(), whole_read(thread=2), whole_read(stack=("b",)), whole_read(size=7)]
    fired = [rows.observe(read, now=i) for i in range(4) for read in reads]
    assert not any(fired)
    assert rows.observe(whole_read(), now=5)  # the first row's fifth


def test_a_gap_longer_than_the_window_or_a_write_starts_over() -> None:
    rows = RepeatedReads(IoRules(repeat_window_ns=100))
    assert not any(rows.observe(whole_read(), now=t) for t in (0, 100, 200, 300, 401))
    assert rows.observe(whole_read(), now=450) is False  # the row restarted at 401
    rows.forget("/data/a.bin")
    assert "/data/a.bin" not in rows


def test_the_remembered_paths_are_bounded() -> None:
    rows = RepeatedReads(RULES, max_paths=8)
    for i in range(100):
        read = whole_read()
        read.path = f"/data/{i}"
        rows.observe(read, now=i)
    assert len(rows._rows) <= 8


def issue(kind: str, count: int, path: str = "/data/a.bin") -> IoIssue:
    return IoIssue(
        type=kind,  # type: ignore[arg-type]
        path=path,
        thread="MainThread",
        ops=30,
        bytes=3000,
        buffer_size=100,
        cost_ms=1.5,
        frames=(IoFrame("load", "/app/load.py", 12), IoFrame("main", "/app/main.py", 3)),
        count=count,
    )


def test_the_last_record_of_a_key_wins_and_rows_follow_the_rules_order() -> None:
    records = [
        issue("unclosed", 1).to_record(),
        issue("small-buffer", 1).to_record(),
        issue("small-buffer", 4).to_record(),
        issue("small-buffer", 2, path="/data/b.bin").to_record(),
        Record("io-issue", "small-buffer:x", '{"type": "wrong"}'),
    ]
    decoded = decode_all(records)
    rows = build_io_issues(decoded.of(IoIssue))
    assert [(r.type, r.path, r.count) for r in rows] == [
        ("small-buffer", "/data/a.bin", 4),
        ("small-buffer", "/data/b.bin", 2),
        ("unclosed", "/data/a.bin", 1),
    ]
    assert rows[0].frames[0].function == "load"
    [rejected] = decoded.rejected
    assert rejected.collection == "io-issue" and rejected.key == "small-buffer:x"


def test_the_json_report_lists_io_issues_with_the_record_fields() -> None:
    records = [Record("launch-time", "100.0", "100.0"), issue("repeated-read", 3).to_record()]
    report = build_session_report(records, {"start_time": 100.0}, name="s")
    [listed] = to_json_dict(report)["io_issues"]
    assert listed == {
        "type": "repeated-read",
        "path": "/data/a.bin",
        "thread": "MainThread",
        "ops": 30,
        "bytes": 3000,
        "buffer_size": 100,
        "cost_ms": 1.5,
        "frames": [
            {"function": "load", "file": "/app/load.py", "line": 12},
            {"function": "main", "file": "/app/main.py", "line": 3},
        ],
        "count": 3,
        "unwatched": 0,
        "sampled_one_in": 1,
    }
    assert report.other_collections == ()


def test_the_console_report_has_an_io_section() -> None:
    records = [Record("launch-time", "100.0", "100.0"), issue("unclosed", 2).to_record()]
    report = build_session_report(records, {"start_time": 100.0}, name="s")
    out = io.StringIO()
    console.render(report, out, width=100)
    text = out.getvalue()
    assert "File I/O issues (1 kind, 2 in all)" in text
    assert "unclosed" in text and "load (/app/load.py:12)" in text and "/data/a.bin" in text


def sampled_issue() -> IoIssue:
    return msgspec.structs.replace(issue("unclosed", 2), unwatched=1200, sampled_one_in=16)


def test_an_issue_found_at_a_sampled_site_says_so_in_every_view() -> None:
    records = [Record("launch-time", "100.0", "100.0"), sampled_issue().to_record()]
    report = build_session_report(records, {"start_time": 100.0}, name="s")
    [listed] = to_json_dict(report)["io_issues"]
    assert (listed["unwatched"], listed["sampled_one_in"], listed["count"]) == (1200, 16, 2)
    out = io.StringIO()
    console.render(report, out, width=200)
    assert (
        "sampled site: 1,200 files opened here went unwatched (1 in 16 watched) before this was "
        "found; the count may miss some"
    ) in " ".join(out.getvalue().split())
    html = sections.io_issues([listed])
    assert "2 <small" in html and "1 in 16 watched, 1,200 files unwatched" in html
    # A fully watched site's issue shows its count alone.
    plain = build_session_report([issue("unclosed", 2).to_record()], {"start_time": 1.0}, name="s")
    unsampled = to_json_dict(plain)["io_issues"]
    assert "sampled" not in sections.io_issues(unsampled)


def test_records_written_before_sampling_read_as_fully_watched() -> None:
    old = issue("small-buffer", 3).to_record()  # defaults are left out: the old shape
    assert set(msgspec.json.decode(old.value)) == {
        "type", "path", "thread", "ops", "bytes", "buffer_size", "cost_ms", "frames", "count"
    }  # fmt: skip
    [decoded] = decode_all([old]).of(IoIssue)
    assert (decoded.unwatched, decoded.sampled_one_in, decoded.count) == (0, 1, 3)
    sampled = msgspec.json.decode(sampled_issue().to_record().value)
    assert (sampled["unwatched"], sampled["sampled_one_in"]) == (1200, 16)
