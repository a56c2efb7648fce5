"""The benchmarks' timing driver: its layout shift is in place before the program runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

DRIVER = Path(__file__).resolve().parents[2] / "benchmarks" / "workloads" / "timed_run.py"

PROGRAM = """
import gc, sys
shifts = [o for o in gc.get_objects() if isinstance(o, type) and o.__name__.startswith("TagShift")]
print("argv", sys.argv[1:], "classes", len(shifts))
"""


def _run(tmp_path: Path, *options: str) -> list[str]:
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    done = subprocess.run(
        [sys.executable, str(DRIVER), *options, str(script), "a", "b"],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    return done.stdout.splitlines()


def test_the_layout_shift_is_made_before_the_program_and_reported(tmp_path: Path) -> None:
    out = _run(tmp_path, "--layout", "7,30")
    assert out[0] == "argv ['a', 'b'] classes 7"  # the program's own argv, the classes alive
    result = json.loads(out[-1])
    assert result["layout"] == [7, 30, 37]
    assert result["work_s"] > 0 and result["work_cpu_s"] >= 0


def test_without_a_layout_nothing_is_shifted_or_reported(tmp_path: Path) -> None:
    out = _run(tmp_path)
    assert out[0] == "argv ['a', 'b'] classes 0"
    assert "layout" not in json.loads(out[-1])
