"""What the query API returns: issues, sessions and per-release figures, as JSON-ready dicts."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, func, select, union, union_all

from hawkwatch.analysis.series import quantile
from hawkwatch.server.partitions import DAY_S
from hawkwatch.server.schema import issue_rollups, issues, occurrences, projects, sessions

CRASH_EXITS = frozenset({"exception", "fatal-signal", "oom-killed", "hang-killed"})


def project_id(engine: Engine, name: str) -> int | None:
    with engine.connect() as db:
        found = db.execute(select(projects.c.id).where(projects.c.name == name)).scalar()
    return None if found is None else int(found)


def list_issues(
    engine: Engine, project: int, *, kind: str | None = None, release: str | None = None,
    since: float | None = None,
) -> list[dict[str, Any]]:  # fmt: skip
    live = select(
        occurrences.c.issue_id,
        func.count().label("count"),
        func.count(func.distinct(occurrences.c.session_id)).label("sessions"),
    ).group_by(occurrences.c.issue_id)
    rolled = select(
        issue_rollups.c.issue_id,
        func.sum(issue_rollups.c.count).label("count"),
        func.sum(issue_rollups.c.sessions).label("sessions"),
    ).group_by(issue_rollups.c.issue_id)  # what retention pruned
    if release is not None:
        live = live.where(occurrences.c.release == release)
        rolled = rolled.where(issue_rollups.c.release == release)
    if since is not None:
        live = live.where(occurrences.c.time >= since)
        rolled = rolled.where(issue_rollups.c.day >= since // DAY_S * DAY_S)
    both = union_all(live, rolled).subquery()
    counts = (
        select(both.c.issue_id, func.sum(both.c.count).label("count"),
               func.sum(both.c.sessions).label("sessions"))
        .group_by(both.c.issue_id).subquery()
    )  # fmt: skip
    query = (
        select(issues, counts.c.count, counts.c.sessions)
        .join(counts, counts.c.issue_id == issues.c.id)
        .where(issues.c.project_id == project)
        .order_by(counts.c.count.desc(), issues.c.id)
    )
    if kind is not None:
        query = query.where(issues.c.kind == kind)
    with engine.connect() as db:
        rows = db.execute(query).all()
        releases = _releases_by_issue(db, [row.id for row in rows])
    return [
        {
            "id": row.id, "kind": row.kind, "title": row.title, "culprit": row.culprit,
            "fingerprint": row.fingerprint, "count": int(row._mapping["count"]),
            "sessions": int(row.sessions),
            "first_seen": row.first_seen, "last_seen": row.last_seen,
            "releases": releases.get(row.id, []), "status": row.status,
            "resolved_in_release": row.resolved_in_release,
        }
        for row in rows
    ]  # fmt: skip


def _releases_by_issue(db: Any, ids: list[int]) -> dict[int, list[str]]:
    if not ids:
        return {}
    live = (
        select(occurrences.c.issue_id, occurrences.c.release)
        .where(occurrences.c.issue_id.in_(ids))
        .where(occurrences.c.release.is_not(None))
    )
    rolled = (
        select(issue_rollups.c.issue_id, issue_rollups.c.release)
        .where(issue_rollups.c.issue_id.in_(ids))
        .where(issue_rollups.c.release.is_not(None))
    )
    rows = db.execute(union(live, rolled)).all()
    found: dict[int, list[str]] = {}
    for issue_id, release in rows:
        found.setdefault(issue_id, []).append(release)
    return {key: sorted(value) for key, value in found.items()}


def issue_detail(engine: Engine, issue_id: int) -> dict[str, Any] | None:
    with engine.connect() as db:
        row = db.execute(select(issues).where(issues.c.id == issue_id)).first()
        if row is None:
            return None
        seen = db.execute(
            select(occurrences.c.time, occurrences.c.release, occurrences.c.session_id,
                   occurrences.c.detail)
            .where(occurrences.c.issue_id == issue_id)
            .order_by(occurrences.c.time.desc())
            .limit(100)
        ).all()  # fmt: skip
    latest = seen[0].detail if seen else row.example
    return {
        "id": row.id, "project_id": row.project_id, "kind": row.kind, "title": row.title,
        "culprit": row.culprit, "fingerprint": row.fingerprint, "first_seen": row.first_seen,
        "last_seen": row.last_seen, "event": latest, "status": row.status,
        "resolved_in_release": row.resolved_in_release,
        "occurrences": [
            {"time": o.time, "release": o.release, "session_id": o.session_id} for o in seen
        ],
    }  # fmt: skip


def list_sessions(engine: Engine, project: int) -> list[dict[str, Any]]:
    with engine.connect() as db:
        rows = db.execute(
            select(sessions.c.id, sessions.c.name, sessions.c.app_version,
                   sessions.c.start_time, sessions.c.exit_kind)
            .where(sessions.c.project_id == project)
            .order_by(sessions.c.start_time.desc())
        ).all()  # fmt: skip
        linked = db.execute(
            select(occurrences.c.session_id, occurrences.c.issue_id)
            .where(occurrences.c.session_id.in_([r.id for r in rows]))
            .distinct()
        ).all()
    by_session: dict[int, list[int]] = {}
    for session_id, issue_id in linked:
        by_session.setdefault(session_id, []).append(issue_id)
    return [
        {"id": r.id, "name": r.name, "app_version": r.app_version, "start_time": r.start_time,
         "exit_kind": r.exit_kind, "issue_ids": sorted(by_session.get(r.id, []))}
        for r in rows
    ]  # fmt: skip


def session_report(engine: Engine, session_id: int) -> dict[str, Any] | None:
    with engine.connect() as db:
        report = db.execute(select(sessions.c.report).where(sessions.c.id == session_id)).scalar()
    return report


def releases(engine: Engine, project: int) -> list[dict[str, Any]]:
    """Per release: sessions, crash-free session rate, stall rate, p50/p95 launch time."""
    with engine.connect() as db:
        rows = db.execute(
            select(sessions.c.id, sessions.c.app_version, sessions.c.exit_kind,
                   sessions.c.launch_s)
            .where(sessions.c.project_id == project)
        ).all()  # fmt: skip
        stalled = set(db.execute(
            select(occurrences.c.session_id).join(issues, issues.c.id == occurrences.c.issue_id)
            .where(issues.c.kind == "stall").where(issues.c.project_id == project).distinct()
        ).scalars())  # fmt: skip
    by_release: dict[str, list[Any]] = {}
    for row in rows:
        by_release.setdefault(row.app_version or "(none)", []).append(row)
    result = []
    for release, members in sorted(by_release.items()):
        launches = [m.launch_s for m in members if m.launch_s]
        crashed = sum(1 for m in members if m.exit_kind in CRASH_EXITS)
        result.append({
            "release": release, "sessions": len(members),
            "crash_free_rate": 1 - crashed / len(members),
            "stall_rate": sum(1 for m in members if m.id in stalled) / len(members),
            "launch_p50_s": quantile(launches, 0.5) if launches else None,
            "launch_p95_s": quantile(launches, 0.95) if launches else None,
        })  # fmt: skip
    return result
