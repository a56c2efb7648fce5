"""The CPU section: built from episodes and profiler windows, rendered at a fixed width."""

from __future__ import annotations

import dataclasses
import io
from datetime import UTC

import pytest

from hawkwatch.analysis.cpu_report import build_cpu_summary
from hawkwatch.model.profile import CallNode, HighLoadEpisode, Profile, ThreadShare, thread_frame
from hawkwatch.model.stack import PyFrame, StackTable
from hawkwatch.report import console, json_report
from tests.report.test_console import small_report

T0 = 1_700_000_000.0
MAIN = PyFrame("main", "/app/m.py", 1)
F = PyFrame("f", "/app/m.py", 10)
F2 = PyFrame("f", "/app/m.py", 11)
G = PyFrame("g", "/app/m.py", 20)


@pytest.fixture(autouse=True)
def _plain_console(monkeypatch):
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "COLUMNS", "LINES"):
        monkeypatch.delenv(name, raising=False)


def episodes() -> list[HighLoadEpisode]:
    roots = (CallNode(MAIN, 10, (CallNode(F, 5), CallNode(F2, 1), CallNode(G, 4))),)
    return [
        HighLoadEpisode(
            "1700000010.000000", T0 + 10, 61.5, 97.25, roots, (ThreadShare("MainThread", 7, 0.9),)
        ),
        HighLoadEpisode("1700000100.000000", T0 + 100, 75.0, 88.0, ()),
    ]


def window() -> Profile:
    table = StackTable()
    busy = table.add((F, MAIN, thread_frame("MainThread")))
    idle = table.add((G, thread_frame("idle")))
    return Profile(T0, 60.0, 1200, 20.0, table, {busy: (600, 450), idle: (600, 0)}, 0.01, 0.3)


def test_episodes_longest_first_with_top_frames_by_function() -> None:
    summary = build_cpu_summary(episodes(), [window()], start=T0)
    assert summary is not None
    assert [row.key for row in summary.episodes] == ["1700000100.000000", "1700000010.000000"]
    row = summary.episodes[1]
    assert row.offset_s == 10 and row.samples == 10 and row.threads == ("MainThread 90%",)
    assert [(f.frame, f.self_percent) for f in row.top_frames] == [
        ("f (/app/m.py)", 60.0),
        ("g (/app/m.py)", 40.0),
    ]
    assert summary.profiler is not None
    assert summary.profiler.samples == 1200 and summary.profiler.cost_percent == 0.5
    # the shares are of the 450 cpu-mode samples, and the count shown is that one (issue 13 §4.4)
    assert summary.profiler.mode_samples == 450 and summary.profiler.sampler == "in-process"
    assert summary.profiler.top_frames[0].frame == "f (/app/m.py)"
    assert summary.profiler.top_frames[0].self_percent == 100.0  # cpu mode: the idle thread is out


def test_nothing_to_show_is_none() -> None:
    assert build_cpu_summary([], [], start=None) is None


EXPECTED = """\
CPU high load (2 episodes)
      at   lasting   average   samples   top frames (self %)
────────────────────────────────────────────────────────────────
+100.0 s    75.0 s     88.0%         0
 +10.0 s    61.5 s     97.2%        10    60.0% f (/app/m.py)
                                          40.0% g (/app/m.py)
                                         threads: MainThread 90%

CPU profile (in-process, 450 cpu samples over 60.0 s, 20.0 Hz, sampler cost 0.50% of a core)
  self       95% CI    total   frame
────────────────────────────────────────────
100.0%   99.2–100.0   100.0%   f (/app/m.py)
cpu mode: samples of threads that were running; export with 'hawkwatch profile SESSION --format svg'
"""


def test_the_section_renders_exactly_after_the_resources() -> None:
    report = dataclasses.replace(
        small_report(), cpu=build_cpu_summary(episodes(), [window()], start=T0)
    )
    out = io.StringIO()
    console.render(report, out, width=100, tz=UTC)
    text = "\n".join(line.rstrip() for line in out.getvalue().splitlines()) + "\n"
    start = text.index("CPU high load")
    end = text.index("\n\n", text.index("cpu mode:"))
    assert text[start : end + 1] == EXPECTED


def test_the_json_twin_carries_the_section() -> None:
    report = dataclasses.replace(small_report(), cpu=build_cpu_summary(episodes(), [], start=T0))
    data = json_report.to_json_dict(report)
    assert data["cpu"]["episodes_total"] == 2 and data["cpu"]["profiler"] is None
    assert data["cpu"]["episodes"][1]["top_frames"][0] == {
        "frame": "f (/app/m.py)",
        "self_percent": 60.0,
        "total_percent": 60.0,
        "self_low_percent": 31.27,  # Wilson 95 %: 6 of 10 samples
        "self_high_percent": 83.18,
    }


