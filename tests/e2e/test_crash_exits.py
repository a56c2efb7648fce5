"""Every row of the exit vocabulary with real processes, supervised and not; crash records.

Unsupervised programs call ``hawkwatch.start()`` themselves; their exit is classified by the
next program that starts the agent in the same sessions folder (``NEXT``). Supervised ones run
under ``hawkwatch run``, which classifies at once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hawkwatch.analysis.python_crash import python_fingerprint
from hawkwatch.model.records import Crash, ExitClassification, decode_all
from hawkwatch.store import Session
from tests.e2e.conftest import HAWKWATCH_SCRIPT, Runner

NEXT = "import hawkwatch\nhawkwatch.start()\n"
START = "import hawkwatch\nhawkwatch.start()\n"


def crashes(session: Session) -> list[Crash]:
    return decode_all(session.records().records).of(Crash)


def classification(session: Session) -> ExitClassification:
    found = decode_all(session.records().records).of(ExitClassification)
    assert len(found) == 1, found
    return found[0]


def run_unsupervised(
    runner: Runner, source: str
) -> tuple[subprocess.CompletedProcess[str], Session]:
    """Run ``source`` (which starts the agent), then a next start; the first session."""
    app = runner.script("app.py", source)
    done = runner.python(str(app))
    runner.python(str(runner.script("next.py", NEXT)))
    return done, runner.sessions()[0]


def run_supervised(runner: Runner, source: str) -> tuple[subprocess.CompletedProcess[str], Session]:
    app = runner.script("app.py", source)
    done = runner.hawkwatch("run", "--", str(app))
    return done, runner.only_session()


# -- exceptions ------------------------------------------------------------------------------

MAIN_EXCEPTION = (
    START
    + """
import logging
logging.getLogger("shop").warning("stock low for %s", "apples")
hawkwatch.event("checkout")
with hawkwatch.span("pay"):
    pass

def load(cart):
    return cart["apples"]

def checkout():
    try:
        load({})
    except KeyError as exc:
        raise ValueError("cart is missing apples") from exc

checkout()
"""
)


def test_uncaught_exception_in_main_thread(runner: Runner) -> None:
    done, session = run_unsupervised(runner, MAIN_EXCEPTION)
    assert done.returncode == 1
    assert "ValueError: cart is missing apples" in done.stderr  # Python's own hook still ran
    assert "stock low for apples" in done.stderr  # logging.lastResort still prints it
    (crash,) = crashes(session)
    assert (crash.kind, crash.fatal, crash.type) == ("exception", True, "ValueError")
    assert crash.message == "cart is missing apples"
    assert crash.thread == "MainThread"
    assert crash.source == "sys.excepthook"
    assert [f.function for f in crash.frames] == ["checkout", "<module>"]
    assert crash.frames[0].source == 'raise ValueError("cart is missing apples") from exc'
    (cause,) = crash.causes
    assert (cause.type, cause.relation, cause.message) == ("KeyError", "cause", "'apples'")
    assert cause.frames[0].function == "load"
    assert cause.frames[0].source == 'return cart["apples"]'
    crumbs = [(b.kind, b.text) for b in crash.breadcrumbs]
    assert ("log", "WARNING shop: stock low for apples") in crumbs
    assert ("event", "checkout") in crumbs
    assert any(kind == "span" and text.startswith("pay ") for kind, text in crumbs)
    assert crash.fingerprint == python_fingerprint(crash).hash
    assert crash.title == "ValueError in app.py checkout"
    verdict = classification(session)
    assert verdict.kind == "exception"
    assert verdict.source == "next-start"
    assert any("ValueError" in item for item in verdict.evidence)


def test_uncaught_exception_supervised(runner: Runner) -> None:
    done, session = run_supervised(runner, MAIN_EXCEPTION.replace(START, "import hawkwatch\n"))
    assert done.returncode == 1
    verdict = classification(session)
    assert (verdict.kind, verdict.exit_code, verdict.source) == ("exception", 1, "supervisor")
    (crash,) = crashes(session)
    assert crash.type == "ValueError"


def test_exception_in_thread_is_not_fatal_and_the_app_hook_still_runs(runner: Runner) -> None:
    source = """
