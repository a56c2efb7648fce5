"""Ways the agent could harm the app it watches (issue 12), each with a real process.

Every test here failed before its fix: an app that never started, a child that hung on an import
lock, a stall monitor switched off by one bad file, a second writer corrupting a session, an
app's own faulthandler watchdog silently cancelled, a traceback of ours printed at Ctrl-C.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hawkwatch.model import collections as c
from hawkwatch.store import RecordStore
from hawkwatch.store.session import format_session_name
from tests.e2e.conftest import HAWKWATCH_SCRIPT, Runner, by_collection, json_of

HANG_LIMIT_S = 120  # generous: a hang is what these tests catch, never slowness

STALLING_APP = """
import asyncio, time
async def main():
    await asyncio.sleep(0.3)
    time.sleep(0.8)
    await asyncio.sleep(0.3)
asyncio.run(main())
print("app done")
"""


def _earlier_session(runner: Runner, name_offset_s: float) -> Path:
    folder = runner.root / format_session_name(time.time() - name_offset_s)
    folder.mkdir(parents=True)
    return folder


def _dead_metadata(folder: Path, **extra: object) -> None:
    value = {"format": "hawkwatch-session", "pid": 2**22 + 7, "start_time": 1.0, **extra}
    (folder / "session.json").write_text(json.dumps(value))


def _marker(folder: Path, thread_id: int = 1) -> None:
    info = {"pid": 5, "start": 1.0, "last_seen": 2.0, "thread": "MainThread", "loop": "asyncio"}
    (folder / f"hang-{thread_id}.json").write_text(json.dumps({**info, "thread_id": thread_id}))


def test_fifos_in_an_earlier_session_do_not_stop_the_app_starting(runner: Runner) -> None:
    first = _earlier_session(runner, 300)  # session.json is a FIFO; a real marker makes us look
    os.mkfifo(first / "session.json")
    _marker(first)
    second = _earlier_session(runner, 200)  # every other file the stall monitor reads: FIFOs
    _dead_metadata(second)
    os.mkfifo(second / "hang-7.json")
    os.mkfifo(second / "stall-watched.json")
    (second / "stall-backstop.txt").write_text("not a dump, but not empty\n")
    _marker(second, 8)
    third = _earlier_session(runner, 100)
    _dead_metadata(third)
    os.mkfifo(third / "stall-backstop.txt")

    result = runner.hawkwatch(
        "run", "--", sys.executable, "-c", "print('started')", timeout=HANG_LIMIT_S
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "started"
    newest = runner.sessions()[-1]
    kills = json_of(by_collection(newest).get(c.HANG_KILL, []))
    assert sorted(k["previous_session"] for k in kills) == sorted([first.name, second.name])


def test_one_damaged_earlier_session_does_not_switch_the_stall_monitor_off(runner: Runner) -> None:
    huge_pid = _earlier_session(runner, 300)
    _dead_metadata(huge_pid, pid=10**30)  # OverflowError in a C long
    _marker(huge_pid)
    nested = _earlier_session(runner, 200)
    _dead_metadata(nested)
    (nested / "hang-3.json").write_text("[" * 200_000 + "]" * 200_000)  # RecursionError
    (nested / "stall-watched.json").write_text('{"a":' * 100_000 + "1" + "}" * 100_000)
    (nested / "stall-backstop.txt").write_text("Thread 0x01 (most recent call first):\n")
    good = _earlier_session(runner, 100)
    _dead_metadata(good)
    _marker(good, 9)

    script = runner.script("stall.py", STALLING_APP)
    result = runner.hawkwatch("run", "--", sys.executable, str(script), timeout=HANG_LIMIT_S)
    assert result.returncode == 0, result.stderr
    records = by_collection(runner.sessions()[-1])
    errors = json_of(records.get(c.HAWKWATCH_ERROR, []))
    assert [e for e in errors if e["plugin"] == "stall"] == []
    assert len([r for r in records.get(c.ANR, []) if r.key.endswith("_0")]) == 1
    kills = {k["previous_session"] for k in json_of(records.get(c.HANG_KILL, []))}
    assert good.name in kills and huge_pid.name in kills


FORK_DURING_IMPORT_APP = """
import importlib.abc, os, sys, threading, time
import hawkwatch

entered, release = threading.Event(), threading.Event()

