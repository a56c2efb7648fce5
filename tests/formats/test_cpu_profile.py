"""Profiler windows: inline records, side files, and what is skipped."""

from __future__ import annotations

import json
from pathlib import Path

from hawkwatch.formats.cpu_profile import read_profiles
from hawkwatch.model import Record
from hawkwatch.model.profile import Profile, thread_frame
from hawkwatch.model.stack import PyFrame, StackTable


def window(start: float) -> Profile:
    table = StackTable()
    sid = table.add((PyFrame("f", "/a.py", 1), thread_frame("MainThread")))
    return Profile(start, 1.0, 10, 10.0, table, {sid: (10, 7)})


def test_inline_and_side_file_windows_are_read_oldest_first(tmp_path: Path) -> None:
    (tmp_path / "cpu-profile").mkdir()
    (tmp_path / "cpu-profile" / "5.000000.json").write_text(json.dumps(window(5.0).as_json()))
    records = [
        Record("cpu-profile", "9.000000", json.dumps(window(9.0).as_json())),
        Record(
            "cpu-profile",
            "5.000000",
            json.dumps({"start": 5.0, "file": "cpu-profile/5.000000.json"}),
        ),
    ]
    parsed = read_profiles(tmp_path, records)
    assert parsed.skipped == []
    assert [p.start_time for p in parsed.value] == [5.0, 9.0]
    assert parsed.value[0].counts == window(5.0).counts == {1: (10, 7)}


def test_missing_escaping_or_broken_windows_are_skipped(tmp_path: Path) -> None:
    (tmp_path.parent / "secret.json").write_text(json.dumps(window(1.0).as_json()))
    records = [
        Record("cpu-profile", "1", json.dumps({"file": "cpu-profile/gone.json"})),
        Record("cpu-profile", "2", json.dumps({"file": "../secret.json"})),
        Record("cpu-profile", "3", "{"),
        Record("cpu-profile", "4", json.dumps({"start": 1})),
    ]
    parsed = read_profiles(tmp_path, records)
    assert parsed.value == []
    reasons = [s.reason for s in parsed.skipped]
    assert len(reasons) == 4
    assert "outside the session folder" in reasons[1] and "not JSON" in reasons[2]