import threading
seen = []
threading.excepthook = lambda args: print("APP HOOK", args.exc_type.__name__, flush=True)
import hawkwatch
hawkwatch.start()

def work():
    raise OSError("disk gone")

t = threading.Thread(target=work, name="uploader")
t.start()
t.join()
print("main goes on", flush=True)
"""
    done, session = run_unsupervised(runner, source)
    assert done.returncode == 0
    assert done.stdout.splitlines() == ["APP HOOK OSError", "main goes on"]
    (crash,) = crashes(session)
    assert (crash.type, crash.fatal, crash.thread) == ("OSError", False, "uploader")
    assert crash.source == "threading.excepthook"
    assert crash.frames[0].function == "work"
    assert "MainThread" in [t.name for t in crash.threads]
    assert classification(session).kind == "clean"


def test_exception_in_asyncio_task_chains_the_loop_handler(runner: Runner) -> None:
    source = (
        START
        + """
import asyncio, gc

async def fail():
    raise LookupError("no such order")

async def main():
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda loop, ctx: print("APP HANDLER", ctx["message"], flush=True))
    task = asyncio.create_task(fail())
    await asyncio.sleep(0.01)
    del task
    gc.collect()

asyncio.run(main())
"""
    )
    done, session = run_unsupervised(runner, source)
    assert done.returncode == 0, done.stderr
    assert "APP HANDLER Task exception was never retrieved" in done.stdout
    (crash,) = crashes(session)
    assert (crash.type, crash.fatal, crash.source) == ("LookupError", False, "asyncio")
    assert crash.frames[0].function == "fail"
    assert classification(session).kind == "clean"


def test_crash_record_survives_a_kill_right_after(runner: Runner) -> None:
    source = (
        START
        + """
import os, signal, threading
def work():
    raise ArithmeticError("overflow in ledger")
t = threading.Thread(target=work, name="ledger")
t.start()
t.join()
os.kill(os.getpid(), signal.SIGKILL)
"""
    )
    app = runner.script("app.py", source)
    done = runner.python(str(app))
    assert done.returncode == -signal.SIGKILL
    session = runner.only_session()
    (crash,) = crashes(session)  # read from the dead process's buffer, no agent running
    assert (crash.type, crash.thread) == ("ArithmeticError", "ledger")


# -- fatal signals ---------------------------------------------------------------------------

SEGV = """
import ctypes
def read_null():
    return ctypes.string_at(0)
