"""memray captures read into the live-allocation model: a real capture of a leaking script
(Python and native stacks), and a damaged file as one clear error."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hawkwatch.errors import FormatError
from hawkwatch.formats.allocations import read_allocations
from hawkwatch.model.stack import PyFrame

pytest.importorskip("memray")

SCRIPT = """
KEEP = []
def leak():
    KEEP.append(bytearray(10000))
def churn():
    return [bytes(1000) for _ in range(100)]
for i in range(500):
    leak()
    churn()
"""


def capture(tmp_path: Path, *options: str) -> Path:
    script = tmp_path / "leaky.py"
    script.write_text(SCRIPT)
    out = tmp_path / f"capture{len(options)}.bin"
    subprocess.run(
        [sys.executable, "-m", "memray", "run", "--quiet", *options, "-o", str(out), str(script)],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        timeout=120,
    )
    return out


@pytest.mark.parametrize("options", [(), ("--native",)])
def test_the_leak_is_the_largest_live_stack_and_churn_is_gone(
    tmp_path: Path, options: tuple[str, ...]
) -> None:
    live = read_allocations(capture(tmp_path, *options)).value
    assert live.source == ("memray-native" if options else "memray")
    biggest = max(live.groups, key=lambda g: g.bytes)
    frames = live.stacks.stack(biggest.stack_id)
    python = [f for f in frames if isinstance(f, PyFrame) and f.file.endswith("leaky.py")]
    assert python[0].func == "leak" and python[0].line == 4
    assert biggest.count == 500 and biggest.bytes >= 500 * 10000
    every_function = {
        f.func for g in live.groups for f in live.stacks.stack(g.stack_id) if isinstance(f, PyFrame)
    }
    assert "churn" not in every_function
    if options:
        assert any(f.file.endswith(".c") for f in frames), frames


def test_a_damaged_capture_is_one_clear_error(tmp_path: Path) -> None:
    damaged = tmp_path / "damaged.bin"
    damaged.write_bytes(b"\x04\x22\x4d\x18" + b"\x00" * 64)
    with pytest.raises(FormatError, match="memray"):
        read_allocations(damaged)
