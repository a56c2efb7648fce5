"""The databases a server benchmark runs on: SQLite in a temporary folder, and a real PostgreSQL
started for the run (initdb + pg_ctl in a temporary folder, as the tests start one).

``each_database`` hands each one's URL, label and scratch folder to the benchmark's ``measure``
and returns what it measured per label; a PostgreSQL that cannot start is said, not fatal.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parents[1]
T = TypeVar("T")


def each_database(
    choice: str, prefix: str, measure: Callable[[str, str, Path], T]
) -> dict[str, T]:
    """Run ``measure(url, label, folder)`` on SQLite and/or PostgreSQL (``choice``: sqlite,
    postgresql or both)."""
    results: dict[str, T] = {}
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        if choice in ("sqlite", "both"):
            results["SQLite"] = measure(f"sqlite:///{folder / 'bench.db'}", "SQLite", folder)
        if choice in ("postgresql", "both"):
            sys.path.insert(0, str(ROOT))
            from tests.server.postgres import start_postgres

            pg_folder = Path(tempfile.mkdtemp(prefix="hawkwatch-pg-"))
            started = start_postgres(pg_folder)
            if isinstance(started, str):
                print(f"PostgreSQL: not measured ({started})")
            else:
                try:
                    results["PostgreSQL"] = measure(started.url, "PostgreSQL", folder)
                finally:
                    started.stop()
                    shutil.rmtree(pg_folder, ignore_errors=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return results
