"""The output convention on every printing command, usage errors, and tables at 80 columns."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from hawkwatch.model.report import StallRow, StallSummary
from hawkwatch.report import console
from tests.cli.test_profile_cli import ios_folder
from tests.cli.test_report_cli import hawkwatch, make_session
from tests.formats.jetsam_sample import jetsam_bytes
from tests.report.test_console import small_report

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "crash"


@pytest.fixture
def inputs(tmp_path):
    """A home with one session, an iOS folder, a JetsamEvent file."""
    home = tmp_path / "home"
    session = make_session(home / "sessions")
    jetsam_file = tmp_path / "jetsam.ips"
    jetsam_file.write_bytes(jetsam_bytes())
    return {
        "home": home,
        "session": session,
        "ios": ios_folder(tmp_path),
        "jetsam": jetsam_file,
    }


def commands(inputs) -> dict[str, list[str]]:
    """Every command that prints a result, with the JSON ``format`` it prints."""
    return {
        "hawkwatch-report": ["report"],
        "hawkwatch-profile": ["profile", str(inputs["ios"])],
        "hawkwatch-profile-list": ["profile", str(inputs["ios"]), "--list"],
        "hawkwatch-crash-groups": ["crashes", str(FIXTURES / "kscrash")],
        "hawkwatch-jetsam": ["jetsam", str(inputs["jetsam"])],
        "hawkwatch-sessions": ["sessions"],
        "hawkwatch-records": ["records"],
        "hawkwatch-options": ["check-config"],
        "hawkwatch-debug-files": ["symbols", "list"],
        "hawkwatch-dump": ["debug", "dump", str(inputs["session"].path / "records.mtlog")],
        "hawkwatch-crash": ["symbolicate", str(FIXTURES / "ips" / "nullderef.ips")],
    }


def test_json_and_format_json_and_output_file_agree_on_every_command(inputs) -> None:
    home = inputs["home"]
    for expected, command in commands(inputs).items():
        alias = hawkwatch(home, *command, "--json")
        assert alias.returncode == 0, (command, alias.stderr)
        spelled = hawkwatch(home, *command, "--format", "json")
        assert spelled.stdout == alias.stdout, command
        target = home / f"{expected}.json"
        to_file = hawkwatch(home, *command, "--json", "-o", str(target))
        assert to_file.stdout == ""
        document = json.loads(target.read_text())
        assert (document["format"], document["format_version"]) == (expected, 1)
        if expected not in {"hawkwatch-options", "hawkwatch-debug-files"}:  # paths differ
            assert document == json.loads(alias.stdout), command


def test_binary_output_to_a_terminal_is_refused_with_exit_2(inputs) -> None:
    primary, secondary = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "hawkwatch", "profile", str(inputs["ios"]), "--format", "pprof"],
            stdout=secondary,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=60,
        )
    finally:
        os.close(secondary)
        os.close(primary)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "hawkwatch: pprof output is binary and stdout is a terminal; "
        "write it to a file with -o FILE.pb.gz (or pipe it)"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["crashes", "{fixtures}", "--frames", "0"], "--frames must be at least 1, not 0"),
        (["crashes", "{tmp}/nowhere"], "{tmp}/nowhere: no such file or folder"),
        (["profile", "{ios}", "--symbols", "{tmp}/typo"], "--symbols {tmp}/typo: no such folder"),
        (["sessions", "--root", "{tmp}/nowhere"], "{tmp}/nowhere: no such folder"),
        (["report", "{fixtures}/nullderef.ips"], "nullderef.ips: a file, not a session folder"),
        (["crashes", "{fixtures}", "--format", "html"], "invalid choice: 'html'"),
    ],
)
def test_usage_errors_exit_2_with_one_clear_line(inputs, tmp_path, args, message) -> None:
    values = {"fixtures": str(FIXTURES / "ips"), "tmp": str(tmp_path), "ios": str(inputs["ios"])}
    done = hawkwatch(inputs["home"], *(arg.format(**values) for arg in args))
    assert done.returncode == 2
    assert done.stdout == ""
    assert message.format(**values) in done.stderr
    assert "Traceback" not in done.stderr
    if "invalid choice" not in message:
        assert len(done.stderr.splitlines()) == 1


def test_one_report_in_one_group_is_said_in_the_singular(inputs) -> None:
    done = hawkwatch(inputs["home"], "crashes", str(FIXTURES / "ips" / "nullderef.ips"))
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("hawkwatch: 1 crash report in 1 group from ")


def test_an_empty_jetsam_file_says_so(inputs, tmp_path) -> None:
    empty = tmp_path / "empty.ips"
    empty.write_bytes(b"")
    done = hawkwatch(inputs["home"], "jetsam", str(empty))
    assert done.returncode == 1
    assert done.stderr == f"hawkwatch: {empty}: empty file; expected a JetsamEvent .ips report\n"


def test_run_still_takes_the_old_o_spelling_with_a_note(inputs, tmp_path) -> None:
    script = tmp_path / "app.py"
    script.write_text("print('ran')\n")
    done = hawkwatch(
        inputs["home"], "run", "-o", "gc.threshold_ms=7", "--", sys.executable, str(script)
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ran\n"
    assert "-o NAME=VALUE is deprecated here" in done.stderr
    newest = max((inputs["home"] / "sessions").iterdir())
    options = hawkwatch(inputs["home"], "check-config", "--json", "-c", "gc.threshold_ms=7")
    rows = {row["option"]: row for row in json.loads(options.stdout)["options"]}
    assert rows["gc.threshold_ms"]["value"] == 7.0
    assert newest.name != inputs["session"].name  # the run made its own session


def test_sessions_at_80_columns_keep_whole_names(inputs) -> None:
    root = inputs["home"] / "sessions"
    make_session(root, start=1_700_000_100.0, app_name="an-application-with-a-very-long-name")
    done = subprocess.run(
        [sys.executable, "-m", "hawkwatch", "sessions", "--root", str(root)],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "80"},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert max(len(line) for line in done.stdout.splitlines()) <= 80
    names = [path.name for path in root.iterdir()]
    for name in names:
        assert any(line.startswith(name + " ") for line in done.stdout.splitlines()), name


def test_check_config_at_80_columns_keeps_every_source_whole(tmp_path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}
    done = subprocess.run(
        [sys.executable, "-m", "hawkwatch", "check-config"],
        capture_output=True,
        text=True,
        env={**env, "COLUMNS": "80", "HAWKWATCH_APP_NAME": "shop"},
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    app = next(line for line in lines if line.startswith("app.name "))
    assert app.split()[-2:] == ["environment", "HAWKWATCH_APP_NAME"]
    assert any(line.split()[-1:] == ["default"] for line in lines)


def test_longest_stalls_at_80_columns_keep_file_and_line() -> None:
    frame = "render_report.<locals>.<genexpr> (/srv/app/services/reporting/stall_demo.py:1234)"
    row = StallRow(100.0, 2.8, 732.3, "asyncio", "MainThread", frame, 0.2, "watchdog")
    stalls = StallSummary(1, 732.3, 732.3, 732.3, 732.3, (), (row,))
    report = dataclasses.replace(small_report(), stalls=stalls)
    out = io.StringIO()
    console.render(report, out, width=80)
    text = out.getvalue()
    section = text[text.index("Longest stalls") :].split("\n\n")[0].splitlines()[3:]
    assert max(len(line) for line in text.splitlines()) <= 80
    # the terminal report shortens the path (report/paths.py); the line number survives
    assert "".join("".join(line.split()) for line in section).endswith(
        "render_report.<locals>.<genexpr>(reporting/stall_demo.py:1234)"
    )


def test_debug_dump_escapes_what_would_drive_a_terminal(inputs, tmp_path) -> None:
    log = tmp_path / "records.mtlog"
    log.write_bytes(b"collection,key,value\ncpu,1.0,\x1b[2J\xff\x00 ok\n")
    done = hawkwatch(inputs["home"], "debug", "dump", str(log))
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\x00" not in done.stdout
    assert done.stdout.splitlines()[1] == "       2 @       21  cpu,1.0,\\x1b[2J\\xff\\x00 ok"
