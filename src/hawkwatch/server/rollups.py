"""Occurrences counted per issue, release and UTC day (``issue_days``), kept in step with the
``occurrences`` table inside the pipeline's transaction, so the dashboard sums a few thousand
rollup rows instead of counting hundreds of thousands of occurrences per page.

``events`` is how many occurrences; ``sessions`` how many distinct sessions had one that day (a
session belongs to one release; one that hits an issue on two days counts on each). A session's
occurrences are always replaced as a whole (snapshots), so ``remove_session`` subtracts exactly
what ``add`` added for it. Writes are upserts (``INSERT … ON CONFLICT``), safe between workers.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from typing import Any, Final

from sqlalchemy import Connection, delete, select
from sqlalchemy.dialects import postgresql, sqlite

from hawkwatch.server.schema import issue_days, occurrences

DAY: Final = 86400.0
NO_RELEASE: Final = ""  # a key column cannot be NULL: occurrences without a release


def day_of(moment: float) -> int:
    return math.floor(moment / DAY)


def _upsert(db: Connection, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    dialect = postgresql if db.dialect.name == "postgresql" else sqlite
    statement = dialect.insert(issue_days)
    statement = statement.on_conflict_do_update(
        index_elements=["issue_id", "release", "day"],
        set_={
            "events": issue_days.c.events + statement.excluded.events,
            "sessions": issue_days.c.sessions + statement.excluded.sessions,
        },
    )
    for row in rows:
        db.execute(statement.values(**row))


def _rows(keys: Iterable[tuple[int, str | None, float]], session_id: int | None,
          sign: int) -> list[dict[str, Any]]:  # fmt: skip
    events = Counter((issue, release or NO_RELEASE, day_of(moment))
                     for issue, release, moment in keys)  # fmt: skip
    return [
        {"issue_id": issue, "release": release, "day": day, "events": sign * count,
         "sessions": sign * (1 if session_id is not None else 0)}
        for (issue, release, day), count in sorted(events.items())
    ]  # fmt: skip


def add(db: Connection, session_id: int | None,
        keys: Iterable[tuple[int, str | None, float]]) -> None:  # fmt: skip
    """Count the occurrences ``(issue_id, release, time)`` one upload (of ``session_id``) made."""
    _upsert(db, _rows(keys, session_id, +1))


def remove_session(db: Connection, session_id: int) -> None:
    """Uncount a session's occurrences (before they are deleted and replaced)."""
    found = db.execute(
        select(occurrences.c.issue_id, occurrences.c.release, occurrences.c.time)
        .where(occurrences.c.session_id == session_id)
    ).all()  # fmt: skip
    _upsert(db, _rows(((r.issue_id, r.release, r.time) for r in found), session_id, -1))
    db.execute(delete(issue_days).where(issue_days.c.events <= 0))


def backfill_statement(dialect: str) -> str:
    """SQL that fills ``issue_days`` from ``occurrences`` (migration 0004, benchmarks)."""
    # SQLite's CAST truncates toward zero, a floor for the positive Unix times
    day = "CAST(time / 86400 AS INTEGER)"
    if dialect != "sqlite":
        day = "CAST(floor(time / 86400) AS INTEGER)"
    return (
        "INSERT INTO issue_days (issue_id, release, day, events, sessions) "
        f"SELECT issue_id, COALESCE(release, ''), {day}, COUNT(*), COUNT(DISTINCT session_id) "
        f"FROM occurrences GROUP BY issue_id, COALESCE(release, ''), {day}"
    )



# sessions.stalled from what is stored (migration 0004, benchmarks): a stall issue occurred in it
STALLED_BACKFILL: Final = (
    "UPDATE sessions SET stalled = EXISTS (SELECT 1 FROM occurrences "
    "JOIN issues ON issues.id = occurrences.issue_id "
    "WHERE occurrences.session_id = sessions.id AND issues.kind = 'stall')"
)
