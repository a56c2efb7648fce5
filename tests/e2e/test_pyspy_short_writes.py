"""End to end: under ``hawkwatch run --profile`` an unbuffered program loses no output.

py-spy (blocking) stops the program many times a second; a write to a full pipe stopped part way
comes back short, and with ``PYTHONUNBUFFERED`` the text layer drops the rest (CPython
gh-85393). The program prints long lines to a reader slower than it, so its writes block on the
full pipe most of the time, while py-spy samples at 100 Hz: every line must arrive whole, and
the streams must still be unbuffered (a line is readable before the program flushes or ends).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hawkwatch.pyspy import find_pyspy
from tests.e2e.conftest import Runner

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(find_pyspy() is None, reason="py-spy is in the test extra"),
]

LINE = 200_000
APP = """
import io, json, sys, time

print("ready")  # unbuffered: the test reads it while this program waits
sys.stdin.readline()
line = "y" * %d
end = time.monotonic() + 3
lines = 0
while time.monotonic() < end:
    print(line)
    lines += 1
streams = {
    name: {
        "encoding": s.encoding, "errors": s.errors, "line_buffering": s.line_buffering,
        "write_through": s.write_through, "name": s.name, "mode": s.mode,
        "fileno": s.fileno(), "isatty": s.isatty(), "original": s is getattr(sys, f"__{name}__"),
    }
    for name, s in (("stdout", sys.stdout), ("stderr", sys.stderr))
}
print(json.dumps({"lines": lines, "streams": streams}), file=sys.stderr)
""" % LINE  # noqa: UP031 - the program's own braces


def _run(runner: Runner, app: Path, *supervise: str) -> tuple[list[int], dict[str, object]]:
    """Lengths of the lines read (slowly) and the program's report of its streams."""
    command = (
        [sys.executable, "-m", "hawkwatch", *supervise, "--", sys.executable, str(app)]
        if supervise
        else [sys.executable, str(app)]
    )
    with subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=runner.env(PYTHONUNBUFFERED="1"),
        cwd=runner.cwd,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        try:
            assert proc.stdout.readline() == b"ready\n"  # before any flush or exit
            proc.stdin.write(b"go\n")
            proc.stdin.flush()
            lengths = []
            for line in iter(proc.stdout.readline, b""):
                lengths.append(len(line))
                time.sleep(0.002)  # slower than the writer: its writes wait on a full pipe
            err = proc.stderr.read().decode()
            assert proc.wait(timeout=120) == 0, err
        finally:
            proc.kill()
    reports = [line for line in err.splitlines() if line.startswith('{"lines"')]
    assert reports, err
    report = json.loads(reports[-1])
    return lengths, report


def test_py_spy_stopping_an_unbuffered_program_loses_no_output(tmp_path: Path) -> None:
    runner = Runner(home=tmp_path / "home", cwd=tmp_path)
    app = runner.script("app.py", APP)
    profile = ("--profile", "-c", "profiler.engine=py-spy", "-c", "profiler.rate_hz=100")
    lengths, report = _run(runner, app, "run", *profile)
    assert report["lines"] == len(lengths)
    short = [n for n in lengths if n != LINE + 1]
    assert not short, f"{len(short)} of {len(lengths)} lines cut: {short[:5]}"

    _, plain = _run(runner, app)  # the same streams as without hawkwatch, but whole writes
    for name in ("stdout", "stderr"):
        assert report["streams"][name] == plain["streams"][name]
        assert report["streams"][name]["write_through"] is True