def test_a_py_spy_window_speaks_for_cpu_mode_and_the_in_process_one_is_not_counted_twice() -> None:
    table = StackTable()
    busy = table.add((G, MAIN, thread_frame("MainThread")))
    outside = Profile(T0, 60.0, 300, 100.0, table, {busy: (0, 300)}, sampler="py-spy")
    summary = build_cpu_summary([], [window(), outside], start=T0)
    assert summary is not None and summary.profiler is not None
    p = summary.profiler
    assert (p.sampler, p.windows, p.mode_samples, p.rate_hz) == ("py-spy", 1, 300, 100.0)
    assert [f.frame for f in p.top_frames] == ["g (/app/m.py)"]
    assert p.top_frames[0].self_low_percent == pytest.approx(98.74, abs=0.01)


def test_a_short_burn_explains_why_no_episode_shows() -> None:
    burn = {"start": T0 + 5, "lasting_s": 2.1, "average_percent": 97.0, "min_duration_s": 60.0}
    summary = build_cpu_summary([], [], start=T0, short_burn=burn)
    assert summary is not None and summary.short_burn is not None
    assert summary.short_burn.lasting_s == 2.1
    out = io.StringIO()
    console.render(dataclasses.replace(small_report(), cpu=summary), out, width=200, tz=UTC)
    assert (
        "No CPU high-load episode: the longest burn (2.1 s at 97%) was shorter than "
        "cpu.highload_min_duration_s (60 s)" in out.getvalue()
    )
    assert build_cpu_summary(episodes(), [], start=T0, short_burn=burn).short_burn is None
    assert json_report.to_json_dict(dataclasses.replace(small_report(), cpu=summary))["cpu"][
        "short_burn"
    ]["min_duration_s"] == 60.0


GAVE_UP = "Permission Denied: Try running again with elevated permissions"


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        ({}, None),
        ({"profiler": {"outside": "", "budget": 0.005, "rate_hz": 0.0}}, None),
        # py-spy sampled: its note has windows and no give-up
        ({"profiler_outside": {"windows": 4, "errors": [], "gave_up": None}}, None),
        (
            {
                "profiler_outside": {"windows": 0, "errors": [GAVE_UP] * 3, "gave_up": GAVE_UP},
                "profiler": {"budget": 0.005, "rate_hz": 0.0,
                             "outside_stopped": {"reason": GAVE_UP, "time": T0}},
            },
            f"py-spy could not sample this process ({GAVE_UP}); the profile is the in-process "
            "sampler's, at the whole profiler.budget (0.005 of a core)",
        ),
        (  # an exec'd or forked process: its own agent's note only, a fixed rate
            {"profiler": {"budget": 0.005, "rate_hz": 100.0,
                          "outside_stopped": {"reason": "py-spy exit 1", "time": T0}}},
            "py-spy could not sample this process (py-spy exit 1); the profile is the "
            "in-process sampler's, at the fixed profiler.rate_hz (100 Hz)",
        ),
        (  # py-spy died after two windows
            {"profiler_outside": {"windows": 2, "errors": ["a", "b"], "gave_up": "a"},
             "profiler": {"budget": 0.005, "rate_hz": 0.0,
                          "outside_stopped": {"reason": "a", "time": T0}}},
            "py-spy stopped sampling after 2 windows (a); from then on the profile is the "
            "in-process sampler's, at the whole profiler.budget (0.005 of a core)",
        ),
        (  # a session from before the give-up note, or the program ended before it looked
            {"profiler_outside": {"windows": 0, "errors": ["Error: no such pid"]},
             "profiler": {"budget": 0.001, "rate_hz": 0.0}},
            "py-spy could not sample this process (Error: no such pid); the profile is the "
            "in-process sampler's alone, at its share of the budget",
        ),
        ({"profiler_outside": "garbage", "profiler": {"outside_stopped": 3}}, None),
    ],
)
def test_the_note_says_why_py_spy_did_not_sample(metadata, expected) -> None:
    from hawkwatch.analysis.cpu_report import outside_sampler_note

    assert outside_sampler_note(metadata) == expected


def test_the_note_is_one_line_above_the_profile_and_in_the_json() -> None:
    note = "py-spy could not sample this process (py-spy exit 1); the profile is the in-process"
    summary = build_cpu_summary([], [window()], start=T0, outside_note=note)
    report = dataclasses.replace(small_report(), cpu=summary)
    out = io.StringIO()
    console.render(report, out, width=200, tz=UTC)
    lines = [line.rstrip() for line in out.getvalue().splitlines()]
    at = lines.index(note)
    assert lines[at + 2].startswith("CPU profile (in-process, 450 cpu samples")
    assert json_report.to_json_dict(report)["cpu"]["outside_note"] == note
    # the note alone is a section: a run whose program ended before any window
    alone = build_cpu_summary([], [], start=T0, outside_note=note)
    assert alone is not None and alone.outside_note == note and alone.profiler is None
