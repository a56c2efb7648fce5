"""``hawkwatch report --format html`` as a command: a file, a pipe, a terminal, a bad session."""

from __future__ import annotations

import os
import pty
import subprocess

from tests.cli.test_report_cli import HAWKWATCH, hawkwatch, make_session, write_mthawkeye_folder


def test_html_to_a_file_says_where_and_holds_the_session(home) -> None:
    session = make_session(home / "sessions")
    target = home / "report.html"

    result = hawkwatch(home, "report", "--format", "html", "-o", str(target))

    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert result.stderr.strip() == (
        f"hawkwatch: wrote {target}: open it in a web browser (one file, no network needed)"
    )
    text = target.read_text(encoding="utf-8")
    assert text.startswith("<!doctype html>")
    assert f"<title>hawkwatch: shop — {session.name}</title>" in text
    assert 'data-hw-figure="launch-ms" data-value="500.0"' in text


def test_html_piped_goes_to_stdout(home) -> None:
    make_session(home / "sessions")

    result = hawkwatch(home, "report", "--format", "html")

    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("<!doctype html>")
    assert result.stdout.rstrip().endswith("</html>")


def test_html_to_a_terminal_is_refused_with_one_line(home) -> None:
    make_session(home / "sessions")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}
    env["HAWKWATCH_HOME"] = str(home)
    leader, follower = pty.openpty()
    try:
        result = subprocess.run(
            [str(HAWKWATCH), "report", "--format", "html"], stdout=follower,
            stderr=subprocess.PIPE, text=True, env=env, cwd=home, timeout=120,
        )  # fmt: skip
    finally:
        os.close(follower)
        os.close(leader)

    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert lines == [
        "hawkwatch: html output is a document and stdout is a terminal; "
        "write it to a file with -o FILE.html (or pipe it)"
    ]


def test_a_missing_session_is_one_line_and_writes_nothing(home) -> None:
    target = home / "report.html"

    result = hawkwatch(home, "report", "nosuch", "--format", "html", "-o", str(target))

    assert result.returncode != 0
    assert len(result.stderr.strip().splitlines()) == 1
    assert "nosuch" in result.stderr and "Traceback" not in result.stderr
    assert not target.exists()


def test_an_mthawkeye_folder_from_an_iphone_renders_too(home, page) -> None:
    folder = write_mthawkeye_folder(home / "ios-session")
    target = home / "ios.html"

    result = hawkwatch(home, "report", str(folder), "--format", "html", "-o", str(target))

    assert result.returncode == 0, result.stderr
    page.page.goto(target.as_uri())
    page.page.wait_for_selector("[data-hw-session][data-hw-ready='1']")
    assert page.errors == []
    assert page.requests == [target.as_uri()]
    lanes = page.page.locator("svg[data-hw-drawn='timeline'] g.hw-lane").evaluate_all(
        "gs => gs.map(g => g.getAttribute('data-lane'))"
    )
    assert {"r-mem", "cpu", "fps", "stalls"} <= set(lanes)
    assert page.page.get_attribute("[data-hw-figure='stall-count']", "data-value") == "1"
    launch = page.page.locator("svg[data-hw-drawn='launch'] rect.hw-mark").count()
    assert launch >= 5  # MTHawkeye's launch phases
