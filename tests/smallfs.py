"""A real small filesystem for tests of full disks: a tmpfs mounted with ``size=``.

Mounting needs root (or CAP_SYS_ADMIN); where it is refused the test is skipped with the reason.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

PAGE = 4096


@contextmanager
def small_filesystem(folder: Path, size_kb: int = 4096) -> Iterator[Path]:
    """Mount a tmpfs of ``size_kb`` on ``folder`` for the block; skip the test if refused."""
    folder.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_kb}k,mode=0777", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {result.stderr.strip() or 'not root'}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False, capture_output=True)


def free_bytes(folder: Path) -> int:
    info = os.statvfs(folder)
    return info.f_bavail * info.f_frsize


def fill(folder: Path, leave_free: int, name: str = "filler") -> Path:
    """Write a file into ``folder`` until only ``leave_free`` bytes (whole pages) stay free."""
    filler = folder / name
    with filler.open("ab") as f:
        while free_bytes(folder) > leave_free:
            chunk = min(free_bytes(folder) - leave_free, 1 << 20)
            try:
                f.write(b"\xff" * max(chunk, 1))
                f.flush()
            except OSError:
                break
    return filler