read_null()
"""


def test_sigsegv_supervised_becomes_one_crash_record(runner: Runner) -> None:
    done, session = run_supervised(runner, "import hawkwatch\n" + SEGV)
    assert done.returncode == -signal.SIGSEGV
    (crash,) = crashes(session)
    assert (crash.kind, crash.type, crash.fatal) == ("signal", "SIGSEGV", True)
    assert crash.source == "faulthandler"
    assert crash.thread == "MainThread"
    assert [f.function for f in crash.frames][1:] == ["read_null", "<module>"]
    assert crash.frames[1].source == "return ctypes.string_at(0)"
    verdict = classification(session)
    assert (verdict.kind, verdict.signal) == ("fatal-signal", signal.SIGSEGV)
    # a later agent start does not report it again
    runner.python(str(runner.script("next.py", NEXT)))
    assert len(crashes(session)) == 1
    assert len(decode_all(session.records().records).of(ExitClassification)) == 1


def test_sigsegv_unsupervised_is_read_at_next_start_exactly_once(runner: Runner) -> None:
    done, session = run_unsupervised(runner, START + SEGV)
    assert done.returncode == -signal.SIGSEGV
    assert (session.path / "crash-fault.txt.reported").is_file()
    runner.python(str(runner.script("next.py", NEXT)))  # a third start
    (crash,) = crashes(session)
    assert crash.type == "SIGSEGV"
    assert classification(session).kind == "fatal-signal"


# -- exit codes ------------------------------------------------------------------------------


@pytest.mark.parametrize("supervised", [False, True], ids=["unsupervised", "supervised"])
def test_sys_exit_3(runner: Runner, supervised: bool) -> None:
    body = "import sys\nsys.exit(3)\n"
    if supervised:
        done, session = run_supervised(runner, "import hawkwatch\n" + body)
    else:
        done, session = run_unsupervised(runner, START + body)
    assert done.returncode == 3
    verdict = classification(session)
    assert (verdict.kind, verdict.exit_code) == ("exit-code", 3)
    assert crashes(session) == []


@pytest.mark.parametrize("supervised", [False, True], ids=["unsupervised", "supervised"])
def test_os_exit(runner: Runner, supervised: bool) -> None:
    body = "import os\nos._exit(4)\n"
    if supervised:
        done, session = run_supervised(runner, "import hawkwatch\n" + body)
    else:
        done, session = run_unsupervised(runner, START + body)
    assert done.returncode == 4
    verdict = classification(session)
    assert (verdict.kind, verdict.exit_code) == ("exit-code", 4)
    if not supervised:
        assert verdict.evidence == ("os._exit(4) was called",)


@pytest.mark.parametrize("supervised", [False, True], ids=["unsupervised", "supervised"])
def test_clean_exit(runner: Runner, supervised: bool) -> None:
    body = "print('done')\n"
    if supervised:
        done, session = run_supervised(runner, "import hawkwatch\n" + body)
    else:
        done, session = run_unsupervised(runner, START + body)
    assert done.returncode == 0
    verdict = classification(session)
    assert (verdict.kind, verdict.exit_code) == ("clean", 0)


# -- killed from outside ---------------------------------------------------------------------

WAIT = """
import os, sys, time
print(os.getpid(), flush=True)
time.sleep(120)
"""


def _start_and_kill(argv: list[str], runner: Runner, sig: int) -> int:
    with subprocess.Popen(
        argv, cwd=runner.cwd, env=runner.env(), stdout=subprocess.PIPE, text=True
    ) as child:
        assert child.stdout is not None
        pid = int(child.stdout.readline())
        os.kill(pid, sig)  # from another process: this test's
        return child.wait(timeout=60)


@pytest.mark.parametrize("supervised", [False, True], ids=["unsupervised", "supervised"])
def test_kill_9_from_another_process(runner: Runner, supervised: bool) -> None:
    app = runner.script("app.py", ("import hawkwatch\n" if supervised else START) + WAIT)
    if supervised:
        argv = [str(HAWKWATCH_SCRIPT), "run", "--", str(app)]
    else:
        argv = [sys.executable, str(app)]
    assert _start_and_kill(argv, runner, signal.SIGKILL) == -signal.SIGKILL
    if not supervised:
        runner.python(str(runner.script("next.py", NEXT)))
    session = runner.sessions()[0]
    verdict = classification(session)
    assert verdict.kind == "killed"
    assert any("OOM" in item for item in verdict.evidence)  # says why it is not called OOM
    if supervised:
        assert verdict.signal == signal.SIGKILL


def test_sigterm_supervised_is_killed(runner: Runner) -> None:
    app = runner.script("app.py", "import hawkwatch\n" + WAIT)
    argv = [str(HAWKWATCH_SCRIPT), "run", "--", str(app)]
    assert _start_and_kill(argv, runner, signal.SIGTERM) == -signal.SIGTERM
    verdict = classification(runner.only_session())
    assert (verdict.kind, verdict.signal) == ("killed", signal.SIGTERM)


def test_killed_during_a_stall_is_hang_killed(runner: Runner) -> None:
    source = """
import asyncio, os, time
async def main():
    print(os.getpid(), flush=True)
    await asyncio.sleep(0.3)
    time.sleep(120)  # blocks the loop
