"""Alert rules and issue resolution, as library calls (``hawkwatch server add-alert`` …).

A rule belongs to a project and says what fires (``new-issue``, ``regression``, ``threshold`` on
the crash-free or stall rate of the sessions started in the last ``window_s``), how often at most
per issue (``interval_s``; repeats are folded into a digest), and where it goes (a webhook,
signed with the rule's secret, and/or email addresses). Secrets are kept in clear: the server
signs with them; they are shown once when the rule is added and never by the API.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, delete, insert, select, update

from hawkwatch.server import auth
from hawkwatch.server.admin import AdminError
from hawkwatch.server.schema import alert_deliveries, alert_rules, alert_windows, issues, projects

RULES = ("new-issue", "regression", "threshold")
METRICS = ("crash-free", "stall")


@dataclass(frozen=True)
class NewRule:
    """What ``add-alert`` asks for. ``limit_pct``: crash-free below it, or stall rate above it."""

    project: str
    rule: str
    webhook_url: str | None = None
    email_to: tuple[str, ...] = ()
    metric: str | None = None
    limit_pct: float | None = None
    min_sessions: int = 20
    window_s: float = 3600.0
    interval_s: float = 3600.0
    webhook_secret: str | None = None


def _check(new: NewRule) -> None:
    if new.rule not in RULES:
        raise AdminError(f"unknown rule {new.rule!r}; one of {', '.join(RULES)}")
    if not new.webhook_url and not new.email_to:
        raise AdminError("an alert needs somewhere to go: --webhook URL and/or --email ADDRESS")
    if new.webhook_url and not new.webhook_url.startswith(("http://", "https://")):
        raise AdminError(f"webhook {new.webhook_url!r} is not an http(s) URL")
    for address in new.email_to:
        if "@" not in address:
            raise AdminError(f"{address!r} is not an email address")
    if new.interval_s <= 0 or new.window_s <= 0 or new.min_sessions < 1:
        raise AdminError("interval and window must be positive, min sessions at least 1")
    if new.rule == "threshold":
        if new.metric not in METRICS:
            raise AdminError(f"a threshold rule needs --metric {' or '.join(METRICS)}")
        if new.limit_pct is None or not 0 <= new.limit_pct <= 100:
            raise AdminError("a threshold rule needs --below PCT (crash-free) or --above PCT "
                             "(stall), between 0 and 100")  # fmt: skip


def add_rule(engine: Engine, new: NewRule) -> dict[str, Any]:
    """Store a rule; returns it with its webhook secret (the only time it is shown)."""
    _check(new)
    secret = (new.webhook_secret or auth.new_secret()) if new.webhook_url else None
    with engine.begin() as db:
        project = db.execute(select(projects.c.id).where(projects.c.name == new.project)).scalar()
        if project is None:
            raise AdminError(f"no project {new.project!r}")
        rule_id = db.execute(insert(alert_rules).values(
            project_id=project, rule=new.rule, metric=new.metric, limit_pct=new.limit_pct,
            min_sessions=new.min_sessions, window_s=new.window_s, interval_s=new.interval_s,
            webhook_url=new.webhook_url or None, webhook_secret=secret,
            email_to=",".join(new.email_to) or None, created=time.time(),
        ).returning(alert_rules.c.id)).scalar_one()  # fmt: skip
    shown = list_rules(engine, new.project, rule_id=int(rule_id))[0]
    return {**shown, "webhook_secret": secret}


def list_rules(engine: Engine, project: str, *, rule_id: int | None = None) -> list[dict[str, Any]]:
    """A project's rules as the API shows them (no secrets)."""
    query = (
        select(alert_rules, projects.c.name.label("project"))
        .join(projects, projects.c.id == alert_rules.c.project_id)
        .where(projects.c.name == project)
        .order_by(alert_rules.c.id)
    )
    if rule_id is not None:
        query = query.where(alert_rules.c.id == rule_id)
    with engine.connect() as db:
        rows = db.execute(query).all()
    return [
        {"id": r.id, "project": r.project, "rule": r.rule, "metric": r.metric,
         "limit_pct": r.limit_pct, "min_sessions": r.min_sessions, "window_s": r.window_s,
         "interval_s": r.interval_s, "webhook_url": r.webhook_url,
         "email_to": r.email_to.split(",") if r.email_to else [], "created": r.created}
        for r in rows
    ]  # fmt: skip


def remove_rule(engine: Engine, rule_id: int) -> None:
    """Delete a rule, its windows, and its notifications not sent yet."""
    with engine.begin() as db:
        if db.execute(select(alert_rules.c.id).where(alert_rules.c.id == rule_id)).first() is None:
            raise AdminError(f"no alert rule {rule_id}")
        db.execute(delete(alert_windows).where(alert_windows.c.rule_id == rule_id))
        db.execute(
            delete(alert_deliveries)
            .where(alert_deliveries.c.rule_id == rule_id)
            .where(alert_deliveries.c.state.in_(("queued", "sending")))
        )
        db.execute(
            update(alert_deliveries).where(alert_deliveries.c.rule_id == rule_id)
            .values(rule_id=None)
        )  # fmt: skip
        db.execute(delete(alert_rules).where(alert_rules.c.id == rule_id))


def resolve_issue(engine: Engine, issue_id: int, release: str) -> dict[str, Any] | None:
    """Mark an issue resolved in ``release``; None when there is no such issue. An occurrence
    in a later release reopens it (and fires the project's regression rules)."""
    if not release.strip():
        raise AdminError("name the release the issue is resolved in")
    with engine.begin() as db:
        done = db.execute(update(issues).where(issues.c.id == issue_id).values(
            status="resolved", resolved_in_release=release.strip(), resolved_at=time.time(),
        )).rowcount  # fmt: skip
    if not done:
        return None
    return {"id": issue_id, "status": "resolved", "resolved_in_release": release.strip()}


def recent_deliveries(engine: Engine, project: str, *, limit: int = 100) -> list[dict[str, Any]]:
    """The project's latest notifications: what, where, their state, attempts and last error."""
    with engine.connect() as db:
        rows = db.execute(
            select(alert_deliveries)
            .join(alert_rules, alert_rules.c.id == alert_deliveries.c.rule_id)
            .join(projects, projects.c.id == alert_rules.c.project_id)
            .where(projects.c.name == project)
            .order_by(alert_deliveries.c.id.desc())
            .limit(limit)
        ).all()
    return [
        {"id": r.id, "key": r.key, "rule_id": r.rule_id, "channel": r.channel,
         "type": r.event.get("type"), "state": r.state, "attempts": r.attempts,
         "last_error": r.last_error, "created": r.created, "sent": r.sent}
        for r in rows
    ]  # fmt: skip