class Gate(importlib.abc.MetaPathFinder):
    # Holds any import of the agent half-way, as a slow disk or a busy GIL would.
    def find_spec(self, name, path, target=None):
        if name.startswith("hawkwatch.agent"):
            entered.set()
            release.wait(30)
        return None

sys.meta_path.insert(0, Gate())
worker = threading.Thread(target=lambda: hawkwatch.event("from-thread"))
worker.start()
entered.wait(2)                      # inside the import, if the call imports at all
pid = os.fork()
if pid == 0:
    hawkwatch.event("in-child")      # waited forever on the import lock before the fix
    hawkwatch.mark_ready()
    hawkwatch.heartbeat()
    with hawkwatch.span("child-span"):
        pass
    hawkwatch.stop()
    os._exit(0)
release.set()
worker.join()
deadline = time.monotonic() + 30
while time.monotonic() < deadline:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        print("child exit", os.waitstatus_to_exitcode(status))
        break
    time.sleep(0.05)
else:
    os.kill(pid, 9)
    print("child hung")
"""


def test_a_fork_while_another_thread_is_in_a_public_call_never_freezes_the_child(
    runner: Runner,
) -> None:
    script = runner.script("fork_import.py", FORK_DURING_IMPORT_APP)
    result = runner.python("-W", "ignore::DeprecationWarning", str(script), timeout=HANG_LIMIT_S)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "child exit 0"
    assert runner.sessions() == []  # no agent was started, and none was imported into one


LIBC_FORK_APP = """
import ctypes, gc, os, sys
import hawkwatch

hawkwatch.start(app_name="libc-fork", resources_enabled=False)
hawkwatch.event("parent-before")
# No at-fork hooks run in the child. PyDLL keeps the GIL across the call: with CDLL another
# thread may hold the GIL at the fork, and the child then waits for it forever (agent or not).
pid = ctypes.PyDLL(None).fork()
if pid == 0:
    for i in range(400):             # 400 KB: more than the buffer holds, so it must flush
        hawkwatch.event("child-" + str(i), extra="x" * 1000)
    with hawkwatch.span("child-span"):
        gc.collect()
    sys.exit(0)                      # the child's atexit: no App::Exit into the parent's session
_, status = os.waitpid(pid, 0)
hawkwatch.event("parent-after")
print("child", os.waitstatus_to_exitcode(status))
"""


def test_a_child_forked_without_hooks_never_writes_into_the_parents_session(
    runner: Runner,
) -> None:
    script = runner.script("libc_fork.py", LIBC_FORK_APP)
    result = runner.python(str(script), timeout=HANG_LIMIT_S)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "child 0"
    [session] = runner.sessions()
    records = by_collection(session)
    events = [e["event"] for e in json_of(records[c.CUSTOM_TIME_EVENT])]
    assert events == ["App::Start", "parent-before", "parent-after", "App::Exit"]
    assert c.CUSTOM_SPAN not in records
    assert len(records[c.EXIT_STATE]) == 1
    assert "no longer writes into the parent's session" in result.stderr


def test_a_second_writer_on_a_session_folder_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "session"
    with RecordStore(folder) as store:
        store.store(c.CUSTOM_TIME_EVENT, "1.0", "{}")
        other = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from hawkwatch.store import RecordStore; from hawkwatch.errors import "
                "StoreError\ntry:\n RecordStore(sys.argv[1]).store('x', '1', 'y')\n"
                "except StoreError as e:\n print(e)",
                str(folder),
            ],
            capture_output=True,
            text=True,
            timeout=HANG_LIMIT_S,
            check=True,
        )
        assert other.stdout.strip() == f"{folder}: another process is writing this session"
    with RecordStore(folder) as store:  # released at close: the next writer may open it
        store.store(c.CUSTOM_TIME_EVENT, "2.0", "{}")
    assert [r.key for r in RecordStore(folder).read(c.CUSTOM_TIME_EVENT)] == ["1.0", "2.0"]


APP_WATCHDOG = """
import asyncio, faulthandler, time
faulthandler.dump_traceback_later(2, exit=True)   # the app's own watchdog: stop a stuck run
async def main():
    await asyncio.sleep(0.3)                       # a watched loop: the backstop wants to arm
    time.sleep(6)
