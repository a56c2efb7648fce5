"""Profiler windows: inline records, side files, and what is skipped."""

from __future__ import annotations

import json
from pathlib import Path

from hawkwatch.formats.cpu_profile import read_profiles
from hawkwatch.model import Record
from hawkwatch.model.profile import Profile, thread_frame
from hawkwatch.model.records import CpuProfile
from hawkwatch.model.stack import PyFrame, StackTable


def window(start: float) -> Profile:
    table = StackTable()
    sid = table.add((PyFrame("f", "/a.py", 1), thread_frame("MainThread")))
    return Profile(start, 1.0, 10, 10.0, table, {sid: (10, 7)})


def summary(file: str) -> str:
    """The record of a window the profiler wrote to the side file ``file``."""
    return CpuProfile.of(window(1.0)).summary(file).to_record().value


def test_inline_and_side_file_windows_are_read_oldest_first(tmp_path: Path) -> None:
    (tmp_path / "cpu-profile").mkdir()
    (tmp_path / "cpu-profile" / "5.000000.json").write_bytes(
        CpuProfile.of(window(5.0)).encode_value()
    )
    records = [
        Record("cpu-profile", "9.000000", CpuProfile.of(window(9.0)).encode_value().decode()),
        Record(  # as the profiler writes a large window: the summary and the side file's name
            "cpu-profile",
            "5.000000",
            CpuProfile.of(window(5.0)).summary("cpu-profile/5.000000.json").to_record().value,
        ),
    ]
    parsed = read_profiles(tmp_path, records)
    assert parsed.skipped == []
    assert [p.start_time for p in parsed.value] == [5.0, 9.0]
    assert parsed.value[0].counts == window(5.0).counts == {1: (10, 7)}


def test_missing_escaping_or_broken_windows_are_skipped(tmp_path: Path) -> None:
    (tmp_path.parent / "secret.json").write_bytes(CpuProfile.of(window(1.0)).encode_value())
    records = [
        Record("cpu-profile", "1", summary("cpu-profile/gone.json")),
        Record("cpu-profile", "2", summary("../secret.json")),
        Record("cpu-profile", "3", "{"),
        Record("cpu-profile", "4", json.dumps({"start": 1})),
    ]
    parsed = read_profiles(tmp_path, records)
    assert parsed.value == []
    reasons = [s.reason for s in parsed.skipped]
    assert len(reasons) == 4
    assert "gone.json: missing or empty" in reasons[0]
    assert "outside the session folder" in reasons[1] and "not JSON" in reasons[2]
    assert reasons[3] == "cpu-profile 4: Object missing required field `duration_s`"
