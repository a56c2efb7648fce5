"""End to end: a real CPU burn under ``hawkwatch run --profile``, then ``hawkwatch profile`` in
every format and ``hawkwatch report``, through both entry points."""

from __future__ import annotations

import gzip
import json
import re
import sys
from pathlib import Path

import jsonschema
import pytest

from hawkwatch.model import collections as c
from tests.browser import speedscope_release
from tests.e2e.conftest import Runner, by_collection
from tests.formats.pprof_proto import profile_message_class

BURN_APP = """
import threading, time

def burn_for_the_profile_test(seconds):
    total, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        total += sum(i * i for i in range(3000))
    return total

def wait_for_nothing(stop):
    stop.wait()

stop = threading.Event()
idle = threading.Thread(target=wait_for_nothing, args=(stop,), name="idle-waiter")
idle.start()
burn_for_the_profile_test(5.0)
stop.set()
idle.join()
print("burned")
"""

OPTIONS = (
    "-c", "cpu.highload_min_duration_s=1",
    # a shared CI machine may not give us a whole core, and an episode ends at the first check
    # below the threshold (MTHawkeye's rule): a low bar and checks long enough to average out
    "-c", "cpu.highload_threshold=0.1",
    "-c", "cpu.check_interval_s=0.2",
    "-c", "cpu.check_interval_busy_s=0.25",
    "-c", "profiler.window_s=1",
    "-c", "profiler.rate_hz=50",
)  # fmt: skip


@pytest.fixture(scope="module")
def burned(tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("burn")
    runner = Runner(home=base / "home", cwd=base)
    app = runner.script("burn_app.py", BURN_APP)
    result = runner.hawkwatch("run", "--profile", *OPTIONS, "--", sys.executable, str(app))
    assert result.returncode == 0, result.stderr
    assert "burned" in result.stdout
    return runner, runner.only_session()


@pytest.mark.slow
def test_the_burn_is_recorded_as_an_episode_and_profiler_windows(burned) -> None:
    _, session = burned
    records = by_collection(session)
    assert records[c.CPU_PROFILE]
    last_by_key = {r.key: json.loads(r.value) for r in records[c.CPU_HIGHLOAD]}
    episode = max(last_by_key.values(), key=lambda e: float(e["lasting"]))
    assert set(episode) >= {"start", "lasting", "average"}
    assert float(episode["lasting"]) >= 1
    tree = records[c.CPU_HIGHLOAD_STACKFRAME][-1].value
    assert "burn_for_the_profile_test" in tree


@pytest.mark.slow
def test_collapsed_to_stdout_through_both_entry_points(burned) -> None:
    runner, session = burned
    for run in (runner.hawkwatch, runner.module):
        result = run("profile", str(session.path), "--format", "collapsed")
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        busy = [line for line in lines if "burn_for_the_profile_test" in line]
        assert busy and all(line.startswith("thread MainThread;") for line in busy)
        assert not any("idle-waiter" in line for line in lines)  # cpu mode: it never ran
        assert "wrote stdout" in result.stderr and "samples" in result.stderr
    wall = runner.hawkwatch("profile", str(session.path), "--mode", "wall")
    assert any(line.startswith("thread idle-waiter;") for line in wall.stdout.splitlines())


@pytest.mark.slow
def test_every_format_to_a_file(burned) -> None:
    runner, session = burned
    out = runner.cwd / "exports"
    out.mkdir(exist_ok=True)
    for fmt in ("collapsed", "speedscope", "pprof", "svg"):
        result = runner.hawkwatch(
            "profile", str(session.path), "--format", fmt, "-o", str(out / fmt)
        )
        assert result.returncode == 0, result.stderr
        assert f"wrote {out / fmt}" in result.stderr
    document = json.loads((out / "speedscope").read_text())
    schema = json.loads((speedscope_release() / "file-format-schema.json").read_text())
    jsonschema.validate(document, schema)
    message = profile_message_class().FromString(gzip.decompress((out / "pprof").read_bytes()))
    assert "burn_for_the_profile_test" in message.string_table
    svg = (out / "svg").read_text()
    assert svg.startswith("<?xml") and 'data-label="burn_for_the_profile_test' in svg


@pytest.mark.slow
def test_one_episode_by_key(burned) -> None:
    runner, session = burned
    listing = runner.hawkwatch("profile", str(session.path), "--list")
    assert listing.returncode == 0, listing.stderr
    key = next(
        line.split()[1] for line in listing.stdout.splitlines() if line.startswith("episode")
    )
    result = runner.hawkwatch("profile", str(session.path), "--episode", key)
    assert result.returncode == 0, result.stderr
    assert "burn_for_the_profile_test" in result.stdout
    # MTHawkeye's trees have no thread level (a function named current_thread is no such level)
    labels = [re.sub(r"^[^\w<]*", "", line) for line in result.stdout.splitlines()]
    assert not [label for label in labels if label.startswith("thread ")], result.stdout
    assert f"cpu-highload episode {key}" in result.stderr


@pytest.mark.slow
def test_the_report_has_a_cpu_section(burned) -> None:
    runner, session = burned
    result = runner.hawkwatch("report", str(session.path), "--json")
    assert result.returncode == 0, result.stderr
    cpu = json.loads(result.stdout)["cpu"]
    assert cpu["episodes_total"] >= 1  # a loaded machine may split the burn in two
    frames = [f["frame"] for f in cpu["episodes"][0]["top_frames"]]
    assert any(f.startswith("burn_for_the_profile_test") or "genexpr" in f for f in frames)
    assert cpu["profiler"]["samples"] > 0
    text = runner.hawkwatch("report", str(session.path))
    assert "CPU high load (" in text.stdout and "CPU profile" in text.stdout


def test_errors_are_one_line(runner: Runner, tmp_path: Path) -> None:
    app = runner.script("quiet.py", "print('hi')\n")
    assert (
        runner.hawkwatch(
            "run", "-c", "cpu.enabled=false", "--", sys.executable, str(app)
        ).returncode
        == 0
    )
    session = runner.only_session()
    nothing = runner.hawkwatch("profile", str(session.path))
    assert nothing.returncode == 1
    assert nothing.stderr.count("\n") == 1 and "no profile in this session" in nothing.stderr
    assert "hawkwatch run --profile" in nothing.stderr
    missing = runner.hawkwatch("profile", str(session.path), "--episode", "123.00")
    assert missing.returncode == 1 and "no cpu-highload episode '123.00'" in missing.stderr
    bad_format = runner.hawkwatch("profile", str(session.path), "--format", "png")
    assert bad_format.returncode == 2 and "invalid choice" in bad_format.stderr
