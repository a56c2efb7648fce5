"""The console renderer, rendered into StringIO at a fixed width and compared whole."""

from __future__ import annotations

import io
from datetime import UTC

import pytest

from hawkwatch.analysis.session_report import build_session_report
from hawkwatch.model import Record
from hawkwatch.model import collections as c
from hawkwatch.model.report import (
    EventRow,
    ExitState,
    LaunchBreakdown,
    LaunchPhase,
    SeriesStats,
    SessionInfo,
    SessionReport,
)
from hawkwatch.report import console
from tests.builders import (
    event_record,
    exit_state_record,
    gc_pause_record,
    hawkwatch_error_record,
    hawkwatch_launch_record,
    import_record,
    launch_time_record,
    series_records,
    span_record,
    time_key,
)

T0 = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC


@pytest.fixture(autouse=True)
def _plain_console(monkeypatch):
    """rich honours these variables even for a StringIO; the golden output has no colour."""
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "COLUMNS", "LINES"):
        monkeypatch.delenv(name, raising=False)


def render_text(report: SessionReport, width: int = 100) -> str:
    """The rendered report with trailing blanks cut (rich pads table rows to the table width)."""
    out = io.StringIO()
    console.render(report, out, width=width, tz=UTC)
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines()) + "\n"


def small_report() -> SessionReport:
    return SessionReport(
        session=SessionInfo(
            name="2023-11-14_22-13-20+000",
            source="hawkwatch",
            start_time=T0,
            end_time=T0 + 4,
            duration_s=4.0,
            record_count=9,
            app_name="shop",
            python="CPython 3.12.1",
            command="app.py --port 8080",
        ),
        launch=LaunchBreakdown(
            layout="hawkwatch",
            origin_time=T0,
            duration_ms=500.0,
            phases=(
                LaunchPhase("process_start", "process start", T0, 0.0, 0.0),
                LaunchPhase("main_started", "main started", T0 + 0.1, 100.0, 100.0),
                LaunchPhase("ready", "ready", T0 + 0.5, 500.0, 400.0),
            ),
            not_captured=("interpreter ready", "agent started"),
        ),
        resources=(
            SeriesStats(
                collection=c.CPU,
                label="CPU",
                unit="%",
                count=3,
                min=10.0,
                mean=25.0,
                p95=50.0,
                max=50.0,
                first_time=T0,
                last_time=T0 + 3,
                last=50.0,
                points=(10.0, 20.0, 20.0, 50.0),
                first_offset_s=0.0,
            ),
        ),
        events=(EventRow(T0 + 0.5, 0.5, "App::Ready"),),
        events_total=1,
        spans=None,
        gc=None,
        imports=None,
        exit=ExitState(T0 + 4, 4.0, True, 0, None, "agent"),
        errors=(),
        errors_total=0,
        other_collections=(),
        findings=(),
    )


EXPECTED_SMALL = """\
╭─ hawkwatch report · 2023-11-14_22-13-20+000 ─────────────────────────────────────────────────────╮
│ app       shop                                                                                   │
│ source    hawkwatch session                                                                      │
│ started   2023-11-14 22:13:20.000 +0000                                                          │
│ observed  4.0 s                                                                                  │
│ records   9                                                                                      │
│ command   app.py --port 8080                                                                     │
│ python    CPython 3.12.1                                                                         │
╰──────────────────────────────────────────────────────────────────────────────────────────────────╯

Launch · 500.0 ms from process start to ready
phase                 at       step
─────────────────────────────────────────────────────────
process start     0.0 ms     0.0 ms
main started    100.0 ms   100.0 ms   █████
ready           500.0 ms   400.0 ms   ███████████████████
not captured: interpreter ready, agent started

Resources
series    samples    min   mean    p95    max   last
────────────────────────────────────────────────────
CPU (%)         3   10.0   25.0   50.0   50.0   50.0
mean and p95 are weighted by time: each sample holds until the next

Resources over time
series        from    min          max
───────────────────────────────────────
CPU (%)   +0.000 s   10.0   ▁▃▃█   50.0
charts span first sample → session end; each block is the mean of its slice

Events (1)
      at   event        extra
─────────────────────────────
+0.500 s   App::Ready

Exit: clean, exit code 0 (reported by agent, at +4.000 s)
"""


