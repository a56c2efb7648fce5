"""retention: per-project settings, upload times on sessions and occurrences, issue roll-ups,
and on PostgreSQL an ``occurrences`` table range-partitioned by month of ``received``

Revision ID: 0002
Revises: 0001

``occurrences`` is rebuilt on both databases (renamed, recreated, rows copied, old table
dropped), inside the migration's one transaction: an upgrade either happens whole or not at all.
Its ``envelope_id`` loses its foreign key, so raw envelopes can be pruned before the events made
from them. On PostgreSQL the new table is partitioned (a table cannot be turned into a
partitioned one in place): partitions cover every month of the copied rows and the next three,
plus a DEFAULT partition so an insert never fails; the retention job creates later months.
The copy locks ``occurrences`` and ``sessions`` (workers and queries wait); ``projects``, which
collectors read for every upload, is altered last, so they wait only for the commit.
"""

from __future__ import annotations

import calendar
import time
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_COLUMNS = "id, issue_id, session_id, envelope_id, received, time, release, detail"


def _month_start(when: float, months_later: int = 0) -> float:
    day = datetime.fromtimestamp(when, UTC)
    index = day.year * 12 + day.month - 1 + months_later
    return float(calendar.timegm((index // 12, index % 12 + 1, 1, 0, 0, 0)))


def upgrade() -> None:
    bind = op.get_bind()
    postgres = bind.dialect.name == "postgresql"
    op.add_column("sessions", sa.Column("received", sa.Float(), nullable=True))
    op.create_table(
        "issue_rollups",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("issue_id", sa.Integer(), nullable=False),
        sa.Column("release", sa.String(length=200), nullable=True),
        sa.Column("day", sa.Float(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.Column("sessions", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["issue_id"], ["issues.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("issue_rollups_by_issue", "issue_rollups", ["issue_id", "day"])

    op.drop_index("occurrences_by_issue", table_name="occurrences")
    op.drop_index("occurrences_by_session", table_name="occurrences")
    op.rename_table("occurrences", "occurrences_v1")
    if postgres:
        op.execute("ALTER INDEX occurrences_pkey RENAME TO occurrences_v1_pkey")
        op.execute(
            "CREATE TABLE occurrences ("
            " id SERIAL NOT NULL,"
            " issue_id INTEGER NOT NULL REFERENCES issues (id),"
            " session_id INTEGER REFERENCES sessions (id),"
            " envelope_id INTEGER NOT NULL,"
            " received DOUBLE PRECISION NOT NULL,"
            " time DOUBLE PRECISION NOT NULL,"
            " release VARCHAR(200),"
            " detail JSON NOT NULL,"
            " PRIMARY KEY (id, received)"
            ") PARTITION BY RANGE (received)"
        )
        oldest = bind.execute(sa.text(
            "SELECT MIN(e.received) FROM occurrences_v1 o JOIN envelopes e ON e.id = o.envelope_id"
        )).scalar()  # fmt: skip
        now = time.time()
        start = _month_start(oldest if oldest is not None else now)
        while start < _month_start(now, 4):
            end = _month_start(start, 1)
            name = "occurrences_" + datetime.fromtimestamp(start, UTC).strftime("p%Y%m")
            op.execute(f"CREATE TABLE {name} PARTITION OF occurrences "
                       f"FOR VALUES FROM ({start!r}) TO ({end!r})")  # fmt: skip
            start = end
        op.execute("CREATE TABLE occurrences_default PARTITION OF occurrences DEFAULT")
    else:
        op.create_table(
            "occurrences",
            sa.Column("id", sa.Integer(), nullable=False),
            sa.Column("issue_id", sa.Integer(), nullable=False),
            sa.Column("session_id", sa.Integer(), nullable=True),
            sa.Column("envelope_id", sa.Integer(), nullable=False),
            sa.Column("received", sa.Float(), nullable=False),
            sa.Column("time", sa.Float(), nullable=False),
            sa.Column("release", sa.String(length=200), nullable=True),
            sa.Column("detail", sa.JSON(), nullable=False),
            sa.ForeignKeyConstraint(["issue_id"], ["issues.id"]),
            sa.ForeignKeyConstraint(["session_id"], ["sessions.id"]),
            sa.PrimaryKeyConstraint("id"),
        )
    op.execute(
        f"INSERT INTO occurrences ({_COLUMNS}) "
        "SELECT o.id, o.issue_id, o.session_id, o.envelope_id, e.received, o.time, o.release, "
        "o.detail FROM occurrences_v1 o JOIN envelopes e ON e.id = o.envelope_id"
    )
    # indexes after the copy (faster than during it), before the look-ups below use them
    op.create_index("occurrences_by_issue", "occurrences", ["issue_id", "time"])
    op.create_index("occurrences_by_session", "occurrences", ["session_id"])
    op.create_index("occurrences_by_received", "occurrences", ["received"])
    # a session was stored from the envelope its occurrences came from; clean ones (no
    # occurrence) count from their start, or from now
    if postgres:
        op.execute("ANALYZE occurrences")  # plans for the look-ups on the fresh table
    op.execute(
        "UPDATE sessions SET received = latest.received FROM (SELECT session_id, "
        "MAX(received) AS received FROM occurrences WHERE session_id IS NOT NULL "
        "GROUP BY session_id) AS latest WHERE latest.session_id = sessions.id"
    )  # one pass (UPDATE … FROM: PostgreSQL, SQLite ≥ 3.33)
    op.execute(f"UPDATE sessions SET received = COALESCE(start_time, {time.time()!r}) "
               "WHERE received IS NULL")  # fmt: skip
    op.drop_table("occurrences_v1")
    if postgres:
        op.execute("SELECT setval(pg_get_serial_sequence('occurrences', 'id'), "
                   "COALESCE((SELECT MAX(id) FROM occurrences), 0) + 1, false)")  # fmt: skip
    op.create_index("sessions_by_received", "sessions", ["received"])
    # last: collectors read ``projects`` for every upload, and ALTER locks it until the commit
    op.add_column("projects", sa.Column("keep_envelopes_days", sa.Float(), nullable=True))
    op.add_column("projects", sa.Column("keep_events_days", sa.Float(), nullable=True))


def downgrade() -> None:
    for index, table in (("sessions_by_received", "sessions"),
                         ("occurrences_by_received", "occurrences"),
                         ("occurrences_by_session", "occurrences"),
                         ("occurrences_by_issue", "occurrences")):  # fmt: skip
        op.drop_index(index, table_name=table)
    op.rename_table("occurrences", "occurrences_v2")
    if _postgres():
        op.execute("ALTER INDEX occurrences_pkey RENAME TO occurrences_v2_pkey")
    op.create_table(
        "occurrences",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("issue_id", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.Integer(), nullable=True),
        sa.Column("envelope_id", sa.Integer(), nullable=False),
        sa.Column("time", sa.Float(), nullable=False),
        sa.Column("release", sa.String(length=200), nullable=True),
        sa.Column("detail", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["envelope_id"], ["envelopes.id"]),
        sa.ForeignKeyConstraint(["issue_id"], ["issues.id"]),
        sa.ForeignKeyConstraint(["session_id"], ["sessions.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    # occurrences whose envelope was pruned cannot keep 0001's foreign key: they go
    op.execute(
        "INSERT INTO occurrences (id, issue_id, session_id, envelope_id, time, release, detail) "
        "SELECT o.id, o.issue_id, o.session_id, o.envelope_id, o.time, o.release, o.detail "
        "FROM occurrences_v2 o WHERE o.envelope_id IN (SELECT id FROM envelopes)"
    )
    op.execute("DROP TABLE occurrences_v2" + (" CASCADE" if _postgres() else ""))
    if _postgres():
        op.execute("SELECT setval(pg_get_serial_sequence('occurrences', 'id'), "
                   "COALESCE((SELECT MAX(id) FROM occurrences), 0) + 1, false)")  # fmt: skip
    op.create_index("occurrences_by_issue", "occurrences", ["issue_id", "time"])
    op.create_index("occurrences_by_session", "occurrences", ["session_id"])
    op.drop_index("issue_rollups_by_issue", table_name="issue_rollups")
    op.drop_table("issue_rollups")
    # ALTER TABLE … DROP COLUMN (SQLite ≥ 3.35): a batch copy could not drop ``sessions``,
    # which occurrences reference
    for table, column in (("sessions", "received"), ("projects", "keep_events_days"),
                          ("projects", "keep_envelopes_days")):  # fmt: skip
        op.execute(f"ALTER TABLE {table} DROP COLUMN {column}")


def _postgres() -> bool:
    return bool(op.get_bind().dialect.name == "postgresql")
