"""When rules fire: inside the pipeline's transaction for issues, from the worker for thresholds.

Each notification opens a *window* for its (rule, subject) — the subject is one issue, or the
threshold itself — lasting the rule's interval. While it is open, further occurrences of that
issue are only counted (``folded``); when it ends, the worker queues one digest per rule for
everything folded ("and 37 more occurrences of 5 issues") and drops the window. Notifications
are rows in ``alert_deliveries`` written in the same transaction as the occurrence (or the
threshold's window), so a worker killed anywhere neither loses nor duplicates one.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from typing import Any

from sqlalchemy import Connection, Engine, Row, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from hawkwatch.server.alerts.releases import is_later
from hawkwatch.server.database import is_sqlite
from hawkwatch.server.queries import CRASH_EXITS
from hawkwatch.server.schema import (
    alert_deliveries,
    alert_rules,
    alert_windows,
    issues,
    occurrences,
    projects,
    sessions,
)

_WITH_PROJECT = select(alert_rules, projects.c.name.label("project")).join(
    projects, projects.c.id == alert_rules.c.project_id
)


class Watch:
    """The project's issue rules, loaded once per job; ``seen`` is called for each occurrence."""

    def __init__(self, db: Connection, project_id: int, now: float) -> None:
        self.db, self.now = db, now
        rows = db.execute(
            _WITH_PROJECT.where(alert_rules.c.project_id == project_id)
            .where(alert_rules.c.rule.in_(("new-issue", "regression")))
            .order_by(alert_rules.c.id)
        ).all()  # fmt: skip
        self.rules = rows

    def seen(
        self, issue_id: int, created: bool, release: str | None, *, resolved_in: str | None,
        again: bool = False,
    ) -> None:  # fmt: skip
        """One occurrence of an issue. ``resolved_in``: the release it is resolved in, if it is;
        ``again``: a newer snapshot of a session re-reporting it (not a repeat to count)."""
        regressed_from = None
        if resolved_in is not None and is_later(release, resolved_in):
            regressed_from = _reopen(self.db, issue_id, resolved_in)
        subject = f"issue:{issue_id}"
        folding = []
        for rule in self.rules:
            fires = created if rule.rule == "new-issue" else regressed_from is not None
            if fires:
                event = _issue_event(
                    self.db, rule, issue_id, release, regressed_from=regressed_from, now=self.now
                )
                notify(self.db, rule, subject, issue_id, event=event, now=self.now)
            else:
                folding.append(rule.id)
        if folding and not created and not again:  # repeats while a window is open
            self.db.execute(
                update(alert_windows)
                .where(alert_windows.c.rule_id.in_(folding))
                .where(alert_windows.c.subject == subject)
                .where(alert_windows.c.until > self.now)
                .values(folded=alert_windows.c.folded + 1)
            )


def _reopen(db: Connection, issue_id: int, resolved_in: str) -> str:
    """Reopen a resolved issue seen in a later release; returns the release it was resolved in."""
    db.execute(update(issues).where(issues.c.id == issue_id).values(
        status="open", resolved_in_release=None, resolved_at=None,
    ))  # fmt: skip
    return resolved_in


def _issue_event(
    db: Connection, rule: Row[Any], issue_id: int, release: str | None, *,
    regressed_from: str | None, now: float,
) -> dict[str, Any]:  # fmt: skip
    issue = db.execute(
        select(issues.c.kind, issues.c.title, issues.c.culprit, issues.c.first_seen)
        .where(issues.c.id == issue_id)
    ).one()
    event = {
        "type": rule.rule, "project": rule.project, "rule_id": rule.id, "time": now,
        "release": release,
        "issue": {"id": issue_id, "kind": issue.kind, "title": issue.title,
                  "culprit": issue.culprit, "first_seen": issue.first_seen},
    }  # fmt: skip
    if regressed_from is not None:
        event["resolved_in_release"] = regressed_from
    return event


def notify(
    db: Connection, rule: Row[Any], subject: str, issue_id: int | None, *,
    event: dict[str, Any], now: float,
) -> bool:  # fmt: skip
    """Queue a notification unless the subject's window is open (then fold it); True if queued."""
    query = (
        select(alert_windows)
        .where(alert_windows.c.rule_id == rule.id)
        .where(alert_windows.c.subject == subject)
    )
    if not is_sqlite(db.engine):
        query = query.with_for_update()
    window = db.execute(query).first()
    if window is not None and window.until > now:
        _fold(db, window.id, issue_id)
        return False
    if window is not None:  # ended, and the worker has not digested it yet
        _queue_digest(db, rule, [window], now)
        db.execute(delete(alert_windows).where(alert_windows.c.id == window.id))
    try:
        with db.begin_nested():
            opened = db.execute(insert(alert_windows).values(
                rule_id=rule.id, subject=subject, issue_id=issue_id, opened=now,
                until=now + rule.interval_s, folded=0, digested=0,
            ).returning(alert_windows.c.id)).scalar_one()  # fmt: skip
    except IntegrityError:  # another worker opened it a moment ago: its notification counts
        opened = db.execute(query.with_only_columns(alert_windows.c.id)).scalar_one()
        _fold(db, opened, issue_id)
        return False
    enqueue(db, rule, event, now)
    return True


