"""The work queue over stored uploads: claim a job under a lease, finish it in the same
transaction as its results.

PostgreSQL: ``SELECT … FOR UPDATE SKIP LOCKED`` picks a queued job, or a running one whose lease
expired (its worker died), so any number of workers share the table without blocking each other.
SQLite: one writer at a time anyway; ``BEGIN IMMEDIATE`` serialises the claim. A job's results
and its ``done`` state commit together, so a worker killed mid-job leaves nothing half-written
and the job is taken over when its lease ends: every acknowledged upload is processed once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Final

from sqlalchemy import Connection, Engine, select, text, update

from hawkwatch.server.database import is_sqlite
from hawkwatch.server.schema import jobs

LEASE_S: Final = 60.0
MAX_ATTEMPTS: Final = 5


@dataclass(frozen=True)
class Claim:
    job_id: int
    envelope_row: int
    lease_until: float


def claim(engine: Engine, *, now: float | None = None, lease_s: float = LEASE_S) -> Claim | None:
    """Take the oldest job that is queued or whose lease ran out; None when there is none."""
    now = time.time() if now is None else now
    free = (jobs.c.state == "queued") | ((jobs.c.state == "running") & (jobs.c.lease_until < now))
    with engine.begin() as db:
        claimable = select(jobs.c.id, jobs.c.envelope_id).where(free).order_by(jobs.c.id).limit(1)
        if not is_sqlite(engine):
            claimable = claimable.with_for_update(skip_locked=True)
        row = db.execute(claimable).first()
        if row is None:
            return None
        lease = now + lease_s
        taken = db.execute(
            update(jobs)
            .where(jobs.c.id == row.id)
            .where(free)  # still free: another worker may have claimed it in between (SQLite)
            .values(state="running", lease_until=lease, attempts=jobs.c.attempts + 1)
        ).rowcount
        return Claim(row.id, row.envelope_id, lease) if taken == 1 else None


def finish(db: Connection, claim_: Claim) -> bool:
    """Mark the job done inside the caller's transaction; False if the lease was lost (another
    worker took the job over), and then the caller must roll back."""
    done = db.execute(
        update(jobs)
        .where(jobs.c.id == claim_.job_id)
        .where(jobs.c.state == "running")
        .where(jobs.c.lease_until == claim_.lease_until)
        .values(state="done", lease_until=None, error=None)
    ).rowcount
    return done == 1


def fail(engine: Engine, claim_: Claim, error: str) -> None:
    """Record a failed attempt; the job is retried until ``MAX_ATTEMPTS``, then left failed."""
    with engine.begin() as db:
        db.execute(
            update(jobs)
            .where(jobs.c.id == claim_.job_id)
            .values(
                state=_after_failure(db, claim_.job_id), lease_until=None, error=error[:2000]
            )
        )


def _after_failure(db: Connection, job_id: int) -> str:
    attempts = db.execute(select(jobs.c.attempts).where(jobs.c.id == job_id)).scalar() or 0
    return "failed" if attempts >= MAX_ATTEMPTS else "queued"


def counts(engine: Engine) -> dict[str, int]:
    with engine.connect() as db:
        rows = db.execute(text("SELECT state, COUNT(*) FROM jobs GROUP BY state")).all()
    return {state: int(count) for state, count in rows}
