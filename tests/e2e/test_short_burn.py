"""A newcomer's short CPU burn: no episode, but the report says why (issue 13 §3)."""

from __future__ import annotations

import sys

import pytest

from tests.e2e.conftest import Runner

BURN = """
import time

def newcomer_burn(calls):
    for _ in range(calls):
        sum(i * i for i in range(1000))

newcomer_burn(40000)
"""


@pytest.mark.slow
def test_the_report_says_the_burn_was_shorter_than_the_episode_minimum(tmp_path) -> None:
    runner = Runner(home=tmp_path / "home", cwd=tmp_path)
    app = runner.script("burn.py", BURN)
    # a low bar, so a loaded machine's share of a core still counts as a burn
    result = runner.hawkwatch(
        "run", "-c", "cpu.highload_threshold=0.1", "-c", "cpu.check_interval_s=0.2",
        "--", sys.executable, str(app),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    session = runner.only_session()
    burn = session.metadata["cpu"]["longest_short_burn"]
    assert 0 < burn["lasting_s"] < 60 and burn["min_duration_s"] == 60
    report = runner.hawkwatch("report", str(session.path), COLUMNS="200")
    assert report.returncode == 0, report.stderr
    text = " ".join(report.stdout.split())
    assert "No CPU high-load episode: the longest burn (" in text
    assert "was shorter than cpu.highload_min_duration_s (60 s)" in text