def _fold(db: Connection, window_id: int, issue_id: int | None) -> None:
    """Count a repeat of an issue in its open window (a threshold's repeats are not counted)."""
    if issue_id is not None:
        db.execute(update(alert_windows).where(alert_windows.c.id == window_id).values(
            folded=alert_windows.c.folded + 1))  # fmt: skip


def enqueue(db: Connection, rule: Row[Any], event: dict[str, Any], now: float) -> None:
    """One delivery per channel of the rule, queued in the caller's transaction."""
    targets = []
    if rule.webhook_url:
        targets.append(("webhook", rule.webhook_url))
    if rule.email_to:
        targets.append(("email", rule.email_to))
    for channel, target in targets:
        db.execute(insert(alert_deliveries).values(
            key=uuid.uuid4().hex, rule_id=rule.id, channel=channel, target=target, event=event,
            state="queued", attempts=0, next_attempt=now, created=now,
        ))  # fmt: skip


def _queue_digest(db: Connection, rule: Row[Any], windows: list[Row[Any]], now: float) -> None:
    folded = [w for w in windows if w.folded > 0]
    if not folded:
        return
    titles = dict(db.execute(
        select(issues.c.id, issues.c.title)
        .where(issues.c.id.in_([w.issue_id for w in folded if w.issue_id is not None]))
    ).all())  # fmt: skip
    enqueue(db, rule, {
        "type": "digest", "rule": rule.rule, "project": rule.project, "rule_id": rule.id,
        "time": now, "occurrences": sum(w.folded for w in folded), "since": min(w.opened
        for w in folded), "until": max(w.until for w in folded),
        "issues": [{"id": w.issue_id, "title": titles.get(w.issue_id, ""), "occurrences":
                    w.folded} for w in sorted(folded, key=lambda w: -w.folded)],
    }, now)  # fmt: skip


def queue_digests(engine: Engine, now: float) -> int:
    """Close the windows that ended: one digest per rule for what they folded. Returns digests."""
    queued = 0
    with engine.begin() as db:
        query = select(alert_windows).where(alert_windows.c.until <= now)
        if not is_sqlite(engine):
            query = query.with_for_update(skip_locked=True)
        ended = db.execute(query).all()
        by_rule: dict[int, list[Row[Any]]] = defaultdict(list)
        for window in ended:
            by_rule[window.rule_id].append(window)
        rules = {r.id: r for r in db.execute(
            _WITH_PROJECT.where(alert_rules.c.id.in_(list(by_rule)))).all()}  # fmt: skip
        for rule_id, windows in by_rule.items():
            if rule_id in rules and any(w.folded for w in windows):
                _queue_digest(db, rules[rule_id], windows, now)
                queued += 1
        if ended:
            db.execute(delete(alert_windows).where(alert_windows.c.id.in_([w.id for w in ended])))
    return queued


def session_rates(
    db: Connection, project_id: int, since: float, until: float
) -> tuple[int, int, int]:
    """Sessions started in [since, until]: how many, how many crashed, how many stalled."""
    started = (
        (sessions.c.project_id == project_id)
        & (sessions.c.start_time >= since)
        & (sessions.c.start_time <= until)
    )
    total, crashed = db.execute(select(
        func.count(), func.count().filter(sessions.c.exit_kind.in_(sorted(CRASH_EXITS)))
    ).where(started)).one()  # fmt: skip
    stalled = db.execute(
        select(func.count(func.distinct(sessions.c.id)))
        .join(occurrences, occurrences.c.session_id == sessions.c.id)
        .join(issues, issues.c.id == occurrences.c.issue_id)
        .where(started)
        .where(issues.c.kind == "stall")
    ).scalar()
    return int(total), int(crashed), int(stalled or 0)


def evaluate_thresholds(engine: Engine, now: float) -> int:
    """Check every threshold rule over its window; returns how many notifications were queued."""
    with engine.connect() as db:
        rules = db.execute(_WITH_PROJECT.where(alert_rules.c.rule == "threshold")).all()
    fired = 0
    for rule in rules:
        fired += _evaluate(engine, rule, now)
    return fired


def _evaluate(engine: Engine, rule: Row[Any], now: float) -> bool:
    """One threshold rule, in its own transaction; True when it queued a notification."""
    with engine.begin() as db:
        total, crashed, stalled = session_rates(db, rule.project_id, now - rule.window_s, now)
        if total < rule.min_sessions:
            return False
        if rule.metric == "crash-free":
            value = 100.0 * (1 - crashed / total)
            breached = value < rule.limit_pct
        else:
            value = 100.0 * stalled / total
            breached = value > rule.limit_pct
        if not breached:
            return False
        event = {
            "type": "threshold", "project": rule.project, "rule_id": rule.id, "time": now,
            "metric": rule.metric, "value_pct": round(value, 3), "limit_pct": rule.limit_pct,
            "sessions": total, "window_s": rule.window_s,
        }  # fmt: skip
        return notify(db, rule, "threshold", None, event=event, now=now)
