"""Retention: raw envelopes and sessions/occurrences older than their project's setting go,
issues and their counts stay.

Run by the worker every hour (``worker.work``) and by ``hawkwatch server prune``. Everything is
deleted in short transactions of at most ``batch`` rows, so collectors and workers never wait
long. An envelope is deleted only once its job is ``done``. Before occurrences go their counts
are added to ``issue_rollups`` (per issue, release and upload day) in the same transaction, so
the issue list's counts, sessions and releases stay whole; a session goes with all its
occurrences in one transaction (they share its upload time), so pruned sessions are counted once.
On PostgreSQL whole months of ``occurrences`` are rolled up and dropped as partitions
(``partitions``): retention there is month-granular (a month goes once all of it is older than
every project's setting), and the remaining rows are never batch-deleted mid-month.
"""

from __future__ import annotations

import logging
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Final

from sqlalchemy import Connection, Engine, and_, delete, insert, select, text

from hawkwatch.server import partitions
from hawkwatch.server.database import is_sqlite
from hawkwatch.server.schema import envelopes, issue_rollups, issues, jobs, occurrences, projects
from hawkwatch.server.schema import sessions as sessions_table

log = logging.getLogger("hawkwatch.server")

_LOCK_KEY: Final = 0x68617771  # one pruner at a time on PostgreSQL (an advisory lock)


@dataclass(frozen=True)
class Retention:
    """The server's setting (days; None keeps forever); a project's own columns override it."""

    envelopes_days: float | None = 30.0
    events_days: float | None = 90.0
    batch: int = 1000
    drop_partitions: bool = True  # False: batched deletes even on PostgreSQL (the benchmark's peer)


@dataclass
class Pruned:
    envelopes: int = 0
    sessions: int = 0
    occurrences: int = 0
    partitions_dropped: int = 0
    partitions_created: list[str] = field(default_factory=list)
    skipped: bool = False  # another pruner holds the lock

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def prune(engine: Engine, policy: Retention, *, now: float | None = None) -> Pruned:
    """One retention pass over every project."""
    now = time.time() if now is None else now
    if is_sqlite(engine):
        return _prune(engine, policy, now)
    with engine.connect() as lock:
        if not lock.execute(text(f"SELECT pg_try_advisory_lock({_LOCK_KEY})")).scalar():
            return Pruned(skipped=True)
        lock.commit()
        try:
            return _prune(engine, policy, now)
        finally:
            lock.execute(text(f"SELECT pg_advisory_unlock({_LOCK_KEY})"))
            lock.commit()


def _prune(engine: Engine, policy: Retention, now: float) -> Pruned:
    result = Pruned(partitions_created=partitions.ensure_ahead(engine, now))
    with engine.connect() as db:
        rows = db.execute(select(
            projects.c.id, projects.c.keep_envelopes_days, projects.c.keep_events_days
        )).all()  # fmt: skip
        partitioned = policy.drop_partitions and partitions.is_partitioned(db)
    envelope_cutoffs = {r.id: _cutoff(now, r.keep_envelopes_days, policy.envelopes_days)
                        for r in rows}  # fmt: skip
    event_cutoffs = {r.id: _cutoff(now, r.keep_events_days, policy.events_days) for r in rows}
    if partitioned:  # whole months only, and only those every project is done with
        event_cutoffs = {k: None if v is None else partitions.month_start(v)
                         for k, v in event_cutoffs.items()}  # fmt: skip
        kept = list(event_cutoffs.values())
        if kept and None not in kept:
            result.partitions_dropped, result.occurrences = partitions.drop_before(
                engine, min(v for v in kept if v is not None)
            )
    for project, cutoff in event_cutoffs.items():
        if cutoff is not None:
            result.sessions += _prune_sessions(engine, project, cutoff, policy.batch, result)
            result.occurrences += _prune_loose(engine, project, cutoff, policy.batch)
    for project, cutoff in envelope_cutoffs.items():
        if cutoff is not None:
            result.envelopes += _prune_envelopes(engine, project, cutoff, policy.batch)
    return result


