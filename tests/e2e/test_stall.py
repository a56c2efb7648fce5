"""Stalls of real applications in child processes: killed mid-hang, GUI click handlers, CLI views.

The hang-kill tests SIGKILL a child whose event loop is stuck and start the next process with
the same HAWKWATCH_HOME, which must report the dead one. The GUI tests run real toolkits: Qt
(PySide6, offscreen platform) clicks a real button from a timer in the event loop; Tk runs
under an Xvfb server this test starts, and xdotool clicks the button through X.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hawkwatch.model import collections as c
from hawkwatch.store import Session
from tests.builders import wait_for
from tests.e2e.conftest import Runner, by_collection, json_of

pytestmark = pytest.mark.slow

STUCK_ASYNCIO_APP = """
import asyncio, sys, time
import hawkwatch

hawkwatch.start(app_name="stuck")

def stuck_forever():
    time.sleep(3600)

async def main():
    await asyncio.sleep(0.5)
    print("stalling", flush=True)
    stuck_forever()

asyncio.run(main())
"""

GIL_HOG_APP = """
import asyncio, re
import hawkwatch

hawkwatch.start(app_name="gil-hog")

def backtrack_forever():
    re.match(r"(a+)+$", "a" * 60 + "b")  # C code that keeps the GIL for ages

async def main():
    await asyncio.sleep(0.5)
    print("stalling", flush=True)
    backtrack_forever()

asyncio.run(main())
"""

NEXT_LAUNCH = """
import hawkwatch
hawkwatch.start(app_name="next")
hawkwatch.stop()
"""


def start_child(runner: Runner, name: str, source: str) -> subprocess.Popen[str]:
    script = runner.script(name, source)
    return subprocess.Popen(
        [sys.executable, str(script)],
        cwd=runner.cwd,
        env=runner.env(),
        stdout=subprocess.PIPE,
        text=True,
    )


def kill_when(child: subprocess.Popen[str], runner: Runner, ready: str) -> Session:
    """Wait for the child's stall to leave file ``ready`` in its session, then SIGKILL it."""
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "stalling"
    [session] = runner.sessions()

    def left_its_mark() -> bool:
        return any(p.stat().st_size > 0 for p in session.path.glob(ready))

    try:
        assert wait_for(left_its_mark, timeout_s=30)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(30)
        child.stdout.close()
    assert child.returncode == -signal.SIGKILL
    return session


def test_a_process_killed_during_a_stall_is_reported_by_the_next_launch(runner: Runner) -> None:
    child = start_child(runner, "stuck.py", STUCK_ASYNCIO_APP)
    dead = kill_when(child, runner, "hang-*.json")

    runner.script("next.py", NEXT_LAUNCH)
    assert runner.python("next.py").returncode == 0
    new = next(s for s in runner.sessions() if s != dead)
    [kill] = json_of(by_collection(new)[c.HANG_KILL])
    assert kill["previous_session"] == dead.name
    assert kill["source"] == "marker"
    assert kill["loop"] == "asyncio"
    assert kill["thread"] == "MainThread"
    assert kill["duration_ms"] >= 0
    assert "stuck_forever" in [frame[0] for frame in kill["stack"]]  # type: ignore[union-attr]

    # Reported once: a third launch finds the marker claimed.
    assert runner.python("next.py").returncode == 0
    third = runner.sessions()[-1]
    assert c.HANG_KILL not in by_collection(third)
    report = runner.hawkwatch("report", str(new.path))
    assert report.returncode == 0, report.stderr
    assert "Killed while stalled" in report.stdout
    assert dead.name in report.stdout


def test_a_process_killed_while_c_code_held_the_gil_is_reported_from_the_backstop(
    runner: Runner,
) -> None:
    child = start_child(runner, "hog.py", GIL_HOG_APP)
    dead = kill_when(child, runner, "stall-backstop.txt")
    assert not list(dead.path.glob("hang-*.json"))  # the watchdog never got to run

    runner.script("next.py", NEXT_LAUNCH)
    assert runner.python("next.py").returncode == 0
    new = next(s for s in runner.sessions() if s != dead)
    [kill] = json_of(by_collection(new)[c.HANG_KILL])
    assert kill["previous_session"] == dead.name
    assert kill["source"] == "faulthandler"
    assert kill["loop"] == "asyncio"
    assert "backtrack_forever" in [frame[0] for frame in kill["stack"]]  # type: ignore[union-attr]


