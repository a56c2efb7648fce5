"""alerts: issue resolution, alert rules, notification windows, the delivery queue

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # plain ADD COLUMNs: a batch copy of the table would fail SQLite's foreign keys
    op.add_column(
        "issues", sa.Column("status", sa.String(length=10), nullable=False, server_default="open")
    )
    op.add_column("issues", sa.Column("resolved_in_release", sa.String(length=200), nullable=True))
    op.add_column("issues", sa.Column("resolved_at", sa.Float(), nullable=True))

    op.create_table(
        "alert_rules",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("rule", sa.String(length=20), nullable=False),
        sa.Column("metric", sa.String(length=20), nullable=True),
        sa.Column("limit_pct", sa.Float(), nullable=True),
        sa.Column("min_sessions", sa.Integer(), nullable=False),
        sa.Column("window_s", sa.Float(), nullable=False),
        sa.Column("interval_s", sa.Float(), nullable=False),
        sa.Column("webhook_url", sa.String(length=2000), nullable=True),
        sa.Column("webhook_secret", sa.String(length=200), nullable=True),
        sa.Column("email_to", sa.String(length=2000), nullable=True),
        sa.Column("created", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["project_id"], ["projects.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "alert_windows",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("rule_id", sa.Integer(), nullable=False),
        sa.Column("subject", sa.String(length=40), nullable=False),
        sa.Column("issue_id", sa.Integer(), nullable=True),
        sa.Column("opened", sa.Float(), nullable=False),
        sa.Column("until", sa.Float(), nullable=False),
        sa.Column("folded", sa.Integer(), nullable=False),
        sa.Column("digested", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["rule_id"], ["alert_rules.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["issue_id"], ["issues.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("rule_id", "subject", name="alert_windows_once"),
    )
    with op.batch_alter_table("alert_windows", schema=None) as batch_op:
        batch_op.create_index("alert_windows_due", ["digested", "until"], unique=False)

    op.create_table(
        "alert_deliveries",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("rule_id", sa.Integer(), nullable=True),
        sa.Column("channel", sa.String(length=10), nullable=False),
        sa.Column("target", sa.String(length=2000), nullable=False),
        sa.Column("event", sa.JSON(), nullable=False),
        sa.Column("state", sa.String(length=10), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt", sa.Float(), nullable=False),
        sa.Column("lease_until", sa.Float(), nullable=True),
        sa.Column("last_error", sa.String(length=2000), nullable=True),
        sa.Column("created", sa.Float(), nullable=False),
        sa.Column("sent", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(["rule_id"], ["alert_rules.id"], ondelete="SET NULL"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("key"),
    )
    with op.batch_alter_table("alert_deliveries", schema=None) as batch_op:
        batch_op.create_index("alert_deliveries_due", ["state", "next_attempt"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("alert_deliveries", schema=None) as batch_op:
        batch_op.drop_index("alert_deliveries_due")
    op.drop_table("alert_deliveries")
    with op.batch_alter_table("alert_windows", schema=None) as batch_op:
        batch_op.drop_index("alert_windows_due")
    op.drop_table("alert_windows")
    op.drop_table("alert_rules")
    op.drop_column("issues", "resolved_at")
    op.drop_column("issues", "resolved_in_release")
    op.drop_column("issues", "status")