asyncio.run(main())
print("the watchdog did not fire")
"""


def test_the_apps_own_faulthandler_watchdog_still_fires_under_the_agent(runner: Runner) -> None:
    script = runner.script("watchdog.py", APP_WATCHDOG)
    result = runner.hawkwatch("run", "--", sys.executable, str(script), timeout=HANG_LIMIT_S)
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "the watchdog did not fire" not in result.stdout
    assert "Timeout (0:00:02)!" in result.stderr
    assert 'watchdog.py", line' in result.stderr  # the app's own stack, dumped by its watchdog


FORKS_APP = """
import os, time
for _ in range(30):
    time.sleep(0.02)
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
print("forked 30")
"""


@pytest.mark.skipif(sys.version_info < (3, 12), reason="the warning is new in Python 3.12")
@pytest.mark.parametrize("profiler", ["false", "true"])
def test_a_single_threaded_app_that_forks_gets_no_multithreaded_warning(
    runner: Runner, profiler: str
) -> None:
    script = runner.script("forks.py", FORKS_APP)
    result = runner.hawkwatch(
        "run",
        "-o",
        f"profiler.enabled={profiler}",
        "--",
        sys.executable,
        "-W",
        "always::DeprecationWarning",
        str(script),
        timeout=HANG_LIMIT_S,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "forked 30"
    assert "multi-threaded" not in result.stderr


SLEEPER_APP = """
import sys, time
print("up", flush=True)
time.sleep(30)
"""


def test_sigint_to_the_whole_process_group_never_prints_a_traceback_of_ours(
    runner: Runner,
) -> None:
    script = runner.script("sleeper.py", SLEEPER_APP)
    for _ in range(6):
        process = subprocess.Popen(
            [str(HAWKWATCH_SCRIPT), "run", "--", sys.executable, str(script)],
            cwd=runner.cwd,
            env=runner.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "up"
        for _ in range(400):  # Ctrl-C held down: interrupts all through the agent's exit path
            if process.poll() is not None:
                break
            try:
                os.killpg(process.pid, signal.SIGINT)
            except ProcessLookupError:
                break
            time.sleep(0.005)
        _, stderr = process.communicate(timeout=HANG_LIMIT_S)
        # Interrupts held down also land in the app's and the standard library's exit code.
        # Pure Python cannot close one window: an interrupt on the very first bytecode of our
        # hook (before it can defer interrupts) is raised there. Anywhere past it, an
        # interrupt must never surface from a frame of ours, nor crash the interpreter.
        assert not _interrupts_inside_our_frames(stderr), stderr
        assert "Fatal Python error" not in stderr, stderr


def _interrupts_inside_our_frames(stderr: str) -> list[str]:
    """Tracebacks whose innermost frame is ours and past its entry (the unclosable window)."""
    bad = []
    for block in stderr.split("Traceback (most recent call last):")[1:]:
        files = re.findall(r'File "([^"]+)", line \d+, in \w+\n\s*(.*)', block)
        if not any("hawkwatch/" in path for path, _ in files):
            continue
        innermost_path, innermost_line = files[-1]
        at_entry = innermost_line.startswith(("def ", "@", "with InterruptsDeferred"))
        if not (at_entry or innermost_path.endswith("signal.py")):
            bad.append(block)
    return bad


CHILDREN_APP = """
import subprocess, sys
probe = "import sys; print(sorted(m for m in sys.modules if m.startswith('hawkwatch')))"
for _ in range(3):
    print(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout.strip())
"""


def test_python_children_start_no_agent_unless_asked(runner: Runner) -> None:
    script = runner.script("children.py", CHILDREN_APP)
    result = runner.hawkwatch("run", "--", sys.executable, str(script), timeout=HANG_LIMIT_S)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:3] == ["[]", "[]", "[]"]  # hawkwatch not even imported
    assert len(runner.sessions()) == 1

    asked = runner.hawkwatch(
        "run", "--children", "--", sys.executable, str(script), timeout=HANG_LIMIT_S
    )
    assert asked.returncode == 0, asked.stderr
    assert all("'hawkwatch.agent.api'" in line for line in asked.stdout.split("\n")[:3])
    sessions = runner.sessions()
    assert len(sessions) == 1 + 1 + 3
    assert sum(1 for s in sessions if s.metadata.get("supervised") is True) == 2