def test_a_small_report_renders_exactly():
    assert render_text(small_report()) == EXPECTED_SMALL


def rich_records() -> list[Record]:
    return [
        launch_time_record(T0),
        hawkwatch_launch_record(
            process_start=T0, interpreter_ready=T0 + 0.04, main_started=T0 + 0.1, ready=T0 + 0.5
        ),
        *series_records(c.RESIDENT_FOOTPRINT, (T0 + 0.5, 100), (T0 + 2, 180)),
        *series_records(c.CPU, (T0 + 0.5, 12), (T0 + 1, 95.5)),
        event_record(T0 + 0.01, "App::Start"),
        event_record(T0 + 1, "[bold]sale[/bold] :smile:", "[red]x[/red]"),
        span_record(T0 + 1, "checkout", 250.0, thread="worker-1", error="TimeoutError"),
        gc_pause_record(T0 + 2, 2, 31.2, collected=5000),
        import_record("numpy", 95_000, 20_000),
        hawkwatch_error_record(T0 + 3, "io", "run", "OSError: boom"),
        exit_state_record(T0 + 4, clean=False, exit_code=None, signal=9, source="supervisor"),
        Record(
            "anr",
            "1700000003.000000_0",
            '{"duration":620.5,"startFrom":1700000003.0,"inBackground":false,"stacks":[],'
            '"loop":"asyncio","thread":"MainThread","fingerprint":"ab12",'
            '"point":{"index":0,"frames":[["render","/app/views.py",42,9]],"title":0,"run":9}}',
        ),
        Record("view-ctrl", "0", "{}"),
        Record(c.CPU, time_key(T0 + 3), "busy"),
    ]


def test_every_section_of_a_rich_report_appears():
    report = build_session_report(rich_records(), {"app_name": "shop"}, name="run-1")

    text = render_text(report)

    for heading in (
        "hawkwatch report · run-1",
        "Launch · 500.0 ms from process start to ready",
        "Resources\n",
        "Resources over time",
        "Events (2)",
        "Spans (1 in 1 name)",
        "Slowest spans",
        "GC pauses (1, 31.2 ms in all, longest 31.2 ms)",
        "Longest GC pauses",
        "Slowest imports (1 of 1 recorded)",
        "Exit: killed (signal 9, decided by supervisor)\n"
        "  - hawkwatch run saw the process killed by SIGKILL",
        "Monitor errors (1)",
        "Stalls (1, 620.5 ms in all; p50 620.5 ms, p95 620.5 ms, longest 620.5 ms)",
        "render (/app/views.py:42)",
        "Other collections",
        "Skipped records",
    ):
        assert heading in text, heading
    assert "value is not a number" in text
    assert "TimeoutError" in text
    assert "numpy" in text


def test_text_from_the_session_is_printed_literally():
    metadata = {"app_name": "[b]shop[/b] :smile:", "argv": ["app.py", "--tag=[dim]x[/dim]"]}
    report = build_session_report(rich_records(), metadata, name="run-1")

    text = render_text(report)

    assert "[bold]sale[/bold] :smile:" in text
    assert "[red]x[/red]" in text
    assert "[b]shop[/b] :smile:" in text
    assert "--tag=[dim]x[/dim]" in text


@pytest.mark.parametrize("width", [40, 60, 80, 160])
def test_any_width_renders_and_keeps_to_it(width):
    report = build_session_report(rich_records(), {}, name="run-1")

    text = render_text(report, width=width)

    assert max(len(line) for line in text.splitlines()) <= width
    assert "Skipped records" in text


def test_an_empty_session_says_what_is_missing():
    report = build_session_report([], {}, name="empty", skipped_lines=2)

    text = render_text(report, width=80)

    assert "hawkwatch report · empty" in text
    assert "Exit: MTHawkeye does not record how a process ended" in text
    assert "Skipped: the store reader also skipped 2 unreadable lines" in text
    assert "Launch" not in text