QT_APP = """
import os, time
os.environ["QT_QPA_PLATFORM"] = "offscreen"
import hawkwatch
hawkwatch.start(app_name="qt-app")
from PySide6.QtCore import QTimer
from PySide6.QtTest import QTest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QPushButton

app = QApplication([])
button = QPushButton("Export")

def on_export_clicked():
    time.sleep(0.9)  # the slow handler the monitor must name

button.clicked.connect(on_export_clicked)
button.show()
QTimer.singleShot(800, lambda: QTest.mouseClick(button, Qt.MouseButton.LeftButton))
QTimer.singleShot(2800, app.quit)
app.exec()
hawkwatch.stop()
"""


def test_a_qt_click_handler_that_blocks_is_caught(runner: Runner) -> None:
    runner.script("qt_app.py", QT_APP)
    result = runner.python("qt_app.py")
    assert result.returncode == 0, result.stderr
    stalls = json_of(by_collection(runner.only_session())[c.ANR])
    assert len(stalls) == 1, stalls
    [stall] = stalls
    assert stall["loop"] == "qt"
    assert stall["thread"] == "MainThread"
    frames = [frame[0] for frame in stall["point"]["frames"]]  # type: ignore[index]
    assert frames[0] == "on_export_clicked"
    assert 600 <= stall["duration"] <= 5000  # type: ignore[operator]

    raw = runner.hawkwatch(
        "records", str(runner.only_session().path), "--collection", "anr", "--json"
    )
    assert raw.returncode == 0
    [record] = json.loads(raw.stdout)["records"]
    assert json.loads(record["value"])["loop"] == "qt"
    report = runner.hawkwatch("report", str(runner.only_session().path))
    assert report.returncode == 0, report.stderr
    assert "Stalls (1," in report.stdout
    assert "on_export_clicked" in report.stdout
    assert "time.sleep(0.9)" in report.stdout  # the source line of the blocking frame


TK_APP = """
import time, tkinter
import hawkwatch
hawkwatch.start(app_name="tk-app")

root = tkinter.Tk()
root.title("stall-test")

def on_save_clicked():
    time.sleep(0.9)  # the slow handler the monitor must name
    root.after(1200, root.destroy)

button = tkinter.Button(root, text="Save", command=on_save_clicked)
button.pack(padx=40, pady=40)

def say_where():
    root.update_idletasks()
    x = button.winfo_rootx() + button.winfo_width() // 2
    y = button.winfo_rooty() + button.winfo_height() // 2
    print(x, y, flush=True)

root.after(600, say_where)
root.after(20000, root.destroy)  # never hang the test run
root.mainloop()
hawkwatch.stop()
"""


def free_display() -> int:
    for number in range(90, 190):
        if (
            not Path(f"/tmp/.X11-unix/X{number}").exists()
            and not Path(f"/tmp/.X{number}-lock").exists()
        ):
            return number
    raise RuntimeError("no free X display number")


@pytest.fixture
def xvfb() -> Iterator[str]:
    """An Xvfb server of our own; the display name."""
    if sys.platform != "linux":
        pytest.skip("Xvfb runs on Linux")
    assert shutil.which("Xvfb"), "Xvfb is missing: scripts/test.sh installs it (apt xvfb)"
    number = free_display()
    server = subprocess.Popen(
        ["Xvfb", f":{number}", "-screen", "0", "800x600x24", "-nolisten", "tcp"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert wait_for(lambda: Path(f"/tmp/.X11-unix/X{number}").exists(), timeout_s=20)
        yield f":{number}"
    finally:
        server.terminate()
        server.wait(10)


def test_a_tk_click_handler_that_blocks_is_caught(runner: Runner, xvfb: str) -> None:
    assert shutil.which("xdotool"), "xdotool is missing: scripts/test.sh installs it (apt xdotool)"
    script = runner.script("tk_app.py", TK_APP)
    env = runner.env(DISPLAY=xvfb)
    app = subprocess.Popen(
        [sys.executable, str(script)], cwd=runner.cwd, env=env, stdout=subprocess.PIPE, text=True
    )
    assert app.stdout is not None
    x, y = app.stdout.readline().split()
    click = subprocess.run(
        ["xdotool", "mousemove", "--sync", x, y, "click", "1"], env=env, capture_output=True
    )
    assert click.returncode == 0, click.stderr
    assert app.wait(60) == 0
    app.stdout.close()
    stalls = json_of(by_collection(runner.only_session())[c.ANR])
    assert len(stalls) == 1, stalls
    [stall] = stalls
    assert stall["loop"] == "tk"
    frames = [frame[0] for frame in stall["point"]["frames"]]  # type: ignore[index]
    assert frames[0] == "on_save_clicked"
    assert 600 <= stall["duration"] <= 5000  # type: ignore[operator]
