"""The server's tables (SQLAlchemy Core). Changed only through migrations (``migrations/``).

Times are Unix seconds (floats); JSON columns hold documents the API returns as they are.
``envelopes`` keeps what was acknowledged (the body as received, decompressed); ``jobs`` is the
work queue over it; everything else is derived by the pipeline and can be rebuilt from them.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Boolean,
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
    false,
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
    Column("stalled", Boolean, nullable=False, server_default=false()),  # a stall was seen (0004)
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
    # resolution (migration 0003): an occurrence in a later release reopens it (a regression)
    Column("status", String(10), nullable=False, server_default="open"),  # open | resolved
    Column("resolved_in_release", String(200), nullable=True),
    Column("resolved_at", Float, nullable=True),
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

# Alerts (migration 0003): rules per project, the windows that keep one notification per issue
# per rule per interval (the rest folded into a digest), and the durable delivery queue.

alert_rules = Table(
    "alert_rules",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("project_id", Integer, ForeignKey("projects.id"), nullable=False),
    Column("rule", String(20), nullable=False),  # new-issue | regression | threshold
    Column("metric", String(20), nullable=True),  # threshold: crash-free | stall
    Column("limit_pct", Float, nullable=True),  # threshold: below (crash-free) / above (stall)
    Column("min_sessions", Integer, nullable=False),
    Column("window_s", Float, nullable=False),  # threshold: sessions started this long ago
    Column("interval_s", Float, nullable=False),  # one notification per subject per interval
    Column("webhook_url", String(2000), nullable=True),
    Column("webhook_secret", String(200), nullable=True),
    Column("email_to", String(2000), nullable=True),  # comma-separated addresses
    Column("created", Float, nullable=False),
)

alert_windows = Table(
    "alert_windows",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("rule_id", Integer, ForeignKey("alert_rules.id", ondelete="CASCADE"), nullable=False),
    Column("subject", String(40), nullable=False),  # "issue:<id>" or "threshold"
    Column("issue_id", Integer, ForeignKey("issues.id"), nullable=True),
    Column("opened", Float, nullable=False),
    Column("until", Float, nullable=False),
    Column("folded", Integer, nullable=False),  # occurrences after the notification
    Column("digested", Integer, nullable=False),  # 1 once the digest holding them is queued
    UniqueConstraint("rule_id", "subject", name="alert_windows_once"),
    Index("alert_windows_due", "digested", "until"),
)

alert_deliveries = Table(
    "alert_deliveries",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("key", String(64), nullable=False, unique=True),  # idempotency key for receivers
    Column("rule_id", Integer, ForeignKey("alert_rules.id", ondelete="SET NULL"), nullable=True),
    Column("channel", String(10), nullable=False),  # webhook | email
    Column("target", String(2000), nullable=False),
    Column("event", JSON, nullable=False),  # what happened; rendered when sent
    Column("state", String(10), nullable=False),  # queued | sending | sent | failed
    Column("attempts", Integer, nullable=False),
    Column("next_attempt", Float, nullable=False),
    Column("lease_until", Float, nullable=True),
    Column("last_error", String(2000), nullable=True),
    Column("created", Float, nullable=False),
    Column("sent", Float, nullable=True),
    Index("alert_deliveries_due", "state", "next_attempt"),
)

# The dashboard (migration 0004). The releases page: counts and launch-time ranks per release
# read from the index alone.
Index(
    "sessions_by_release", sessions.c.project_id, sessions.c.app_version, sessions.c.launch_s,
    sessions.c.exit_kind, sessions.c.stalled,
)

# Occurrences per issue, release ("" for none) and UTC day: the issue list's counts, filters and
# sparklines (``rollups.py`` keeps it in step with ``occurrences``).
issue_days = Table(
    "issue_days",
    metadata,
    Column("issue_id", Integer, ForeignKey("issues.id"), primary_key=True),
    Column("release", String(200), primary_key=True),
    Column("day", Integer, primary_key=True),  # floor(time / 86400)
    Column("events", Integer, nullable=False),
    Column("sessions", Integer, nullable=False),
)

# Browser logins and the failed attempts that rate-limit them.
login_sessions = Table(
    "login_sessions",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("user_id", Integer, ForeignKey("users.id"), nullable=False),
    Column("token_hash", String(64), nullable=False, unique=True),  # the cookie's SHA-256
    Column("csrf_token", String(64), nullable=False),  # every form of this login carries it
    Column("created", Float, nullable=False),
    Column("expires", Float, nullable=False),
)

login_failures = Table(
    "login_failures",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("key", String(400), nullable=False),  # "account:<email>" or "address:<ip>"
    Column("time", Float, nullable=False),
    Index("login_failures_by_key", "key", "time"),
)
