"""The memray backend inside the agent: ``hawkwatch.start()`` from an app's main module records
with memray and writes suspects at exit; without memray it traces with tracemalloc and says why;
the default agent never imports memray."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hawkwatch.api.memory import memory_report
from hawkwatch.api.session import load_session

LEAKY = """
import sys
{before}
import hawkwatch
assert hawkwatch.start(home={home!r}, memory_backend="memray", memory_trace="always")
KEEP = []
def keep_blobs():
    KEEP.append(bytearray(5000))
def churn():
    return [bytes(300) for _ in range(50)]
import time
for i in range(3000):
    keep_blobs()
    churn()
    if i % 100 == 0:
        time.sleep(0.005)
print(json.dumps(sorted(m for m in ("memray", "tracemalloc") if m in sys.modules)))
"""


def run(tmp_path: Path, before: str = "") -> tuple[subprocess.CompletedProcess[str], Path]:
    home = tmp_path / "home"
    program = "import json\n" + LEAKY.format(before=before, home=str(home))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HAWKWATCH_", "_HAWKWATCH"))}
    done = subprocess.run(
        [sys.executable, "-c", program], env=env, cwd=tmp_path, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (session,) = list((home / "sessions").iterdir())
    return done, session


def test_start_from_the_app_records_with_memray_and_names_the_leak(tmp_path: Path) -> None:
    pytest.importorskip("memray", reason="memray has no wheel for this Python or platform")
    _done, folder = run(tmp_path)
    report = memory_report(load_session(str(folder)))
    (window,) = report.windows
    assert window.backend == "memray" and window.end_reason == "stop"
    assert (folder / window.capture).stat().st_size == window.capture_bytes > 0
    top = report.leaks[0]
    python = [f.function for f in top.frames if not f.native]
    assert python[0] == "keep_blobs", top.frames
    assert top.live_bytes >= 3000 * 5000 * 0.9 and top.count >= 2900
    for leak in report.leaks:
        assert "churn" not in {f.function for f in leak.frames}


def test_without_memray_tracemalloc_traces_and_the_report_says_why(tmp_path: Path) -> None:
    # ``sys.modules["memray"] = None`` makes ``import memray`` fail as if it were not installed
    done, folder = run(tmp_path, before='sys.modules["memray"] = None')
    assert json.loads(done.stdout.splitlines()[-1]) == ["memray", "tracemalloc"]
    report = memory_report(load_session(str(folder)))
    (window,) = report.windows
    assert window.backend == "tracemalloc" and window.reason == "always"
    (note,) = report.notes
    assert note.startswith("memray did not run: memray-unavailable: memray is not installed")
    assert window.end_reason == "stop" and window.owned


def test_the_default_agent_never_imports_memray(tmp_path: Path) -> None:
    program = (
        "import json, sys\nimport hawkwatch\nassert hawkwatch.start()\n"
        "print(json.dumps([m for m in ('memray', 'hawkwatch.agent.plugins.memory_memray', "
        "'hawkwatch.analysis.memory_timeline') if m in sys.modules]))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}
    env["HAWKWATCH_HOME"] = str(tmp_path / "home")
    done = subprocess.run(
        [sys.executable, "-c", program], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
