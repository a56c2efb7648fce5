"""What the dashboard's pages show, read in a few aggregate queries each (SQLite and PostgreSQL).

Counts are computed in the database, never by loading rows into Python: the issue list sums
the per-day rollups (``issue_days``) per issue and sorts and pages in SQL, its time ranges in
whole UTC days; the sparklines read the page's issues' last 14 days of rollups; the releases
overview reads the ``sessions_by_release`` index (its 95th percentile: one offset into it).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import (
    Connection,
    Engine,
    Integer,
    case,
    cast,
    func,
    select,
)
from sqlalchemy.sql import ColumnElement

from hawkwatch.server import rollups
from hawkwatch.server.queries import CRASH_EXITS
from hawkwatch.server.schema import issue_days, issues, occurrences, projects, sessions

DAY: Final = 86400.0
SPARK_DAYS: Final = 14
PER_PAGE: Final = 50
SORTS: Final = ("count", "sessions", "first_seen", "last_seen", "title", "kind")


@dataclass(frozen=True)
class IssueFilter:
    kind: str | None = None
    release: str | None = None
    since: float | None = None
    sort: str = "count"
    descending: bool = True
    page: int = 1


@dataclass(frozen=True)
class IssuePage:
    rows: list[dict[str, Any]]
    total: int
    kinds: list[str]
    releases: list[str]


def projects_overview(engine: Engine) -> list[dict[str, Any]]:
    """Every project with its number of issues and of sessions."""
    issue_counts = (
        select(issues.c.project_id, func.count().label("n"))
        .group_by(issues.c.project_id)
        .subquery()
    )
    session_counts = (
        select(sessions.c.project_id, func.count().label("n"))
        .group_by(sessions.c.project_id)
        .subquery()
    )
    query = (
        select(projects.c.id, projects.c.name, issue_counts.c.n.label("issues"),
               session_counts.c.n.label("sessions"))
        .outerjoin(issue_counts, issue_counts.c.project_id == projects.c.id)
        .outerjoin(session_counts, session_counts.c.project_id == projects.c.id)
        .order_by(projects.c.name)
    )  # fmt: skip
    with engine.connect() as db:
        return [
            {"name": r.name, "issues": r.issues or 0, "sessions": r.sessions or 0}
            for r in db.execute(query)
        ]


def _bucket(db: Connection, column: Any, width: float) -> ColumnElement[Any]:
    """``floor(column / width)`` as an integer, in the database's dialect."""
    if db.dialect.name == "sqlite":  # CAST truncates toward zero: Unix times are positive
        return cast(column / width, Integer)
    return cast(func.floor(column / width), Integer)


def issue_page(engine: Engine, project: int, wanted: IssueFilter, *, now: float) -> IssuePage:
    """One page of a project's issues, filtered and sorted, with each one's 14-day trend."""
    counted = select(
        issue_days.c.issue_id,
        func.sum(issue_days.c.events).label("count"),
        func.sum(issue_days.c.sessions).label("sessions"),
    ).group_by(issue_days.c.issue_id)
    if wanted.release is not None:
        counted = counted.where(issue_days.c.release == wanted.release)
    if wanted.since is not None:
        counted = counted.where(issue_days.c.day >= rollups.day_of(wanted.since))
    counts = counted.subquery()
    where = [issues.c.project_id == project]
    if wanted.kind is not None:
        where.append(issues.c.kind == wanted.kind)
    joined = issues.join(counts, counts.c.issue_id == issues.c.id)
    sort_column = {
        "count": counts.c.count, "sessions": counts.c.sessions, "title": issues.c.title,
        "first_seen": issues.c.first_seen, "last_seen": issues.c.last_seen, "kind": issues.c.kind,
    }.get(wanted.sort, counts.c.count)  # fmt: skip
    order = sort_column.desc() if wanted.descending else sort_column.asc()
    page = max(1, wanted.page)
    query = (
        select(issues.c.id, issues.c.kind, issues.c.title, issues.c.culprit,
               issues.c.first_seen, issues.c.last_seen, counts.c.count, counts.c.sessions)
        .select_from(joined).where(*where).order_by(order, issues.c.id)
        .limit(PER_PAGE).offset((page - 1) * PER_PAGE)
    )  # fmt: skip
    with engine.connect() as db:
        rows = [dict(r._mapping) for r in db.execute(query)]
        total = db.execute(select(func.count()).select_from(joined).where(*where)).scalar() or 0
        kinds = list(db.execute(
            select(issues.c.kind).where(issues.c.project_id == project).distinct()
            .order_by(issues.c.kind)
        ).scalars())  # fmt: skip
        releases = project_releases(db, project)
        trends = _trends(db, [r["id"] for r in rows], wanted.release, now)
    for row in rows:
        row["trend"] = trends.get(row["id"], [0] * SPARK_DAYS)
    return IssuePage(rows, int(total), kinds, releases)


