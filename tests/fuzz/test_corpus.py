"""The adversarial corpus, run in CI: every reader and session command on mutated inputs.

0 internal errors, 0 hangs, bounded memory; the counts are printed. Seeded: a failure's label
rebuilds its input (``corpus.crash_inputs(SEED, PER_SEED)``, ``corpus.build_session``).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from hawkwatch.analysis.crash_grouping import fingerprint, group_crashes
from hawkwatch.formats.apple_crash import parse_apple_crash
from hawkwatch.formats.cpu_profile import read_profiles
from hawkwatch.formats.crash import parse_crash
from hawkwatch.formats.hawkeye import read_dyld_images
from hawkwatch.formats.hawkeye_cpu import read_highload
from hawkwatch.formats.hawkeye_stacks import read_session_stacks
from hawkwatch.formats.ips import parse_ips
from hawkwatch.formats.jetsam import parse_jetsam
from hawkwatch.formats.kscrash import parse_kscrash
from hawkwatch.report.crash_json import crash_to_json
from hawkwatch.report.crash_text import render_crash_text
from hawkwatch.store import Session, list_sessions, read_records
from tests.fuzz import corpus
from tests.fuzz.harness import SUMMARY, Tally, cli, run_one

SEED = 20261124
PER_SEED = 12  # mutations per crash fixture
SESSIONS = 160  # corrupted session folders
MEMORY_EVERY = 7  # trace memory on every 7th input (tracing slows the run)
MEMORY_LIMIT = 256 * 2**20  # no input here may cost more to read than this

# The reader of each fixture folder's own format (``parse_crash`` dispatches every input).
OWN_READER: dict[str, Callable[[bytes], Any]] = {
    "apple-text": lambda data: parse_apple_crash(data, source="fuzz"),
    "ips": lambda data: parse_ips(data, source="fuzz"),
    "kscrash": lambda data: parse_kscrash(data, source="fuzz"),
    "sentry-cocoa": lambda data: parse_kscrash(data, source="fuzz"),
    "jetsam-sample": lambda data: parse_jetsam(data, source="fuzz"),
}


def _crash_and_downstream(data: bytes) -> None:
    """Read, then everything a command does with a report: fingerprint, group, render."""
    report = parse_crash(data, source="fuzz").value
    fingerprint(report)
    group_crashes([("fuzz", report)])
    render_crash_text(report)
    crash_to_json(report)


def _report(tally: Tally, failures_of: str, printed: list[str]) -> None:
    printed.append(tally.line(failures_of))
    assert tally.counts["internal"] == 0, "\n".join(tally.failures[:20])
    assert tally.counts["hang"] == 0, "\n".join(tally.failures[:20])
    assert tally.peak_bytes < MEMORY_LIMIT, tally.peak_input


@pytest.fixture
def printed() -> list[str]:
    return SUMMARY


def test_crash_and_jetsam_readers_on_the_mutated_corpus(printed: list[str]) -> None:
    tally = Tally()
    for index, item in enumerate(corpus.crash_inputs(SEED, PER_SEED)):
        data, measure = item.data, index % MEMORY_EVERY == 0
        reader = OWN_READER[item.name.split("/")[0].split("#")[0]]
        run_one(tally, f"own reader({item.name})", partial(reader, data), measure=measure)
        run_one(
            tally,
            f"parse_crash+({item.name})",
            partial(_crash_and_downstream, data),
            measure=measure,
        )
        run_one(tally, f"parse_jetsam({item.name})", partial(parse_jetsam, data), measure=False)
    _report(tally, "crash/jetsam readers", printed)
    assert tally.counts["ok"] > 500 and tally.counts["rejected"] > 500  # both sides exercised


def _session_calls(folder: Path) -> dict[str, Callable[[], object]]:
    root = str(folder.parent)
    return {
        "read_records": lambda: read_records(folder),
        "metadata": lambda: (Session(folder).metadata, Session(folder).start_time),
        "list_sessions": lambda: [s.start_time for s in list_sessions(folder.parent)],
        "read_highload": lambda: read_highload(
            folder, read_records(folder).records, is_hawkwatch=True
        ),
        "read_profiles": lambda: read_profiles(folder, read_records(folder).records),
        "read_dyld_images": lambda: read_dyld_images(folder),
        "read_session_stacks": lambda: read_session_stacks(folder),
        "cli sessions": lambda: cli(["sessions", "--root", root]),
        "cli sessions --json": lambda: cli(["sessions", "--json", "--root", root]),
        "cli records --json": lambda: cli(["records", "--json", str(folder)]),
        "cli report --json": lambda: cli(["report", "--json", str(folder)]),
        "cli report": lambda: cli(["report", str(folder)]),
        "cli profile": lambda: cli(["profile", str(folder), "--format", "collapsed"]),
        "cli profile --list": lambda: cli(["profile", str(folder), "--list"]),
    }


def test_session_readers_and_commands_on_corrupted_session_folders(
    tmp_path: Path, printed: list[str]
) -> None:
    tally = Tally()
    for n in range(SESSIONS):
        folder = tmp_path / str(n) / f"2024-06-01_10-00-{n % 60:02d}+{n:03d}"
        what = corpus.build_session(folder, SEED, n)
        for name, call in _session_calls(folder).items():
            run_one(tally, f"{name}(session {n}: {what})", call, measure=n % MEMORY_EVERY == 0)
    _report(tally, "session readers and commands", printed)
    assert tally.counts["ok"] > 500 and tally.counts["rejected"] > 50


def test_a_sample_through_the_real_cli(tmp_path: Path, printed: list[str]) -> None:
    """The console script in a subprocess: one clear line or output, never a traceback."""
    hawkwatch = Path(sys.executable).with_name("hawkwatch")
    inputs = list(corpus.crash_inputs(SEED, 2))[::17][:6]
    runs = []
    for i, item in enumerate(inputs):
        path = tmp_path / f"input-{i}.ips"
        path.write_bytes(item.data)
        runs += [
            (item.name, ["symbolicate", "--format", "json", str(path)]),
            (item.name, ["jetsam", str(path)]),
        ]
    runs.append(("crashes folder", ["crashes", "--json", str(tmp_path)]))
    for n in range(0, 24, 6):
        folder = tmp_path / f"s{n}" / f"2024-06-01_10-00-00+{n:03d}"
        what = corpus.build_session(folder, SEED, n)
        runs += [
            (what, ["report", str(folder)]),
            (what, ["records", str(folder)]),
            (what, ["sessions", "--root", str(folder.parent)]),
        ]
    bad = []
    for label, args in runs:
        result = subprocess.run(
            [str(hawkwatch), *args], capture_output=True, text=True, timeout=120, check=False
        )
        if "Traceback" in result.stderr or "internal error" in result.stderr:
            bad.append(f"{label}: {args[0]}: {result.stderr[-300:]}")
    printed.append(f"real CLI sample: {len(runs)} runs, {len(bad)} with a traceback")
    assert bad == []
