"""``hawkwatch run``'s command line read without argparse (``cli.run_args``) against argparse:
whenever the fast reader answers, its namespace is argparse's, on every Python version."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hawkwatch.cli import build_parser
from hawkwatch.cli.run_args import parse_run

TOKENS = [
    "run", "-v", "--verbose", "--debug", "--", "-m", "http.server", "python", "app.py", "-",
    "--profile", "--children", "--io", "--no-io", "--memory", "--memory=memray",
    "--memory=tracemalloc", "--memory=", "-c", "--option", "--option=gc.threshold_ms=5",
    "gc.threshold_ms=5", "--app-name", "--app-name=shop", "--app-version", "shop", "-1",
    "--prof", "-h", "--help", "-o", "-cgc.enabled=false", "--version", "-x",
]  # fmt: skip

COMMON = [
    ["run", "--", "python", "app.py"],
    ["run", "python", "app.py", "--profile"],
    ["-v", "--debug", "run", "--profile", "--children", "--no-io", "--", "python", "-c", "1"],
    ["run", "-m", "http.server", "8000", "--bind", "127.0.0.1"],
    ["run", "-c", "gc.threshold_ms=5", "--option", "a=1", "--option=b=2", "--", "python"],
    ["run", "--memory", "python", "app.py"],
    ["run", "--memory=memray", "--", "python", "app.py"],
    ["run", "--memory", "--", "python", "app.py"],
    ["run", "--app-name", "shop", "--app-version=1.2", "--io", "app.py"],
    ["run", "--", "--", "python"],
    ["run"],
]


def _argparse(argv: list[str]) -> dict[str, object] | None:
    """argparse's namespace for ``argv``; None when it refuses it (exits)."""
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        try:
            return vars(build_parser(argv).parse_args(argv))
        except SystemExit:
            return None


@pytest.mark.parametrize("argv", COMMON, ids=" ".join)
def test_the_common_forms_are_read_without_argparse_as_argparse_reads_them(
    argv: list[str],
) -> None:
    fast = parse_run(argv)
    assert fast is not None
    assert vars(fast) == _argparse(argv)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(TOKENS), max_size=7))
@example(["run", "-m", "mod", "--", "x"])
@example(["run", "-m", "--profile"])
@example(["--version", "run"])
@example(["run", "--help"])
def test_whenever_the_fast_reader_answers_argparse_agrees(tokens: list[str]) -> None:
    argv = ["run", *tokens] if "run" not in tokens else tokens
    fast = parse_run(argv)
    if fast is not None:
        assert vars(fast) == _argparse(argv)


def test_help_a_typo_and_the_deprecated_spelling_are_left_to_argparse() -> None:
    for argv in (["run", "--help"], ["run", "--prof", "app.py"], ["run", "-o", "a=1", "x"]):
        assert parse_run(argv) is None


def test_a_supervised_run_does_not_import_argparse_before_its_program_starts(
    tmp_path: Path,
) -> None:
    """What the supervisor had imported when it spawned the program, seen from the program:
    its parent's imports are recorded by a ``sitecustomize`` of the test's in the parent."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(
        "import os, sys\n"
        "_spawn = os.posix_spawnp\n"
        "def spy(*args, **kwargs):\n"
        "    with open(os.environ['SPY_OUT'], 'w') as f:\n"
        "        f.write(repr(sorted(sys.modules)))\n"
        "    return _spawn(*args, **kwargs)\n"
        "os.posix_spawnp = spy\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}
    env |= {
        "HAWKWATCH_HOME": str(tmp_path / "home"),
        "PYTHONPATH": os.pathsep.join([str(hook), env.get("PYTHONPATH", "")]),
        "SPY_OUT": str(tmp_path / "spawned.txt"),
    }
    script = Path(sys.executable).with_name("hawkwatch")
    done = subprocess.run(
        [str(script), "run", "--children", "-c", "gc.threshold_ms=5", "--", sys.executable, "-c",
         "print('ran')"],
        env=env, cwd=tmp_path, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ran\n"
    loaded = set(json.loads((tmp_path / "spawned.txt").read_text().replace("'", '"')))
    assert "hawkwatch.launcher" in loaded  # the spy saw the supervisor's own imports
    # (``re`` is there: pip's ``hawkwatch`` script imports it)
    assert loaded & {"argparse", "gettext", "locale", "typing", "msgspec", "pathlib"} == set()