def project_releases(db: Connection, project: int) -> list[str]:
    """The releases a project's issues were seen in."""
    found = db.execute(
        select(issue_days.c.release).join(issues, issues.c.id == issue_days.c.issue_id)
        .where(issues.c.project_id == project).where(issue_days.c.release != rollups.NO_RELEASE)
        .distinct()
    ).scalars()  # fmt: skip
    return sorted(found, key=_release_key)


def _trends(
    db: Connection, ids: list[int], release: str | None, now: float
) -> dict[int, list[int]]:
    """Occurrences per day of each issue over the last ``SPARK_DAYS`` days (today last)."""
    if not ids:
        return {}
    first = rollups.day_of(now) - SPARK_DAYS + 1
    query = (
        select(issue_days.c.issue_id, issue_days.c.day, func.sum(issue_days.c.events))
        .where(issue_days.c.issue_id.in_(ids))
        .where(issue_days.c.day >= first)
        .group_by(issue_days.c.issue_id, issue_days.c.day)
    )
    if release is not None:
        query = query.where(issue_days.c.release == release)
    trends: dict[int, list[int]] = {}
    for issue_id, day, count in db.execute(query):
        if 0 <= day - first < SPARK_DAYS:
            trends.setdefault(issue_id, [0] * SPARK_DAYS)[day - first] = int(count)
    return trends


def issue_summary(engine: Engine, project: int, issue_id: int, *, hours: int = 48
                  ) -> dict[str, Any] | None:  # fmt: skip
    """The issue, its latest occurrences, and its counts by release and by hour (the last
    ``hours`` hours up to its last occurrence)."""
    with engine.connect() as db:
        columns = [c for c in issues.c if c.name != "example"]  # read below only when needed
        row = db.execute(
            select(*columns).where(issues.c.id == issue_id).where(issues.c.project_id == project)
        ).first()
        if row is None:
            return None
        latest = db.execute(
            select(occurrences.c.id, occurrences.c.time, occurrences.c.release,
                   occurrences.c.session_id)
            .where(occurrences.c.issue_id == issue_id)
            .order_by(occurrences.c.time.desc()).limit(20)
        ).all()  # fmt: skip
        # the newest occurrence's document (only that one: crash documents are big)
        event = db.execute(
            select(occurrences.c.detail).where(occurrences.c.id == latest[0].id)
            if latest else select(issues.c.example).where(issues.c.id == issue_id)
        ).scalar()  # fmt: skip
        by_release = db.execute(
            select(issue_days.c.release, func.sum(issue_days.c.events),
                   func.sum(issue_days.c.sessions))
            .where(issue_days.c.issue_id == issue_id)
            .group_by(issue_days.c.release)
        ).all()  # fmt: skip
        last_hour = math.floor(row.last_seen / 3600)
        hour = _bucket(db, occurrences.c.time, 3600.0).label("hour")
        per_hour: dict[int, int] = dict(db.execute(
            select(hour, func.count())
            .where(occurrences.c.issue_id == issue_id)
            .where(occurrences.c.time >= (last_hour - hours + 1) * 3600.0)
            .group_by(hour)
        ).all())  # fmt: skip
        report = None
        session_id = next((o.session_id for o in latest if o.session_id is not None), None)
        if session_id is not None:
            report = db.execute(
                select(sessions.c.report).where(sessions.c.id == session_id)
            ).scalar()
    return {
        "issue": dict(row._mapping),
        "count": sum(int(r[1]) for r in by_release),
        "sessions": sum(int(r[2]) for r in by_release),
        "event": event,
        "latest": [dict(o._mapping) for o in latest],
        "by_release": sorted(
            ((release or "(none)", int(n)) for release, n, _ in by_release),
            key=lambda pair: _release_key(pair[0]),
        ),
        "by_hour": [
            ((last_hour - hours + 1 + i) * 3600.0, int(per_hour.get(last_hour - hours + 1 + i, 0)))
            for i in range(hours)
        ],
        "session_report": report,
        "session_id": session_id,
    }


