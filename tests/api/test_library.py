"""What the CLI prints, a Python caller gets from the library: same sessions, same results."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import pytest

import hawkwatch
from hawkwatch.errors import NotASessionError, UsageError
from hawkwatch.model.records import CpuUsage
from tests.cli.test_profile_cli import KEY, ios_folder
from tests.cli.test_report_cli import hawkwatch as run_cli
from tests.cli.test_report_cli import make_session

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "crash"


def as_json(result: object) -> dict:
    out = io.StringIO()
    hawkwatch.write_output(result, "json", stdout=out)
    return json.loads(out.getvalue())


def test_load_session_by_name_path_or_newest(tmp_path) -> None:
    root = tmp_path / "sessions"
    now = time.time()  # retention removes sessions older than a week
    older = make_session(root, start=now - 100)
    newer = make_session(root, start=now - 50)
    assert hawkwatch.load_session(root=root).path == newer.path
    assert hawkwatch.load_session(older.name, root=root).path == older.path
    by_path = hawkwatch.load_session(older.path)
    assert by_path.source == "hawkwatch" and by_path.metadata["app_name"] == "shop"
    assert [r.value for r in by_path.of(CpuUsage)] == [10.0, 20.0, 50.0]
    assert by_path.decoded.rejected == []
    with pytest.raises(NotASessionError, match="no such session folder"):
        hawkwatch.load_session("nope", root=root)


def test_an_mthawkeye_folder_loads_with_its_side_files(tmp_path) -> None:
    session = hawkwatch.load_session(ios_folder(tmp_path))
    assert session.source == "mthawkeye"
    episodes = {episode.key: episode for episode in session.highload.value}
    assert set(episodes) == {KEY, "585734500.00"}
    assert episodes["585734500.00"].roots[0].count == 4  # its tree came from the -ext file
    result = hawkwatch.profile(session, episode=KEY)
    assert result.tree.total == 10 and result.source == f"cpu-highload episode {KEY}"


def test_the_report_from_python_is_what_the_command_prints(tmp_path) -> None:
    home = tmp_path / "home"
    made = make_session(home / "sessions")
    report = hawkwatch.session_report(hawkwatch.load_session(made.path))
    printed = run_cli(home, "report", "--json")
    assert printed.returncode == 0, printed.stderr
    assert as_json(report) == json.loads(printed.stdout)


def test_crash_groups_from_python_are_what_the_command_prints(tmp_path) -> None:
    groups = hawkwatch.group_crashes(FIXTURES / "kscrash", frames=3)
    printed = run_cli(tmp_path, "crashes", str(FIXTURES / "kscrash"), "--frames", "3", "--json")
    assert as_json(groups) == json.loads(printed.stdout)
    assert sum(group.count for group in groups.groups) == groups.reports == 10
    with pytest.raises(UsageError, match="--frames must be at least 1, not 0"):
        hawkwatch.group_crashes(FIXTURES / "kscrash", frames=0)
