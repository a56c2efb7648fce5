"""Every third-party crash fixture parses; Apple text matches the upstream parser's snapshots.

Snapshots: getsentry/apple-crash-report-parser ``tests/snapshots/*.snap`` (insta YAML). Their
``size`` is ``hi − lo`` of the ``Binary Images`` line, i.e. our inclusive ``end − load``.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
import yaml

from hawkwatch.formats.crash import APPLE_TEXT, IPS, KSCRASH, read_crash, sniff_crash
from hawkwatch.model.crash import CrashReport
from tests.formats.crash_fixtures import FIXTURES, fixture_files, fixture_id

SNAPSHOTS = sorted((FIXTURES / "apple-text" / "snapshots").glob("*.snap"))
EXPECTED_FORMAT = {"apple-text": APPLE_TEXT, "kscrash": None, "sentry-cocoa": KSCRASH, "ips": None}
# Fixtures that legitimately hold no thread with frames (header-only or threadless by design).
NO_FRAMES = {
    "apple-text/xcode16.txt",
    "sentry-cocoa/Crash-missing-crash.json",
    "sentry-cocoa/Crash-missing-crash-threads.json",
    "sentry-cocoa/NSExceptionWithoutReason.json",
    "sentry-cocoa/crash-bad-access.json",
    "sentry-cocoa/crash-bad-access-no-subcode.json",
    "sentry-cocoa/crash-sigterm.json",
    "sentry-cocoa/UnknownTypeException.json",  # frames only in the handler's crash
}


def test_the_fixtures_are_in_the_repository():
    files = fixture_files()
    assert len(files) == 69  # 5 text + 20 KSCrash + 32 SentryCrash + 12 .ips/.crash
    for folder in ("apple-text", "kscrash", "sentry-cocoa"):
        assert (FIXTURES / folder / "LICENSE").is_file()
    assert len(list((FIXTURES / "ips").glob("LICENSE-*"))) == 6


@pytest.mark.parametrize("path", fixture_files(), ids=fixture_id)
def test_every_fixture_parses(path: Path):
    parsed = read_crash(path)
    report = parsed.value
    folder = path.relative_to(FIXTURES).parts[0]
    expected = EXPECTED_FORMAT[folder]
    if folder == "kscrash":
        expected = KSCRASH if path.suffix == ".json" else APPLE_TEXT
    elif folder == "ips":
        expected = IPS if path.suffix == ".ips" else APPLE_TEXT
    assert report.format == expected
    assert sniff_crash(path.read_bytes()) == expected
    if fixture_id(path) in NO_FRAMES:
        return
    assert any(thread.frames for thread in report.threads)
    for thread in report.threads:
        for frame in thread.frames:
            assert frame.address >= 0


def _snapshot(path: Path) -> dict:
    text = path.read_text()
    return yaml.safe_load(text.split("\n---\n", 1)[1])


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.mark.parametrize("snap", SNAPSHOTS, ids=lambda p: p.stem.removeprefix("test_snapshots__"))
def test_apple_text_matches_the_upstream_snapshot(snap: Path):
    name = snap.stem.removeprefix("test_snapshots__")
    expected = _snapshot(snap)
    report = read_crash(FIXTURES / "apple-text" / f"{name}.txt").value

    nil = "00000000-0000-0000-0000-000000000000"
    assert (report.incident_id or nil).lower() == expected["incident_identifier"]
    if "timestamp" in expected:
        assert report.timestamp is not None
        assert _instant(report.timestamp) == _instant(expected["timestamp"])
    assert report.metadata.get("Code Type") == expected.get("code_type")
    assert report.process_path == expected.get("path")
    assert report.application_specific_info == expected.get("application_specific_information")
    assert int(report.metadata.get("Report Version", 0)) == expected["report_version"]
    for key, value in expected["metadata"].items():
        assert report.metadata[key] == str(value), key
    _compare_threads(report, expected["threads"])
    _compare_images(report, expected["binary_images"])


def _compare_threads(report: CrashReport, expected: list[dict]) -> None:
    assert [thread.index for thread in report.threads] == [t["id"] for t in expected]
    for thread, want in zip(report.threads, expected, strict=True):
        assert thread.crashed == want["crashed"]
        assert thread.name == want.get("name")
        got = [
            {
                key: value
                for key, value in (
                    ("module", frame.image),
                    ("symbol", frame.symbol),
                    ("filename", frame.file),
                    ("lineno", frame.line),
                    ("instruction_addr", hex(frame.address)),
                )
                if value is not None
            }
            for frame in thread.frames
        ]
        assert got == want["frames"]
        registers = {name: hex(value) for name, value in thread.registers.items()}
        assert registers == want.get("registers", {})


def _compare_images(report: CrashReport, expected: list[dict]) -> None:
    assert len(report.images) == len(expected)
    for image, want in zip(report.images, expected, strict=True):
        assert hex(image.load_address) == want["addr"]
        assert image.end_address is not None
        assert image.end_address - image.load_address == want["size"]
        assert image.debug_id == want["uuid"].replace("-", "")
        assert image.arch == (want.get("arch") or "").strip("()") or None
        assert image.version == want.get("version")
        assert image.name == want["name"]
        assert image.path == want["path"]