def session_row(engine: Engine, project: int, session_id: int) -> dict[str, Any] | None:
    with engine.connect() as db:
        row = db.execute(
            select(sessions.c.id, sessions.c.name, sessions.c.app_version, sessions.c.start_time,
                   sessions.c.exit_kind, sessions.c.launch_s, sessions.c.report)
            .where(sessions.c.id == session_id).where(sessions.c.project_id == project)
        ).first()  # fmt: skip
        if row is None:
            return None
        linked = db.execute(
            select(issues.c.id, issues.c.kind, issues.c.title)
            .where(issues.c.id.in_(
                select(occurrences.c.issue_id).where(occurrences.c.session_id == session_id)
            ))
            .order_by(issues.c.id)
        ).all()  # fmt: skip
    found = dict(row._mapping)
    found["issues"] = [dict(i._mapping) for i in linked]
    return found


def releases_overview(engine: Engine, project: int) -> list[dict[str, Any]]:
    """Per release: sessions, crash-free session rate, stall rate, p95 launch time (all read
    from the ``sessions_by_release`` index)."""
    crashed = case((sessions.c.exit_kind.in_(sorted(CRASH_EXITS)), 1), else_=0)
    stalled = case((sessions.c.stalled, 1), else_=0)
    with engine.connect() as db:
        totals = db.execute(
            select(sessions.c.app_version, func.count(), func.sum(crashed), func.sum(stalled),
                   func.count(sessions.c.launch_s))
            .where(sessions.c.project_id == project)
            .group_by(sessions.c.app_version)
        ).all()  # fmt: skip
        result = [
            {
                "release": name or "(none)", "sessions": int(count),
                "crash_free_rate": 1 - int(crashes or 0) / count,
                "stall_rate": int(stalls or 0) / count,
                "launch_p95_s": _launch_p95(db, project, name, launches),
            }
            for name, count, crashes, stalls, launches in totals
        ]  # fmt: skip
    return sorted(result, key=lambda r: _release_key(r["release"]))


def _launch_p95(db: Connection, project: int, release: str | None, count: int) -> float | None:
    """The nearest-rank 95th percentile of a release's launch times: one step into the index."""
    if not count:
        return None
    rank = math.ceil(0.95 * count)
    same = sessions.c.app_version.is_(None) if release is None else (
        sessions.c.app_version == release
    )  # fmt: skip
    value = db.execute(
        select(sessions.c.launch_s)
        .where(sessions.c.project_id == project).where(same)
        .where(sessions.c.launch_s.is_not(None))
        .order_by(sessions.c.launch_s).offset(rank - 1).limit(1)
    ).scalar()  # fmt: skip
    return None if value is None else float(value)


def _release_key(name: str) -> tuple[Any, ...]:
    """Version-aware order: 1.9 before 1.10, "1.0 (1)" after 1.0; other names last, by name."""
    found = re.match(r"(\d+(?:\.\d+)*)(.*)", name)
    if found is None:
        return (1, (), name)
    return (0, tuple(int(p) for p in found.group(1).split(".")), found.group(2))
