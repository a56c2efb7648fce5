"""Must-show of the memray backend: ``hawkwatch run --memory=memray`` on the three-leak example
plus a leak in C memory (an in-memory SQLite table never pruned, amid a pruned twin). The three
Python leaks are the top three suspects, no churn or twin site is a suspect, and the SQLite leak
is found with its native stack. The same program under tracemalloc shows what that backend
misses: SQLite's pages are not Python allocations."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import Runner

pytest.importorskip("memray", reason="memray has no wheel for this Python or platform")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
NATIVE_EXAMPLE = EXAMPLES / "memory_native_leak.py"
LEAKS_EXAMPLE = EXAMPLES / "memory_leaks.py"

APP = f"""
import sys
sys.path.insert(0, {str(EXAMPLES)!r})
from memory_native_leak import run_rounds

run_rounds(100)  # a fixed amount of work: what is recorded does not depend on speed
"""

# Under tracemalloc at least the same work, and more for as long as the tracer needs to see
# every leak grow several times (it snapshots about once a second): a fast machine did the 100
# rounds in 4 s, three snapshots, too few to call any site a suspect (memray reads moments of its
# own capture instead, whatever the run's length). One call site for every round: a suspect is
# a whole stack, and a second caller would split each leak into two stacks growing half the time.
TRACEMALLOC_APP = f"""
import sys, time
sys.path.insert(0, {str(EXAMPLES)!r})
from memory_native_leak import run_rounds

started, done = time.monotonic(), 0
while done < 100 or time.monotonic() - started < 10.0:
    run_rounds(1)
    done += 1
"""

PYTHON_LEAKS = {"leak_cache", "leak_registry", "leak_callback"}
TWINS = {"bounded_cache", "cleared_list", "used_callback", "churn", "pruned_sqlite"}


def run_app(tmp_path_factory: pytest.TempPathFactory, *flags: str, app: str = APP) -> Runner:
    base = tmp_path_factory.mktemp("memray")
    work = base / "work"
    work.mkdir()
    runner = Runner(home=base / "home", cwd=work)
    runner.script("app.py", app)
    done = runner.hawkwatch(
        "run", *flags, "-c", "memory.snapshot_interval_s=0.3", "--", sys.executable, "app.py",
        timeout=400,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return runner


@pytest.fixture(scope="module")
def memray_session(tmp_path_factory: pytest.TempPathFactory) -> Runner:
    return run_app(tmp_path_factory, "--memory=memray")


def memory_json(runner: Runner) -> dict[str, object]:
    shown = runner.hawkwatch("memory", "--json")
    assert shown.returncode == 0, shown.stderr
    return json.loads(shown.stdout)  # type: ignore[no-any-return]


def app_function(leak: dict[str, object]) -> str:
    """The innermost example function of a suspect (not a constructor it called)."""
    frames = leak["frames"]
    assert isinstance(frames, list)
    names = [
        str(f["function"])
        for f in frames
        if not f.get("native") and f["file"] in (str(NATIVE_EXAMPLE), str(LEAKS_EXAMPLE))
    ]
    return names[1] if names[0] == "Payload.__init__" else names[0]


def test_the_three_python_leaks_lead_and_the_c_leak_follows(memray_session: Runner) -> None:
    leaks = memory_json(memray_session)["leaks"]
    assert isinstance(leaks, list)
    order = list(dict.fromkeys(app_function(leak) for leak in leaks))
    assert order[:3] == ["leak_cache", "leak_registry", "leak_callback"], order
    assert "leak_sqlite" in order, order
    for leak in leaks:
        functions = {f["function"] for f in leak["frames"]}
        assert not functions & TWINS, leak
        assert leak["growth_bytes"] > 0 and leak["live_bytes"] >= leak["growth_bytes"]
    # memray's stacks go below Python: bytearray's own allocation under Payload.__init__.
    cache = leaks[0]["frames"]
    native = [f["function"] for f in cache if f.get("native")]
    assert "bytearray___init__" in native or "PyByteArray_Resize" in native, cache
    assert [f["function"] for f in cache if not f.get("native")][:2] == [
        "Payload.__init__",
        "leak_cache",
    ]


def test_the_c_leak_has_its_native_stack(memray_session: Runner) -> None:
    leaks = memory_json(memray_session)["leaks"]
    assert isinstance(leaks, list)
    sqlite = [leak for leak in leaks if app_function(leak) == "leak_sqlite"]
    assert sqlite
    frames = sqlite[0]["frames"]
    native = [f["function"] for f in frames if f.get("native")]
    assert any("sqlite3" in name for name in native), frames
    # native frames come first (innermost), then the Python caller
    first_python = next(i for i, f in enumerate(frames) if not f.get("native"))
    assert first_python > 0 and frames[first_python]["function"] == "leak_sqlite"
    # 100 rounds × 3 rows of 1 KiB: SQLite's pages hold at least the rows kept
    assert sum(leak["live_bytes"] for leak in sqlite) >= 100 * 3 * 1024 * 0.9


def test_tracing_window_names_memray_and_its_capture(memray_session: Runner) -> None:
    tracing = memory_json(memray_session)["tracing"]
    assert isinstance(tracing, dict)
    (window,) = tracing["windows"]
    assert window["backend"] == "memray" and window["native"] is True
    # 12 moments spread in time, fewer when memray's snapshots were sparse (deduplicated)
    assert 4 <= window["snapshots"] <= 12 and window["end_reason"] == "stop"
    (session,) = list(memray_session.root.iterdir())
    capture = session / window["capture"]
    assert capture.stat().st_size == window["capture_bytes"] > 0


def test_console_shows_python_callers_below_native_frames(memray_session: Runner) -> None:
    console = memray_session.hawkwatch("memory")
    assert console.returncode == 0, console.stderr
    text = console.stdout
    assert "tracing: memray (native and Python stacks)" in text
    block = text.split("#1 ", 1)[1].split("#2 ", 1)[0]
    assert "[native]" in block and "leak_cache (" in block and "native frames" in block
    report = memray_session.hawkwatch("report", "--json")
    assert json.loads(report.stdout)["memory"]["leaks"]


def test_tracemalloc_does_not_see_the_c_leak(
    memray_session: Runner, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The same program traced by tracemalloc: the Python leaks, but SQLite's pages are not
    Python allocations (only the call's few Python objects could show)."""
    seen_by_memray = sum(
        leak["live_bytes"]
        for leak in memory_json(memray_session)["leaks"]  # type: ignore[union-attr]
        if app_function(leak) == "leak_sqlite"
    )
    runner = run_app(tmp_path_factory, "--memory", app=TRACEMALLOC_APP)
    leaks = memory_json(runner)["leaks"]
    assert isinstance(leaks, list)
    functions = [app_function(leak) for leak in leaks]
    assert set(functions[:3]) >= PYTHON_LEAKS - {"leak_callback"}, functions
    seen_by_tracemalloc = sum(
        leak["live_bytes"] for leak in leaks if app_function(leak) == "leak_sqlite"
    )
    assert seen_by_tracemalloc < 0.1 * seen_by_memray