def _cutoff(now: float, own: float | None, default: float | None) -> float | None:
    days = own if own is not None else default
    return None if days is None else now - days * partitions.DAY_S


def _locked(engine: Engine, query: Any) -> Any:
    return query if is_sqlite(engine) else query.with_for_update(skip_locked=True)


def _prune_sessions(engine: Engine, project: int, cutoff: float, batch: int,
                    result: Pruned) -> int:  # fmt: skip
    """Sessions uploaded before ``cutoff``, each with its occurrences, ``batch`` at a time."""
    gone = 0
    while True:
        with engine.begin() as db:
            ids = list(db.execute(_locked(engine, select(sessions_table.c.id)
                .where(sessions_table.c.project_id == project)
                .where(sessions_table.c.received < cutoff)
                .order_by(sessions_table.c.received).limit(batch))).scalars())  # fmt: skip
            if not ids:
                return gone
            result.occurrences += _roll_up_and_delete(db, occurrences.c.session_id.in_(ids))
            gone += db.execute(delete(sessions_table).where(sessions_table.c.id.in_(ids))
                               .where(sessions_table.c.received < cutoff)).rowcount  # fmt: skip
        if len(ids) < batch:
            return gone


def _prune_loose(engine: Engine, project: int, cutoff: float, batch: int) -> int:
    """Occurrences of no session (iOS crash reports) uploaded before ``cutoff``."""
    gone = 0
    while True:
        with engine.begin() as db:
            ids = list(db.execute(
                select(occurrences.c.id).join(issues, issues.c.id == occurrences.c.issue_id)
                .where(issues.c.project_id == project)
                .where(occurrences.c.session_id.is_(None))
                .where(occurrences.c.received < cutoff).limit(batch)
            ).scalars())  # fmt: skip
            if not ids:
                return gone
            gone += _roll_up_and_delete(db, and_(occurrences.c.id.in_(ids),
                                                 occurrences.c.received < cutoff))  # fmt: skip
        if len(ids) < batch:
            return gone


def _roll_up_and_delete(db: Connection, where: Any) -> int:
    rows = db.execute(select(occurrences.c.issue_id, occurrences.c.release,
                             occurrences.c.received, occurrences.c.session_id)
                      .where(where)).all()  # fmt: skip
    if not rows:
        return 0
    counts: Counter[tuple[int, str | None, float]] = Counter()
    seen: defaultdict[tuple[int, str | None, float], set[int]] = defaultdict(set)
    for issue_id, release, received, session_id in rows:
        key = (issue_id, release, received // partitions.DAY_S * partitions.DAY_S)
        counts[key] += 1
        if session_id is not None:
            seen[key].add(session_id)
    db.execute(insert(issue_rollups), [
        {"issue_id": k[0], "release": k[1], "day": k[2], "count": n, "sessions": len(seen[k])}
        for k, n in counts.items()
    ])  # fmt: skip
    return int(db.execute(delete(occurrences).where(where)).rowcount)


def _prune_envelopes(engine: Engine, project: int, cutoff: float, batch: int) -> int:
    """Raw envelopes received before ``cutoff`` whose job is done, with their job rows."""
    gone = 0
    while True:
        with engine.begin() as db:
            ids = list(db.execute(_locked(engine,
                select(envelopes.c.id).join(jobs, jobs.c.envelope_id == envelopes.c.id)
                .where(envelopes.c.project_id == project)
                .where(envelopes.c.received < cutoff).where(jobs.c.state == "done")
                .limit(batch))).scalars())  # fmt: skip
            if not ids:
                return gone
            db.execute(delete(jobs).where(jobs.c.envelope_id.in_(ids))
                       .where(jobs.c.state == "done"))  # fmt: skip
            gone += db.execute(delete(envelopes).where(envelopes.c.id.in_(ids))).rowcount
        if len(ids) < batch:
            return gone
