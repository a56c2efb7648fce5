"""dashboard: browser logins, login failures, per-day issue rollups, sessions.stalled, indexes

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    from hawkwatch.server.rollups import STALLED_BACKFILL, backfill_statement

    op.create_table(
        "login_sessions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("csrf_token", sa.String(length=64), nullable=False),
        sa.Column("created", sa.Float(), nullable=False),
        sa.Column("expires", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("token_hash"),
    )
    op.create_table(
        "login_failures",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=400), nullable=False),
        sa.Column("time", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("login_failures_by_key", "login_failures", ["key", "time"])
    op.create_table(
        "issue_days",
        sa.Column("issue_id", sa.Integer(), nullable=False),
        sa.Column("release", sa.String(length=200), nullable=False),
        sa.Column("day", sa.Integer(), nullable=False),
        sa.Column("events", sa.Integer(), nullable=False),
        sa.Column("sessions", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["issue_id"], ["issues.id"]),
        sa.PrimaryKeyConstraint("issue_id", "release", "day"),
    )
    # a plain ADD COLUMN: a batch copy of the table would fail SQLite's foreign keys
    op.add_column(
        "sessions", sa.Column("stalled", sa.Boolean(), nullable=False, server_default=sa.false())
    )
    op.create_index(
        "sessions_by_release", "sessions",
        ["project_id", "app_version", "launch_s", "exit_kind", "stalled"],
    )  # fmt: skip
    # what is stored already: its rollups, and which sessions stalled
    bind = op.get_bind()
    bind.execute(sa.text(backfill_statement(bind.dialect.name)))
    bind.execute(sa.text(STALLED_BACKFILL))


def downgrade() -> None:
    op.drop_index("sessions_by_release", table_name="sessions")
    op.drop_column("sessions", "stalled")
    op.drop_table("issue_days")
    op.drop_index("login_failures_by_key", table_name="login_failures")
    op.drop_table("login_failures")
    op.drop_table("login_sessions")
