"""Monthly partitions of ``occurrences`` on PostgreSQL (range of ``received``, Unix seconds).

Migration 0002 makes the table partitioned with a DEFAULT partition that catches any row no
month holds. ``ensure_ahead`` creates the coming months (moving rows the DEFAULT partition holds
for that month, so the attach never fails); ``drop_before`` rolls a whole month up into
``issue_rollups`` and drops it — one catalog change instead of millions of row deletes.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import Connection, Engine, text

DAY_S = 86400.0
LOCK_TIMEOUT = "5s"
_BOUND = re.compile(r"FROM \('?([-+\d.eE]+)'?\) TO \('?([-+\d.eE]+)'?\)")


@dataclass(frozen=True)
class Partition:
    name: str
    lower: float
    upper: float


def month_start(when: float, months_later: int = 0) -> float:
    """The start (UTC) of the month ``when`` falls in, ``months_later`` months on."""
    day = datetime.fromtimestamp(when, UTC)
    index = day.year * 12 + day.month - 1 + months_later
    return float(calendar.timegm((index // 12, index % 12 + 1, 1, 0, 0, 0)))


def partition_name(lower: float) -> str:
    return "occurrences_" + datetime.fromtimestamp(lower, UTC).strftime("p%Y%m")


def is_partitioned(db: Connection) -> bool:
    if db.dialect.name != "postgresql":
        return False
    found = db.execute(text(
        "SELECT 1 FROM pg_partitioned_table WHERE partrelid = to_regclass('occurrences')"
    )).first()  # fmt: skip
    return found is not None


def months(db: Connection) -> list[Partition]:
    """The month partitions, oldest first (the DEFAULT partition is not one)."""
    rows = db.execute(text(
        "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i "
        "JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'occurrences'::regclass"
    )).all()  # fmt: skip
    found = []
    for name, bound in rows:
        match = _BOUND.search(bound or "")
        if match:
            found.append(Partition(name, float(match[1]), float(match[2])))
    return sorted(found, key=lambda p: p.lower)


def ensure_ahead(engine: Engine, now: float, ahead: int = 3) -> list[str]:
    """Create the partitions of this month and the next ``ahead``; returns those created."""
    created = []
    with engine.begin() as db:
        if not is_partitioned(db):
            return []
        have = {p.lower for p in months(db)}
    for offset in range(ahead + 1):
        lower = month_start(now, offset)
        if lower in have:
            continue
        upper, name = month_start(lower, 1), partition_name(lower)
        with engine.begin() as db:
            db.execute(text(f"CREATE TABLE {name} (LIKE occurrences INCLUDING DEFAULTS)"))
            db.execute(text(
                f"WITH moved AS (DELETE FROM occurrences_default WHERE received >= {lower!r} "
                f"AND received < {upper!r} RETURNING *) INSERT INTO {name} SELECT * FROM moved"
            ))  # fmt: skip
            db.execute(text(f"ALTER TABLE occurrences ATTACH PARTITION {name} "
                            f"FOR VALUES FROM ({lower!r}) TO ({upper!r})"))  # fmt: skip
        created.append(name)
    return created


def drop_before(engine: Engine, cutoff: float) -> tuple[int, int]:
    """Roll up and drop every month partition ending at or before ``cutoff``; returns
    (partitions dropped, occurrences they held). Each month is one short transaction: the
    partition is locked first, so no worker changes it between the roll-up and the drop; a lock
    not granted within ``LOCK_TIMEOUT`` raises (the worker logs it and tries the next pass)."""
    with engine.connect() as db:
        doomed = [p for p in months(db) if p.upper <= cutoff]
    dropped_rows = 0
    for partition in doomed:
        with engine.begin() as db:
            # dropping a partition locks the whole table for a moment: rather than queue every
            # reader behind a long query, give up and try again at the next pass
            db.execute(text(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'"))
            db.execute(text(f"LOCK TABLE {partition.name} IN ACCESS EXCLUSIVE MODE"))
            dropped_rows += int(
                db.execute(text(f"SELECT COUNT(*) FROM {partition.name}")).scalar() or 0
            )
            db.execute(text(
                "INSERT INTO issue_rollups (issue_id, release, day, count, sessions) "
                f"SELECT issue_id, release, floor(received / {DAY_S}) * {DAY_S}, COUNT(*), "
                f"COUNT(DISTINCT session_id) FROM {partition.name} "
                f"GROUP BY issue_id, release, floor(received / {DAY_S})"
            ))  # fmt: skip
            db.execute(text(f"DROP TABLE {partition.name}"))
    return len(doomed), dropped_rows
