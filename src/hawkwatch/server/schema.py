"""The server's tables (SQLAlchemy Core). Changed only through migrations (``migrations/``).

Times are Unix seconds (floats); JSON columns hold documents the API returns as they are.
``envelopes`` keeps what was acknowledged (the body as received, decompressed); ``jobs`` is the
work queue over it; everything else is derived by the pipeline and can be rebuilt from them.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    UniqueConstraint,
)

metadata = MetaData()

projects = Table(
    "projects",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(200), nullable=False, unique=True),
    Column("ingest_key_hash", String(64), nullable=False, unique=True),
    Column("created", Float, nullable=False),
    # retention overrides (days); None: the server's setting
    Column("keep_envelopes_days", Float, nullable=True),
    Column("keep_events_days", Float, nullable=True),
)

users = Table(
    "users",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("email", String(320), nullable=False, unique=True),
    Column("password_hash", String(300), nullable=False),
    Column("created", Float, nullable=False),
)

api_tokens = Table(
    "api_tokens",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("user_id", Integer, ForeignKey("users.id"), nullable=False),
    Column("token_hash", String(64), nullable=False, unique=True),
    Column("created", Float, nullable=False),
)

envelopes = Table(
    "envelopes",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("project_id", Integer, ForeignKey("projects.id"), nullable=False),
    Column("envelope_id", String(300), nullable=False),
    Column("kind", String(20), nullable=False),  # session | artifact
    Column("name", String(300), nullable=False),  # session name or artifact file name
    Column("body", LargeBinary, nullable=False),
    Column("received", Float, nullable=False),
    UniqueConstraint("project_id", "envelope_id", name="envelopes_once"),
)

jobs = Table(
    "jobs",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("envelope_id", Integer, ForeignKey("envelopes.id"), nullable=False, unique=True),
    Column("state", String(10), nullable=False),  # queued | running | done | failed
    Column("lease_until", Float, nullable=True),
    Column("attempts", Integer, nullable=False, default=0),
    Column("error", String(2000), nullable=True),
    Index("jobs_claim", "state", "id"),
)

sessions = Table(
    "sessions",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("project_id", Integer, ForeignKey("projects.id"), nullable=False),
    Column("name", String(300), nullable=False),
    Column("sequence", Integer, nullable=False),
    Column("app_version", String(200), nullable=True),
    Column("start_time", Float, nullable=True),
    Column("exit_kind", String(30), nullable=True),
    Column("launch_s", Float, nullable=True),
    Column("report", JSON, nullable=False),  # the same JSON as ``hawkwatch report --json``
    Column("received", Float, nullable=True),  # when the stored snapshot was uploaded
    UniqueConstraint("project_id", "name", name="sessions_once"),
    Index("sessions_by_received", "received"),
)

issues = Table(
    "issues",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("project_id", Integer, ForeignKey("projects.id"), nullable=False),
    Column("kind", String(30), nullable=False),
    Column("fingerprint", String(200), nullable=False),
    Column("title", String(500), nullable=False),
    Column("culprit", String(500), nullable=True),
    Column("first_seen", Float, nullable=False),
    Column("last_seen", Float, nullable=False),
    Column("example", JSON, nullable=False),
    UniqueConstraint("project_id", "kind", "fingerprint", name="issues_once"),
)

# On PostgreSQL (migration 0002) partitioned by month of ``received``, its primary key
# (id, received) as partitioning requires; ``envelope_id`` names the envelope the occurrence came
# from without a foreign key, as raw envelopes are pruned sooner than events.
occurrences = Table(
    "occurrences",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("issue_id", Integer, ForeignKey("issues.id"), nullable=False),
    Column("session_id", Integer, ForeignKey("sessions.id"), nullable=True),
    Column("envelope_id", Integer, nullable=False),
    Column("received", Float, nullable=False),  # the envelope's upload time: the retention clock
    Column("time", Float, nullable=False),
    Column("release", String(200), nullable=True),
    Column("detail", JSON, nullable=False),
    Index("occurrences_by_issue", "issue_id", "time"),
    Index("occurrences_by_session", "session_id"),
    Index("occurrences_by_received", "received"),
)

# What pruned occurrences counted, per issue, release and day of upload, so the issue list's
# counts stay whole after retention (sessions: distinct sessions; a session is pruned whole).
issue_rollups = Table(
    "issue_rollups",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("issue_id", Integer, ForeignKey("issues.id"), nullable=False),
    Column("release", String(200), nullable=True),
    Column("day", Float, nullable=False),
    Column("count", Integer, nullable=False),
    Column("sessions", Integer, nullable=False),
    Index("issue_rollups_by_issue", "issue_id", "day"),
)
