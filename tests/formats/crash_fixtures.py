"""Where the third-party crash fixtures live in the repository, and a reader of their snapshots.

The fixtures are byte-for-byte copies (see ``tests/fixtures/crash/README.md`` for sources and
licences), kept in the repository so CI needs nothing outside it.
"""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "crash"
DATA_SUFFIXES = {".txt", ".json", ".ips", ".crash"}


def fixture_files() -> list[Path]:
    """Every crash data file (not licences, README or snapshots)."""
    return sorted(
        path
        for path in FIXTURES.rglob("*")
        if path.is_file() and path.suffix in DATA_SUFFIXES and "snapshots" not in path.parts
    )


def fixture_id(path: Path) -> str:
    return str(path.relative_to(FIXTURES))


def kscrash_pairs() -> list[str]:
    """Names with both ``kscrash/X.txt`` and ``kscrash/X.json``."""
    folder = FIXTURES / "kscrash"
    return sorted(
        path.stem for path in folder.glob("*.json") if (folder / f"{path.stem}.txt").exists()
    )
