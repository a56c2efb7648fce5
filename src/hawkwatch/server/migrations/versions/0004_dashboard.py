"""dashboard: browser logins, login failures, indexes for the pages

Revision ID: 0004
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
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
    op.create_index(
        "occurrences_by_issue_release", "occurrences", ["issue_id", "release", "time", "session_id"]
    )
    op.create_index("sessions_by_release", "sessions", ["project_id", "app_version", "launch_s"])
    op.create_index("issues_by_project", "issues", ["project_id", "last_seen"])


def downgrade() -> None:
    op.drop_index("issues_by_project", table_name="issues")
    op.drop_index("sessions_by_release", table_name="sessions")
    op.drop_index("occurrences_by_issue_release", table_name="occurrences")
    op.drop_index("login_failures_by_key", table_name="login_failures")
    op.drop_table("login_failures")
    op.drop_table("login_sessions")
