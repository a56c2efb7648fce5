"""The supervisor's plain path for a normal end (``agent.supervised_exit``) against the typed
one (``crash_recovery.finish_session``): the same classification, byte for byte but the time;
and which modules the supervisor of ``hawkwatch run`` loads for each kind of end."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hawkwatch.agent.crash_recovery import finish_session
from hawkwatch.agent.supervised_exit import finish_sessions, normal_end, write_exit
from hawkwatch.model.records import ExitClassification, ExitState, decode_all
from hawkwatch.store import RecordStore, Session, list_sessions

START = "import hawkwatch, os, sys\nhawkwatch.start()\n"
PROGRAMS = {
    "returns": "",
    "sys.exit(3)": "sys.exit(3)",
    "sys.exit(text)": "sys.exit('bye')",
    "KeyboardInterrupt": "raise KeyboardInterrupt",
    "uncaught": "raise ValueError('x')",
    "os._exit(4)": "sys.stdout.flush(); os._exit(4)",
    "exec": "os.execv(sys.executable, [sys.executable, '-c', 'pass'])",
}


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}
    env["HAWKWATCH_HOME"] = str(home)
    return env


def _ended(tmp_path: Path, body: str) -> tuple[Path, int]:
    """A session of a real program that ran ``body`` unsupervised and ended; its status."""
    home = tmp_path / "home"
    done = subprocess.run(
        [sys.executable, "-c", START + body],
        env=_env(home),
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    (session,) = list_sessions(home / "sessions")
    return session.path, done.returncode


def _classification(folder: Path) -> tuple[str, bytes]:
    """The one classification's key-less line, time left out, and its typed form's source."""
    records = Session(folder).records().records
    (record,) = [r for r in records if r.collection == "exit-classification"]
    (typed,) = decode_all([record]).of(ExitClassification)
    value = json.loads(record.value)
    del value["time"]
    return typed.kind, json.dumps(value).encode()


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_an_earlier_session_is_classified_as_crash_recovery_would(
    tmp_path: Path, name: str
) -> None:
    folder, _ = _ended(tmp_path, PROGRAMS[name])
    plain, typed = tmp_path / "plain", tmp_path / "typed"
    shutil.copytree(folder, plain)
    shutil.copytree(folder, typed)
    assert finish_sessions([plain]) == 1
    assert finish_session(typed, None, source="next-start") is not None
    assert _classification(plain) == _classification(typed)
    # the plain path unless a crash was recorded or the agent could not record its end
    took_plain = normal_end(folder, None) is not None
    assert took_plain == (name not in ("uncaught", "os._exit(4)"))


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_a_supervised_end_is_classified_as_crash_recovery_would(tmp_path: Path, name: str) -> None:
    folder, returncode = _ended(tmp_path, PROGRAMS[name])
    plain, typed = tmp_path / "plain", tmp_path / "typed"
    shutil.copytree(folder, plain)
    shutil.copytree(folder, typed)
    if not write_exit(plain, returncode):
        finish_session(plain, returncode, source="supervisor")
    store = RecordStore(typed)  # what ``record_exit`` wrote before: the typed exit-state
    try:
        store.write(
            ExitState(clean=returncode >= 0, exit_code=max(returncode, 0), signal=None,
                      signal_name=None, reason=None, exception=None, source="supervisor",
                      time=1.0)
        )  # fmt: skip
    finally:
        store.close()
    finish_session(typed, returncode, source="supervisor")
    assert _classification(plain) == _classification(typed)
    states = decode_all(Session(plain).records().records).of(ExitState)
    exited = returncode >= 0
    assert (states[-1].source, states[-1].clean) == ("supervisor", exited)
    assert (states[-1].exit_code, states[-1].signal) == (
        (returncode, None) if exited else (None, -returncode)
    )


def test_a_crash_or_a_dump_is_left_to_crash_recovery(tmp_path: Path) -> None:
    folder, returncode = _ended(tmp_path, "raise ValueError('x')")
    assert returncode == 1
    assert normal_end(folder, returncode) is None  # the crash record needs the typed model
    (tmp_path / "second").mkdir()
    clean, _ = _ended(tmp_path / "second", "")
    (clean / "crash-fault.txt").write_text("Fatal Python error: Aborted\n")
    assert normal_end(clean, 0) is None
    assert normal_end(clean, -9) is None  # and any signal


# The supervisor's modules when it leaves, written by a ``sitecustomize`` of the test's (the
# program gets the agent's bootstrap first on its path, so the hook sees the supervisor only).
HOOK = """
import atexit, json, os, sys
atexit.register(lambda: open(os.environ["SPY_OUT"], "w").write(json.dumps(sorted(sys.modules))))
"""
TYPED = {"msgspec", "hawkwatch.model.records", "hawkwatch.agent.crash_recovery"}


def _supervisor_modules(tmp_path: Path, home: Path, body: str) -> set[str]:
    hook = tmp_path / "hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(HOOK)
    env = _env(home) | {
        "PYTHONPATH": os.pathsep.join([str(hook), os.environ.get("PYTHONPATH", "")]),
        "SPY_OUT": str(tmp_path / "modules.json"),
    }
    script = Path(sys.executable).with_name("hawkwatch")
    done = subprocess.run(
        [str(script), "run", "--", sys.executable, "-c", body],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert "hawkwatch: session" in done.stderr, done.stderr
    modules = set(json.loads((tmp_path / "modules.json").read_text()))
    assert "hawkwatch.launcher" in modules  # the hook saw the supervisor
    return modules


def test_the_supervisor_records_a_normal_end_without_the_typed_model(tmp_path: Path) -> None:
    home = tmp_path / "home"
    # an earlier unsupervised session that ended normally: classified on the plain path too
    _ended(tmp_path, "")
    for body in ("pass", "import sys; sys.exit(3)"):
        assert _supervisor_modules(tmp_path, home, body) & TYPED == set()
    kinds = [
        [(c.source, c.kind, c.exit_code) for c in decode_all(s.records().records).of(
            ExitClassification)]
        for s in list_sessions(home / "sessions")
    ]  # fmt: skip
    assert kinds == [
        [("next-start", "clean", 0)],
        [("supervisor", "clean", 0)],
        [("supervisor", "exit-code", 3)],
    ]


def test_the_supervisor_loads_the_typed_model_for_a_crash_or_a_signal(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert _supervisor_modules(tmp_path, home, "raise ValueError('x')") >= TYPED
    killed = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    assert _supervisor_modules(tmp_path, home, killed) >= TYPED
    kinds = [
        [(c.kind, c.signal) for c in decode_all(s.records().records).of(ExitClassification)]
        for s in list_sessions(home / "sessions")
    ]
    assert kinds == [[("exception", None)], [("killed", 9)]]
