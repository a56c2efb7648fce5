"""What the dashboard's pages show, read in a few aggregate queries each (SQLite and PostgreSQL).

Counts are computed in the database, never by loading rows into Python: the issue list groups
occurrences per issue (read from the ``occurrences_by_issue_release`` index) and sorts and pages
in SQL; the sparklines group the page's issues' last 14 days by day; the releases overview ranks
launch times per release with a window function to find the 95th percentile.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import (
    Connection,
    Engine,
    Float,
    Integer,
    and_,
    case,
    cast,
    distinct,
    func,
    literal_column,
    select,
)
from sqlalchemy.sql import ColumnElement

from hawkwatch.server.queries import CRASH_EXITS
from hawkwatch.server.schema import issues, occurrences, projects, sessions

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
        occurrences.c.issue_id,
        func.count().label("count"),
        func.count(distinct(occurrences.c.session_id)).label("sessions"),
    ).group_by(occurrences.c.issue_id)
    if wanted.release is not None:
        counted = counted.where(occurrences.c.release == wanted.release)
    if wanted.since is not None:
        counted = counted.where(occurrences.c.time >= wanted.since)
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
    """The releases a project's sessions and crash reports named, newest name last."""
    found = set(db.execute(
        select(sessions.c.app_version).where(sessions.c.project_id == project)
        .where(sessions.c.app_version.is_not(None)).distinct()
    ).scalars())  # fmt: skip
    found |= set(db.execute(
        select(occurrences.c.release).join(issues, issues.c.id == occurrences.c.issue_id)
        .where(issues.c.project_id == project).where(issues.c.kind == "crash")
        .where(occurrences.c.release.is_not(None)).distinct()
    ).scalars())  # fmt: skip
    return sorted(found)


def _trends(
    db: Connection, ids: list[int], release: str | None, now: float
) -> dict[int, list[int]]:
    """Occurrences per day of each issue over the last ``SPARK_DAYS`` days (today last)."""
    if not ids:
        return {}
    today = math.floor(now / DAY)
    day = _bucket(db, occurrences.c.time, DAY).label("day")
    query = (
        select(occurrences.c.issue_id, day, func.count())
        .where(occurrences.c.issue_id.in_(ids))
        .where(occurrences.c.time >= (today - SPARK_DAYS + 1) * DAY)
        .group_by(occurrences.c.issue_id, day)
    )
    if release is not None:
        query = query.where(occurrences.c.release == release)
    trends: dict[int, list[int]] = {}
    for issue_id, bucket, count in db.execute(query):
        index = int(bucket) - (today - SPARK_DAYS + 1)
        if 0 <= index < SPARK_DAYS:
            trends.setdefault(issue_id, [0] * SPARK_DAYS)[index] = int(count)
    return trends


def issue_summary(engine: Engine, project: int, issue_id: int, *, hours: int = 48
                  ) -> dict[str, Any] | None:  # fmt: skip
    """The issue, its latest occurrences, and its counts by release and by hour (the last
    ``hours`` hours up to its last occurrence)."""
    with engine.connect() as db:
        row = db.execute(
            select(issues).where(issues.c.id == issue_id).where(issues.c.project_id == project)
        ).first()
        if row is None:
            return None
        latest = db.execute(
            select(occurrences.c.id, occurrences.c.time, occurrences.c.release,
                   occurrences.c.session_id)
            .where(occurrences.c.issue_id == issue_id)
            .order_by(occurrences.c.time.desc()).limit(20)
        ).all()  # fmt: skip
        event = row.example
        if latest:  # the newest occurrence's document (only that one: crash documents are big)
            event = db.execute(
                select(occurrences.c.detail).where(occurrences.c.id == latest[0].id)
            ).scalar()
        totals = db.execute(
            select(func.count(), func.count(distinct(occurrences.c.session_id)))
            .where(occurrences.c.issue_id == issue_id)
        ).one()
        by_release = db.execute(
            select(occurrences.c.release, func.count())
            .where(occurrences.c.issue_id == issue_id)
            .group_by(occurrences.c.release).order_by(occurrences.c.release)
        ).all()
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
        "count": int(totals[0]),
        "sessions": int(totals[1]),
        "event": event,
        "latest": [dict(o._mapping) for o in latest],
        "by_release": [(release or "(none)", int(n)) for release, n in by_release],
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
    """Per release: sessions, crash-free session rate, stall rate, p95 launch time."""
    crashed = case((sessions.c.exit_kind.in_(sorted(CRASH_EXITS)), 1), else_=0)
    with engine.connect() as db:
        totals = db.execute(
            select(sessions.c.app_version, func.count(), func.sum(crashed))
            .where(sessions.c.project_id == project)
            .group_by(sessions.c.app_version)
        ).all()  # fmt: skip
        stalled: dict[str | None, int] = dict(db.execute(
            select(occurrences.c.release, func.count(distinct(occurrences.c.session_id)))
            .join(issues, issues.c.id == occurrences.c.issue_id)
            .where(issues.c.project_id == project).where(issues.c.kind == "stall")
            .where(occurrences.c.session_id.is_not(None))
            .group_by(occurrences.c.release)
        ).all())  # fmt: skip
        p95 = _launch_p95(db, project)
    result = [
        {
            "release": name or "(none)", "sessions": int(count),
            "crash_free_rate": 1 - int(crashes or 0) / count,
            "stall_rate": int(stalled.get(name, 0)) / count,
            "launch_p95_s": p95.get(name),
        }
        for name, count, crashes in totals
    ]  # fmt: skip
    return sorted(result, key=lambda r: _release_key(r["release"]))


def _launch_p95(db: Connection, project: int) -> dict[str | None, float]:
    """The nearest-rank 95th percentile of launch time per release, ranked in the database."""
    release = sessions.c.app_version
    ranked = (
        select(
            release.label("release"),
            sessions.c.launch_s,
            func.row_number()
            .over(partition_by=release, order_by=sessions.c.launch_s)
            .label("rank"),
            func.count().over(partition_by=release).label("n"),
        )
        .where(sessions.c.project_id == project)
        .where(sessions.c.launch_s.is_not(None))
        .subquery()
    )
    wanted = cast(ranked.c.n, Float) * literal_column("0.95")
    rows = db.execute(
        select(ranked.c.release, ranked.c.launch_s).where(
            and_(ranked.c.rank >= wanted, ranked.c.rank < wanted + 1)
        )
    ).all()
    return {name: float(value) for name, value in rows}


def _release_key(name: str) -> tuple[Any, ...]:
    """Version-aware order: 1.10 after 1.9; names that are not versions last, by name."""
    parts = name.split(".")
    if all(p.isdigit() for p in parts):
        return (0, tuple(int(p) for p in parts))
    return (1, name)
