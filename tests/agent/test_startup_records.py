"""A short program under the agent never loads msgspec or the typed model, and its session
reads as if they had written it.

The start and exit records go through ``model.plain_records``; these tests look at what a real
process has loaded once the agent's exit hook has run (a hook registered in front of the
agent's runs after it: ``atexit`` runs the last registered first), and decode what it wrote
with the typed model, which must give back the very bytes stored.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hawkwatch.model.records import (
    AppLaunch,
    CustomTimeEvent,
    ExitState,
    LaunchTime,
    TypedRecord,
    decode,
    decode_all,
)
from hawkwatch.store import list_sessions

HEAVY = ("msgspec", "hawkwatch.model.records")
PLAIN_AT_START_AND_EXIT = {"launch-time", "custom-time-event", "app-launch", "exit-state"}

AFTER_THE_AGENT = (
    "import atexit, sys\n"
    "from hawkwatch.agent import runtime\n"
    "def after_the_agent():\n"
    f"    print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    "    print(runtime.HOLDER.agent is None or not runtime.HOLDER.agent.is_running)\n"
    "atexit.unregister(runtime.at_exit)\n"
    "atexit.register(after_the_agent)\n"
    "atexit.register(runtime.at_exit)\n"
)


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}
    env["HAWKWATCH_HOME"] = str(home)
    return env


def _cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).with_name("hawkwatch")
    return subprocess.run([str(script), *args], env=env, cwd=cwd, capture_output=True, text=True)


def _loaded_at_exit(stdout: str) -> list[str]:
    *_, loaded, stopped = stdout.splitlines()
    assert stopped == "True"  # the probe ran after the agent had finished
    result: list[str] = json.loads(loaded.replace("'", '"'))
    return result


def test_a_supervised_short_program_ends_without_msgspec_or_the_typed_model(
    tmp_path: Path,
) -> None:
    env = _env(tmp_path / "home")
    done = _cli(
        "run", "--", sys.executable, "-c", AFTER_THE_AGENT + "pass\n", env=env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert _loaded_at_exit(done.stdout) == []
    [session] = list_sessions(tmp_path / "home" / "sessions")
    stored = session.records().records
    decoded = decode_all(stored)
    assert decoded.rejected == []
    # the agent's records, as the typed model reads them
    events = decoded.of(CustomTimeEvent)
    assert [e.event for e in events] == ["App::Start", "App::Exit"]
    assert json.loads(events[1].extra or "") == {"exit_code": 0, "reason": "normal"}
    agent_exit = [s for s in decoded.of(ExitState) if s.source == "agent"]
    assert [(s.clean, s.exit_code, s.reason, s.signal, s.exception) for s in agent_exit] == [
        (True, 0, "normal", None, None)
    ]
    launches = decoded.of(AppLaunch)
    assert len(launches) == 2 and launches[-1].layout == "hawkwatch"
    assert launches[-1].main_started and launches[-1].agent_started
    assert round(launches[-1].process_start or 0, 6) == decoded.of(LaunchTime)[0].start
    # ... and written byte for byte as the typed model writes them
    written = [r for r in stored if r.collection in PLAIN_AT_START_AND_EXIT]
    assert {r.collection for r in written} == PLAIN_AT_START_AND_EXIT
    for record in written:
        typed = decode(record)
        assert isinstance(typed, TypedRecord)
        assert (typed.record_key(), typed.encode_value().decode()) == (record.key, record.value)
    # the CLI reads the same records and the same values
    listed = _cli("records", "--json", env=env, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    rows = [(r["collection"], r["key"], r["value"]) for r in json.loads(listed.stdout)["records"]]
    assert rows == [tuple(r) for r in stored]
    report = _cli("report", "--json", env=env, cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    shown = json.loads(report.stdout)
    phases = {p["name"]: p["time"] for p in shown["launch"]["phases"]}
    assert phases["main_started"] == launches[-1].main_started
    assert phases["agent_started"] == launches[-1].agent_started


def test_start_from_code_in_a_short_program_ends_without_msgspec_or_the_typed_model(
    tmp_path: Path,
) -> None:
    program = "import hawkwatch\nassert hawkwatch.start()\n" + AFTER_THE_AGENT
    home = tmp_path / "home"
    done = subprocess.run(
        [sys.executable, "-c", program],
        env=_env(home),
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert _loaded_at_exit(done.stdout) == []
    [session] = list_sessions(home / "sessions")
    decoded = decode_all(session.records().records)
    assert decoded.rejected == []
    assert [e.event for e in decoded.of(CustomTimeEvent)] == ["App::Start", "App::Exit"]
    [state] = decoded.of(ExitState)
    assert (state.clean, state.source, state.exit_code) == (True, "agent", 0)
