"""``memory_leaks.py``'s three Python leaks amid churn, plus a leak in C memory.

Run: ``hawkwatch run --memory=memray -- python examples/memory_native_leak.py`` then
``hawkwatch memory``. ``leak_sqlite`` keeps 1 KiB rows in an in-memory SQLite table that is
never pruned (every eighth step); ``pruned_sqlite`` inserts into another and deletes at once.
SQLite allocates its pages with the C library's ``malloc``: tracemalloc sees none of it (only the
few Python objects of each call), memray sees every page with its native stack down to the
Python caller. (numpy would not do for this: it reports its data buffers to tracemalloc itself;
nor would ``malloc`` called through ctypes: memray's hooks do not see a symbol looked up with
``dlsym``.)
"""

from __future__ import annotations

import sqlite3
import sys
import time

from memory_leaks import (
    STEPS,
    bounded_cache,
    churn,
    cleared_list,
    leak_cache,
    leak_callback,
    leak_registry,
    used_callback,
)

# Two databases: one page cache each, so the pruned table's freed pages are not reused by the
# kept one (which would make the pruned inserts the ones allocating the kept rows' pages).
KEPT = sqlite3.connect(":memory:", check_same_thread=False)
KEPT.execute("CREATE TABLE kept (k INTEGER PRIMARY KEY, v BLOB)")
PRUNED = sqlite3.connect(":memory:", check_same_thread=False)
PRUNED.execute("CREATE TABLE pruned (k INTEGER PRIMARY KEY, v BLOB)")


def leak_sqlite(i: int) -> None:
    KEPT.execute("INSERT INTO kept VALUES (?, zeroblob(1024))", (i,))


def pruned_sqlite(i: int) -> None:
    PRUNED.execute("INSERT INTO pruned VALUES (?, zeroblob(1024))", (i,))
    PRUNED.execute("DELETE FROM pruned WHERE k < ?", (i - 20,))


def one_round() -> None:
    """24 steps: every leak and its twin at their rates, then a short sleep."""
    for step in range(24):
        n = next(STEPS)
        churn(n)
        bounded_cache(n)
        cleared_list(n)
        used_callback(n)
        pruned_sqlite(n)
        leak_cache(n)
        if step % 2 == 0:
            leak_registry(n)
        if step % 4 == 0:
            leak_callback(n)
        if step % 8 == 0:
            leak_sqlite(n)
    time.sleep(0.01)


def run_rounds(rounds: int) -> None:
    for _ in range(rounds):
        one_round()


def main(seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        one_round()


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 20.0)
