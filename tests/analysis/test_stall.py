"""Matrix's point stack, fingerprints, title frames, faulthandler dumps, and the report section."""

from __future__ import annotations

import faulthandler
import json
import subprocess
import sys
import textwrap
from pathlib import Path

from hawkwatch.analysis.stall import (
    Sample,
    fingerprint,
    parse_faulthandler,
    percentile,
    point_stack,
    title_index,
)
from hawkwatch.analysis.stall_report import summarize_stalls
from hawkwatch.model import Record
from hawkwatch.model.records import Anr, HangKill, Rejected, decode_all
from hawkwatch.model.report import StallSummary
from hawkwatch.model.stack import PyFrame

MAIN = PyFrame("main", "/app/main.py", 10)
HANDLER = PyFrame("handler", "/app/views.py", 20)
QUERY = PyFrame("query", "/app/db.py", 30)
SLEEP_LIB = PyFrame("wait", "/usr/lib/python3/threading.py", 331)


def test_the_point_stack_is_the_longest_run_of_one_innermost_function() -> None:
    samples = [
        Sample(1.0, (HANDLER, MAIN)),
        Sample(2.0, (QUERY, HANDLER, MAIN)),
        Sample(3.0, (QUERY._replace(line=31), HANDLER, MAIN)),  # same function, another line
        Sample(4.0, (QUERY, HANDLER, MAIN)),
        Sample(5.0, (HANDLER, MAIN)),
    ]
    point = point_stack(samples)
    assert point is not None
    assert point.position == 3  # the most recent sample of the longest run
    assert point.run == 3
    assert point.stack[0] == QUERY
    assert point.repeats == (2, 5, 5)  # QUERY at line 30 in two samples; HANDLER, MAIN in all


def test_counts_of_merged_samples_weigh_and_ties_go_to_the_most_recent() -> None:
    samples = [Sample(1.0, (HANDLER, MAIN), 3), Sample(2.0, (QUERY, HANDLER, MAIN), 3)]
    point = point_stack(samples)
    assert point is not None
    assert point.position == 1
    assert point.repeats == (3, 6, 6)
    heavier = point_stack([Sample(1.0, (HANDLER, MAIN), 4), Sample(2.0, (QUERY, MAIN), 3)])
    assert heavier is not None and heavier.position == 0


def test_no_point_stack_without_frames() -> None:
    assert point_stack([]) is None
    assert point_stack([Sample(1.0, ())]) is None


def test_fingerprints_ignore_lines_and_tell_functions_apart() -> None:
    assert fingerprint((QUERY, HANDLER)) == fingerprint((QUERY._replace(line=99), HANDLER))
    assert fingerprint((QUERY, HANDLER)) != fingerprint((HANDLER, QUERY))
    assert len(fingerprint((QUERY,))) == 16


def test_the_title_frame_is_the_first_outside_library_code() -> None:
    def is_library(path: str) -> bool:
        return path.startswith("/usr/lib/")

    assert title_index((SLEEP_LIB, HANDLER, MAIN), is_library) == 1
    assert title_index((SLEEP_LIB,), is_library) == 0


def test_percentiles_interpolate() -> None:
    assert percentile([], 0.5) == 0.0
    assert percentile([400.0, 600.0], 0.5) == 500.0
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 0.95) == 4.8
    assert percentile([7.0], 0.95) == 7.0


def test_a_real_faulthandler_dump_is_read_thread_by_thread(tmp_path: Path) -> None:
    script = tmp_path / "dump.py"
    script.write_text(
        textwrap.dedent(
            """
            import faulthandler, sys, threading
            def inner():
                faulthandler.dump_traceback(file=sys.stdout, all_threads=True)
            def outer():
                inner()
            print(threading.get_ident())
            outer()
            """
        )
    )
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, check=True
    ).stdout
    ident_line, _, dump = out.partition("\n")
    stacks = parse_faulthandler(dump)
    stack = stacks[int(ident_line)]
    assert [f.func for f in stack] == ["inner", "outer", "<module>"]
    assert stack[0].file == str(script)
    assert stack[0].line == 4
    assert faulthandler.is_enabled() in (True, False)  # the parent's state is untouched


def test_a_truncated_or_garbled_dump_gives_what_it_holds() -> None:
    text = 'Thread 0x00000000000000ff (most recent call first):\n  File "/a.py", line 3 in f\n  Fi'
    assert parse_faulthandler(text) == {255: (PyFrame("f", "/a.py", 3),)}
    assert parse_faulthandler("garbage\n\x00\x01") == {}


def _anr(key: str, value: dict[str, object]) -> Record:
    return Record("anr", key, json.dumps(value))


def summarize(
    records: list[Record], start: float | None = None, **options: object
) -> tuple[StallSummary | None, list[Rejected]]:
    """The stall section of ``records`` (anr and hang-kill), and the records that did not decode."""
    decoded = decode_all(records)
    summary = summarize_stalls(decoded.keyed(Anr), decoded.of(HangKill), start, **options)  # type: ignore[arg-type]
    return summary, decoded.rejected


