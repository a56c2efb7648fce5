"""``hawkwatch crashes`` and ``hawkwatch jetsam``: output, JSON twins, one-line errors."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from hawkwatch.cli import main
from tests.formats.crash_fixtures import FIXTURES
from tests.formats.jetsam_sample import APP_UUID, jetsam_body, jetsam_bytes


@pytest.fixture
def crash_folder(tmp_path):
    folder = tmp_path / "crashes"
    (folder / "sub").mkdir(parents=True)
    for name in ("BadPointer.json", "BadPointer.txt", "CrashInHandler.json", "Abort.txt"):
        shutil.copy(FIXTURES / "kscrash" / name, folder / name)
    shutil.copy(FIXTURES / "ips" / "nsexcrash.ips", folder / "sub" / "nsexcrash.ips")
    (folder / "notes.txt").write_text("not a crash report\n")
    return folder


def test_crashes_groups_a_folder(crash_folder, capsys):
    assert main(["crashes", str(crash_folder)]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0].split() == ["COUNT", "FIRST", "SEEN", "LAST", "SEEN", "GROUP", "CRASH"]
    assert lines[1].split()[0] == "2"  # BadPointer and CrashInHandler: same crash site
    assert "EXC_BAD_ACCESS (SIGSEGV) in Crash-Tester -[Crasher dereferenceBadPointer]" in lines[1]
    assert lines[2].strip() == "representative: BadPointer.json"
    assert "4 crash reports in 3 groups" in err
    assert "1 duplicates of the same incident counted once" in err
    assert "1 file not read (first: notes.txt: not a crash report" in err


def test_crashes_json_twin(crash_folder, capsys):
    assert main(["crashes", str(crash_folder), "--json", "--frames", "1"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["reports"] == 4
    assert document["duplicates"] == 1
    [unread] = document["not_read"]
    assert unread["path"] == "notes.txt"
    assert unread["reason"].startswith("not a crash report")
    top = document["groups"][0]
    assert top["count"] == 2
    assert top["reports"] == ["BadPointer.json", "CrashInHandler.json"]
    assert top["components"] == [
        "EXC_BAD_ACCESS (SIGSEGV)",
        "Crash-Tester -[Crasher dereferenceBadPointer]",
    ]
    assert top["first_seen"] == "1970-01-17T18:46:32+00:00"
    assert top["last_seen"] == "1970-01-17T19:45:51+00:00"
    nsexc = next(g for g in document["groups"] if g["process"] == "nsexcrash")
    assert nsexc["reports"] == ["sub/nsexcrash.ips"]
    assert nsexc["variant"] == "app"


def test_jetsam_text(tmp_path, capsys):
    path = tmp_path / "JetsamEvent-2020-10-15-172958.ips"
    path.write_bytes(jetsam_bytes())
    assert main(["jetsam", str(path)]) == 0
    out = capsys.readouterr().out
    assert "app:             TouchCanvas [1052] (frontmost, resume)" in out
    assert "reason:          per-process-limit" in out
    assert "memory limit:    2,150,924,288 B (2,051.3 MiB) = 131,282 pages × 16,384 B" in out
    assert "largest process: Photos [222] (background)" in out
    assert "killed:          2 of 3 processes" in out


def test_jetsam_json_and_app_choice(tmp_path, capsys):
    path = tmp_path / "JetsamEvent.ips"
    path.write_bytes(jetsam_bytes(jetsam_body(page_size=4_096)))
    assert main(["jetsam", str(path), "--json", "--app", APP_UUID]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["app"]["name"] == "TouchCanvas"
    assert document["app"]["memory_limit_bytes"] == 131_282 * 4_096
    assert document["largest_process"]["name"] == "Photos"
    assert document["largest_process"]["memory_limit_bytes"] is None
    assert [p["reason"] for p in document["killed"]] == ["vm-pageshortage", "per-process-limit"]
    assert main(["jetsam", str(path), "--app", "Nope"]) == 1
    assert "no process named 'Nope'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("command", "content", "message"),
    [
        ("jetsam", b'{"bug_type":"309"}\n{"threads":[]}', "is not a JetsamEvent (298)"),
        ("jetsam", b"\x00\x01binary", "no .ips metadata line"),
        ("crashes", None, "input: no such file or folder"),
    ],
)
def test_errors_are_one_line_without_traceback(tmp_path, command, content, message):
    path = tmp_path / "input"
    if content is not None:
        path.write_bytes(content)
    result = subprocess.run(
        [sys.executable, "-m", "hawkwatch", command, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_crashes_on_a_folder_with_nothing_readable_fails(tmp_path, capsys):
    (tmp_path / "a.txt").write_text("hello\n")
    assert main(["crashes", str(tmp_path)]) == 1
    assert "no crash reports under" in capsys.readouterr().out


def test_crashes_can_symbolicate_first(crash_folder, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HAWKWATCH_HOME", str(tmp_path / "home"))
    assert main(["crashes", str(crash_folder), "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    empty = tmp_path / "no-debug-files"
    empty.mkdir()
    assert main(["crashes", str(crash_folder), "--json", "--symbols", str(empty)]) == 0
    assert json.loads(capsys.readouterr().out)["groups"] == plain["groups"]
