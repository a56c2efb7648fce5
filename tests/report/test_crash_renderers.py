"""Every crash fixture renders as classic text and as JSON, and round-trips its essentials."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hawkwatch.errors import FormatError
from hawkwatch.formats.crash import read_crash
from hawkwatch.model.crash import CrashFrame, CrashImage, CrashReport, CrashThread, SourceLocation
from hawkwatch.report.crash_json import crash_to_json
from hawkwatch.report.crash_text import render_crash_text

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "crash"
FILES = sorted(
    path
    for path in FIXTURES.rglob("*")
    if path.is_file()
    and path.suffix in {".txt", ".json", ".ips", ".crash"}
    and "snapshots" not in path.parts
)


def _read(path: Path) -> CrashReport:
    try:
        return read_crash(path).value
    except FormatError:
        pytest.skip(f"{path.name} is not a crash report")


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_fixture_renders_as_text_and_json(path):
    report = _read(path)
    text = render_crash_text(report)
    assert "Binary Images:" in text
    for thread in report.threads:
        assert f"Thread {thread.index}" in text
    document = json.loads(json.dumps(crash_to_json(report)))
    assert len(document["threads"]) == len(report.threads)
    assert len(document["images"]) == len(report.images)
    frames = [f for thread in document["threads"] for f in thread["frames"]]
    assert all(re.fullmatch(r"0x[0-9a-f]+", f["address"]) for f in frames)


def _symbolicated_report() -> CrashReport:
    image = CrashImage(
        "App", 0x100000000, 0x100007FFF, "arm64", "B6356BAD-2E31-3CBA-9E4F-E12DACA0D204"
    )
    inlined = [
        SourceLocation("inner()", "/src/a.c", 3, None, inlined=True),
        SourceLocation("outer()", "/src/a.c", 9, 20),
    ]
    frames = [
        CrashFrame(0x100001014, "App", symbol="outer()", symbol_offset=20, symbolicated=inlined),
        CrashFrame(0x100002000, "App"),
    ]
    thread = CrashThread(0, crashed=True, frames=frames, registers={"pc": 0x100001014})
    return CrashReport(format="ips", arch="arm64", process="App", pid=7, images=[image],
                       threads=[thread])  # fmt: skip


def test_text_expands_inlined_calls_and_lists_missing_images():
    report = _symbolicated_report()
    text = render_crash_text(report, missing=report.images)
    assert (
        "0   App                           \t0x0000000100001014 inner() (a.c:3) [inlined]" in text
    )
    assert "1   App                           \t0x0000000100001014 outer() + 20 (a.c:9)" in text
    assert "2   App                           \t0x0000000100002000 0x100000000 + 8192" in text
    assert "Thread 0 crashed with ARM Thread State (64-bit):" in text
    assert "Images without debug files:\nApp  <b6356bad2e313cba9e4fe12daca0d204>" in text


def test_json_frames_carry_symbol_file_line_and_inlined():
    document = crash_to_json(_symbolicated_report())
    frames = document["threads"][0]["frames"]
    assert [(f["symbol"], f["line"], f["inlined"], f["symbolicated"]) for f in frames] == [
        ("inner()", 3, True, True),
        ("outer()", 9, False, True),
        (None, None, False, False),
    ]
    assert frames[0]["address"] == "0x100001014" and frames[0]["image"] == "App"
    assert frames[2]["image_offset"] == 0x2000
    assert document["missing_debug_files"] == []


def test_date_time_reads_as_apple_writes_it():
    ips = render_crash_text(_read(FIXTURES / "ips" / "nullderef.ips"))
    text = render_crash_text(_read(FIXTURES / "apple-text" / "bruno.txt"))

    assert "Date/Time:           2026-07-23 01:29:01.9680 +0000\n" in ips  # from ISO-8601
    assert "2019-01-09 12:44:22.075 +0000\n" in text  # a text report keeps its own header
