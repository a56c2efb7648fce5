"""Records written while the interpreter shuts down (``atexit``), where Python 3.12+ refuses to
start the store's background thread: nothing raises into the program and nothing is lost."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hawkwatch.store.records import read_records

PROGRAM = """
import atexit, sys
from hawkwatch.store.records import RecordStore

store = RecordStore(sys.argv[1])  # opened early; its background thread never started

def write_at_exit():
    store.store_async("exit-test", "queued", "a line for the background thread")
    for i in range(4000):  # enough to pass the buffer's flush threshold: a flush is requested
        store.store("exit-test", f"line-{i}", "x" * 100)
    store.store_async("exit-test", "last", "queued after the flush request")
    store.close()
    print("wrote", flush=True)

atexit.register(write_at_exit)
"""


def test_records_written_at_exit_are_kept_and_nothing_raises(tmp_path: Path) -> None:
    folder = tmp_path / "session"
    folder.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "wrote\n"
    assert "Traceback" not in done.stderr, done.stderr
    keys = [r.key for r in read_records(folder, "exit-test").records]
    written_now = [k for k in keys if k.startswith("line-")]
    assert written_now == [f"line-{i}" for i in range(4000)]  # in order, every one
    assert sorted(set(keys) - set(written_now)) == ["last", "queued"]  # queued ones: once each
    assert len(keys) == 4002