def _full(start: float, duration: float, frames: list[list[object]]) -> dict[str, object]:
    return {
        "duration": duration,
        "startFrom": start,
        "inBackground": False,
        "stacks": [{"time": start + 0.1, "frames": [f[:3] for f in frames], "capturedCount": 1}],
        "loop": "asyncio",
        "thread": "MainThread",
        "point": {"index": 0, "frames": frames, "title": 0, "run": 1},
        "fingerprint": "f1",
        "gc": {"collections": 1, "duration_ms": 12.5},
    }


def test_the_report_merges_parts_groups_by_fingerprint_and_reads_source_lines(
    tmp_path: Path,
) -> None:
    source = tmp_path / "views.py"
    source.write_text("import time\n\ndef handler():\n    time.sleep(1)\n")
    frames: list[list[object]] = [["handler", str(source), 4, 5], ["main", "/app/main.py", 9, 5]]
    first = _full(100.0, 500.0, frames)
    part = {"duration": 0, "startFrom": 100.3, "inBackground": False, "stacks": [{"time": 100.3}]}
    repeat = {**_full(200.0, 900.0, frames), "repeat_of": "100.000000_0", "repeat": 1}
    del repeat["point"], repeat["stacks"]
    other = _full(300.0, 2000.0, [["query", "/app/db.py", 30, 1]])
    other["fingerprint"] = "f2"
    records = [
        _anr("100.000000_0", first),
        _anr("100.000000_1", part),
        _anr("200.000000_0", repeat),
        _anr("300.000000_0", other),
        _anr("400.000000_0", {"startFrom": 1}),  # no duration: rejected
    ]
    lines: list[tuple[str, int]] = []

    def read_line(file: str, line: int) -> str:
        lines.append((file, line))
        return source.read_text().splitlines()[line - 1] + "\n" if file == str(source) else ""

    summary, rejected = summarize(records, 90.0, read_line=read_line)
    assert summary is not None
    assert summary.count == 3
    assert summary.total_ms == 3400.0
    assert summary.max_ms == 2000.0
    assert summary.p50_ms == 900.0
    assert [g.count for g in summary.groups] == [1, 2]  # f2 holds the larger total
    group = summary.groups[1]
    assert group.fingerprint == "f1"
    assert group.frame == f"handler ({source}:4)"
    assert group.source_line == "time.sleep(1)"
    assert summary.groups[0].source_line is None
    assert summary.longest[0].duration_ms == 2000.0
    assert summary.longest[1].frame == f"handler ({source}:4)"  # the repeat, through repeat_of
    assert summary.longest[1].gc_ms == 12.5
    assert rejected == [Rejected("anr", "400.000000_0", "Object missing required field `duration`")]


def test_mthawkeye_anr_records_group_by_title_frame() -> None:
    value = {
        "duration": 1500,
        "startFrom": 50.0,
        "inBackground": False,
        "stacks": [
            {
                "time": 50.5,
                "stackframes": "0x1a,0x2b",
                "titleframe": "0x2b",
                "capturedCount": 3,
                "threadCount": 9,
            }
        ],
    }
    summary, _ = summarize([_anr("50_0", value)])
    assert summary is not None
    assert summary.groups[0].fingerprint == "0x2b"
    assert summary.count == 1


def test_hang_kills_are_listed_even_without_stalls() -> None:
    kill = Record(
        "hang-kill",
        "123.000000",
        json.dumps(
            {
                "previous_session": "2026-01-01_00-00-00+000",
                "duration_ms": 800.0,
                "loop": "asyncio",
                "stack": [["stuck", "/app/x.py", 3]],
                "source": "marker",
            }
        ),
    )
    summary, _ = summarize([kill])
    assert summary is not None
    assert summary.count == 0
    assert summary.hang_kills[0].frame == "stuck (/app/x.py:3)"
    assert summary.hang_kills[0].previous_session == "2026-01-01_00-00-00+000"


def test_a_loop_sampled_mostly_at_its_blocking_line_is_named_at_that_line() -> None:
    """A heartbeat loop in ``time.sleep(1.0)``: C code, so the innermost Python frame is the
    loop itself, 18 samples at the sleep's line and one at the next as the sleep returns."""
    blocking = PyFrame("custom_loop", "/app/worker.py", 41)
    samples = [Sample(0.05 * i, (blocking, MAIN)) for i in range(18)]
    samples.append(Sample(0.95, (blocking._replace(line=42), MAIN)))
    point = point_stack(samples)
    assert point is not None
    assert point.stack[0].line == 41
    assert point.position == 17  # the latest sample at the blocking line
    assert point.run == 19  # one function throughout
    assert point.repeats == (18, 19)