asyncio.run(main())
"""
    app = runner.script("app.py", "import hawkwatch\n" + source)
    with subprocess.Popen(
        [str(HAWKWATCH_SCRIPT), "run", "--", str(app)],
        cwd=runner.cwd,
        env=runner.env(),
        stdout=subprocess.PIPE,
        text=True,
    ) as child:
        assert child.stdout is not None
        pid = int(child.stdout.readline())
        deadline = time.monotonic() + 60
        while not any(runner.root.glob("*/hang-*.json")):  # the stall passed its threshold
            assert time.monotonic() < deadline, "no hang marker"
            time.sleep(0.05)
        os.kill(pid, signal.SIGKILL)
        assert child.wait(timeout=60) == -signal.SIGKILL
    verdict = classification(runner.only_session())
    assert verdict.kind == "hang-killed"


def test_boot_id_changed_is_reboot(runner: Runner) -> None:
    """A reboot cannot happen in a test: the process is really killed, and its recorded boot id
    is then changed to stand for the machine having restarted since."""
    app = runner.script("app.py", START + WAIT)
    assert _start_and_kill([sys.executable, str(app)], runner, signal.SIGKILL) == -9
    session = runner.only_session()
    evidence_file = session.path / "exit-evidence.json"
    evidence = json.loads(evidence_file.read_text())
    evidence["boot_id"] = "00000000-0000-0000-0000-000000000000"
    evidence_file.write_text(json.dumps(evidence))
    runner.python(str(runner.script("next.py", NEXT)))
    assert classification(session).kind == "reboot"


# -- kernel OOM ------------------------------------------------------------------------------

HOG = """
import os
print(os.getpid(), flush=True)
chunks = []
while True:
    chunks.append(bytearray(8 * 1024 * 1024))  # touched: bytearray zero-fills
"""


def _memory_cgroup(limit: int) -> tuple[Path, Path]:
    """A child memory cgroup with ``limit`` bytes (v2 memory.max or v1 limit_in_bytes); skips
    with the reason when it cannot be made. Returns (folder, cgroup.procs)."""
    from hawkwatch.agent.crash_evidence import memory_cgroup

    if os.geteuid() != 0:
        pytest.skip("creating a memory cgroup needs root")
    found = memory_cgroup()
    if found is None:
        pytest.skip("no memory cgroup (v1 memory controller or v2 memory.events) is mounted")
    parent, version = Path(found[0]), found[1]
    folder = parent / f"hawkwatch-test-{os.getpid()}-{time.monotonic_ns()}"
    try:
        folder.mkdir()
        if version == 2:
            (folder / "memory.max").write_text(str(limit))
            swap = folder / "memory.swap.max"
            if swap.exists():
                swap.write_text("0")
        else:
            (folder / "memory.limit_in_bytes").write_text(str(limit))
            memsw = folder / "memory.memsw.limit_in_bytes"
            if memsw.exists():
                memsw.write_text(str(limit))
    except OSError as exc:
        with_reason = f"cannot create a memory cgroup under {parent}: {exc.strerror}"
        if folder.exists():
            folder.rmdir()
        pytest.skip(with_reason)
    return folder, folder / "cgroup.procs"


@pytest.mark.parametrize("supervised", [False, True], ids=["unsupervised", "supervised"])
def test_kernel_oom_kill_in_a_memory_cgroup(runner: Runner, supervised: bool) -> None:
    folder, procs = _memory_cgroup(160 * 1024 * 1024)
    try:
        app = runner.script("app.py", ("import hawkwatch\n" if supervised else START) + HOG)
        inner = [str(HAWKWATCH_SCRIPT), "run", "--"] if supervised else [sys.executable]
        argv = ["sh", "-c", f'echo $$ > "{procs}" && exec "$@"', "sh", *inner, str(app)]
        done = subprocess.run(
            argv, cwd=runner.cwd, env=runner.env(), capture_output=True, text=True, timeout=120
        )
        assert done.returncode == -signal.SIGKILL, done.stderr
        if not supervised:
            runner.python(str(runner.script("next.py", NEXT)))
        verdict = classification(runner.sessions()[0])
        assert verdict.kind == "oom-killed", verdict
        assert any("oom_kill counter grew" in item for item in verdict.evidence)
    finally:
        for _ in range(50):
            try:
                folder.rmdir()
                break
            except OSError:
                time.sleep(0.1)
