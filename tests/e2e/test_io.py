"""The I/O canary in real processes: the example app's four misuses (and none of its right ways),
the report, and a forked child that watches its own files."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import Runner, by_collection, json_of

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "io_misuse.py"


def test_the_example_app_shows_exactly_its_four_misuses(runner: Runner) -> None:
    # The canary is on by default. 32 MB take more than 1 ms to read on any machine; the 13 ms
    # default is for real use.
    done = runner.hawkwatch(
        "run", "-c", "io.loop_op_ms=1", "--", sys.executable, str(EXAMPLE), "--big-mb", "32"
    )
    assert done.returncode == 0, done.stderr
    assert "four misuses" in done.stdout
    issues = json_of(by_collection(runner.only_session()).get("io-issue", []))
    found = sorted((i["type"], i["frames"][0]["function"]) for i in issues)  # type: ignore[index]
    assert found == [
        ("loop-thread-io", "load_report_wrong"),
        ("repeated-read", "handle_request_wrong"),
        ("small-buffer", "checksum_wrong"),
        ("unclosed", "count_lines_wrong"),
    ]
    by_type = {i["type"]: i for i in issues}
    assert str(by_type["loop-thread-io"]["path"]).endswith("report.bin")
    assert by_type["loop-thread-io"]["bytes"] == 32 << 20
    assert by_type["small-buffer"]["buffer_size"] == 512 and by_type["small-buffer"]["ops"] > 20

    report = runner.hawkwatch("report", "--json")
    assert report.returncode == 0, report.stderr
    listed = json.loads(report.stdout)["io_issues"]
    assert sorted(i["type"] for i in listed) == [t for t, _ in found]
    assert set(listed[0]) == {
        "type", "path", "thread", "ops", "bytes", "buffer_size", "cost_ms", "frames", "count",
        "unwatched", "sampled_one_in",
    }  # fmt: skip
    # Every site of the example is in its warm-up: each file was watched, none sampled.
    assert {(i["unwatched"], i["sampled_one_in"]) for i in listed} == {(0, 1)}
    console = runner.hawkwatch("report")
    assert "File I/O issues (4 kinds, 4 in all)" in console.stdout


WHICH_OPEN = "import io; print(open is io.open, type(open).__name__)"


def test_no_io_leaves_open_alone_and_io_wins_over_the_options(runner: Runner) -> None:
    """``--no-io`` turns the default canary off; ``--io`` turns it on over ``io.enabled``."""
    cases = {
        ("--no-io",): "builtin_function_or_method",  # the real open
        (): "method",  # the canary's
        ("-c", "io.enabled=false", "--io"): "method",
    }
    for flags, kind in cases.items():
        done = runner.hawkwatch("run", *flags, "--", sys.executable, "-c", WHICH_OPEN)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["True", kind], flags


FORKING_APP = """
import gc, os, sys, warnings
import hawkwatch
warnings.simplefilter("ignore", ResourceWarning)
hawkwatch.start(app_name="forker", io_enabled=True)
data = sys.argv[1]

def leak_in_child():
    f = open(data, "rb")
    f.read(1)

pid = os.fork()
if pid == 0:
    leak_in_child()
    gc.collect()
    hawkwatch.stop()
    restored = type(open).__name__ == "builtin_function_or_method"
    os._exit(0 if restored and open is __import__("io").open else 3)
os.waitpid(pid, 0)
with open(data, "rb") as f:  # the parent's canary still works
    f.read()
wrapped = type(open).__name__ == "method"
hawkwatch.stop()
print(wrapped, type(open).__name__)
"""


def test_a_forked_child_watches_its_own_files_and_restores_open(runner: Runner) -> None:
    data = runner.cwd / "data.bin"
    data.write_bytes(b"x" * 1000)
    script = runner.script("forker.py", FORKING_APP)
    done = runner.python(str(script), str(data))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "builtin_function_or_method"]
    sessions = runner.sessions()
    assert len(sessions) == 2
    issues = {s.name: json_of(by_collection(s).get("io-issue", [])) for s in sessions}
    child = [s for s in sessions if s.metadata.get("parent_session")]
    assert len(child) == 1
    [leaked] = issues[child[0].name]
    assert leaked["type"] == "unclosed"
    assert leaked["frames"][0]["function"] == "leak_in_child"  # type: ignore[index]
    parent = [s for s in sessions if not s.metadata.get("parent_session")]
    assert issues[parent[0].name] == []
