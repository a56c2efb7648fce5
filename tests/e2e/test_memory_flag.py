"""``hawkwatch run --memory[=BACKEND]``: a bare ``--memory`` before the program still means
tracemalloc (the program is not taken for a backend); an unknown backend is one clear line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.e2e.conftest import Runner


def test_bare_memory_flag_before_the_program_traces_with_tracemalloc(tmp_path: Path) -> None:
    runner = Runner(home=tmp_path / "home", cwd=tmp_path)
    runner.script("app.py", "print('app ran')\n")
    done = runner.hawkwatch("run", "--memory", sys.executable, "app.py")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "app ran"
    shown = runner.hawkwatch("memory", "--json")
    (window,) = json.loads(shown.stdout)["tracing"]["windows"]
    assert window["backend"] == "tracemalloc" and window["reason"] == "always"


def test_an_unknown_backend_is_one_line(tmp_path: Path) -> None:
    runner = Runner(home=tmp_path / "home", cwd=tmp_path)
    done = runner.hawkwatch("run", "--memory=bogus", "--", sys.executable, "-c", "pass")
    assert done.returncode == 2
    assert done.stderr == "hawkwatch: --memory=bogus: use --memory=tracemalloc or --memory=memray\n"
