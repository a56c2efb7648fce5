"""What starting costs: the agent imports only what its calls need, defers the rest to its
thread, and ``hawkwatch run`` loads the config module only when there is something to check.

These are structural checks (which modules are loaded, what runs where); the time itself is
measured by ``benchmarks/agent_overhead.py``, never asserted here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from hawkwatch.agent.scheduler import Scheduler
from tests.builders import wait_for

NOT_AT_START = (
    "hawkwatch.analysis.session_report",  # the report's machinery
    "hawkwatch.analysis.calltree",  # needed when a CPU episode is written
    "hawkwatch.agent.plugins.profiler",  # off by default
    "hawkwatch.agent.plugins.memory_trace",  # after a growth finding
    "hawkwatch.model.allocation_report",
    "hawkwatch.analysis.allocations",
    "hawkwatch.model.report",
    "psutil",  # Linux reads /proc
    "hashlib",  # fingerprints: at the first stall
    "tomllib",  # no config file here
    "rich",
    "hawkwatch.cli",
)


def test_starting_the_agent_imports_only_what_its_calls_need(tmp_path: Path) -> None:
    program = (
        "import json, sys\n"
        "import hawkwatch\n"
        "assert hawkwatch.start()\n"
        f"print(json.dumps([m for m in {list(NOT_AT_START)!r} if m in sys.modules]))\n"
        # what the public calls and hooks write with is there before start returns
        "print(json.dumps('hawkwatch.model.records' in sys.modules))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}
    env["HAWKWATCH_HOME"] = str(tmp_path / "home")
    done = subprocess.run(
        [sys.executable, "-c", program], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    loaded, typed_records = map(json.loads, done.stdout.splitlines())
    assert loaded == []
    assert typed_records is True


def test_a_once_job_runs_one_time_on_the_scheduler_thread() -> None:
    scheduler = Scheduler(on_error=lambda owner, exc: None)
    ran: list[str] = []
    ticks: list[int] = []
    scheduler.once(lambda: ran.append(threading.current_thread().name), owner=object())
    scheduler.every(0.01, lambda: ticks.append(1), owner=object())
    scheduler.start()
    try:
        assert wait_for(lambda: len(ticks) >= 5)  # long after the one-shot was due
    finally:
        assert scheduler.stop()
    assert ran == ["hawkwatch-scheduler"]


def test_run_still_refuses_a_typo_in_the_config_file(tmp_path: Path) -> None:
    (tmp_path / "hawkwatch.toml").write_text("[gc]\ntreshold_ms = 5\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}
    env["HAWKWATCH_HOME"] = str(tmp_path / "home")
    done = subprocess.run(
        [sys.executable, "-m", "hawkwatch", "run", "--", sys.executable, "-c", "print('ran')"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert "gc.treshold_ms" in done.stderr and "ran" not in done.stdout


def test_retention_is_applied_even_by_a_process_that_ends_at_once(tmp_path: Path) -> None:
    """Retention runs on the agent's thread after start; a process that ends first does it
    at exit, so a loop of short runs never piles up sessions."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}
    env |= {"HAWKWATCH_HOME": str(tmp_path / "home"), "HAWKWATCH_SESSIONS_KEEP": "2"}
    for _ in range(4):
        done = subprocess.run(
            [sys.executable, "-c", "import hawkwatch; hawkwatch.start()"],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
    assert len(list((tmp_path / "home" / "sessions").iterdir())) == 2
