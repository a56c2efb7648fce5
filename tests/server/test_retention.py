"""Retention on both databases: old sessions, occurrences and raw envelopes go in batches, the
issue list stays the same (counts, sessions, releases, first/last seen), envelopes whose job is
not done stay, a project's own setting wins, and on PostgreSQL whole months are dropped as
partitions. Upgrading a 0001 database with data keeps every row."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from sqlalchemy import Engine, func, insert, select, text, update

from hawkwatch.server import admin, partitions, queries
from hawkwatch.server.database import downgrade, make_engine, migrate
from hawkwatch.server.ingest import accept
from hawkwatch.server.pipeline import drain
from hawkwatch.server.retention import Retention, prune
from hawkwatch.server.schema import envelopes, issues, jobs, occurrences, sessions
from hawkwatch.server.worker import start_thread
from tests.server.test_jobs import queue_envelopes

HAWKWATCH = Path(sys.executable).with_name("hawkwatch")
DAY = 86400.0
NOW = time.time()
OLD = partitions.month_start(NOW, -5) + 3 * DAY  # five months ago, inside a month


def add_issue(engine: Engine, project: int, kind: str, first: float, last: float) -> int:
    with engine.begin() as db:
        return int(db.execute(insert(issues).values(
            project_id=project, kind=kind, fingerprint=kind, title=kind, culprit=None,
            first_seen=first, last_seen=last, example={},
        ).returning(issues.c.id)).scalar_one())  # fmt: skip


def add_sessions(engine: Engine, project: int, count: int, received: float, *, release: str,
                 hits: dict[int, int], prefix: str) -> None:  # fmt: skip
    """``count`` sessions uploaded at ``received``, each with ``hits[issue]`` occurrences."""
    with engine.begin() as db:
        for number in range(count):
            session = db.execute(insert(sessions).values(
                project_id=project, name=f"{prefix}{number}", sequence=1, app_version=release,
                start_time=received - 60, exit_kind="clean", report={}, received=received,
            ).returning(sessions.c.id)).scalar_one()  # fmt: skip
            for issue, times in hits.items():
                for hit in range(times):
                    db.execute(insert(occurrences).values(
                        issue_id=issue, session_id=session, envelope_id=0, received=received,
                        time=received - hit, release=release, detail={},
                    ))  # fmt: skip


def add_loose(engine: Engine, issue: int, count: int, received: float, envelope: int = 0) -> None:
    with engine.begin() as db:
        for number in range(count):
            db.execute(insert(occurrences).values(
                issue_id=issue, session_id=None, envelope_id=envelope, received=received,
                time=received - number, release=None, detail={},
            ))  # fmt: skip


def count(engine: Engine, table: str, where: str = "") -> int:
    with engine.connect() as db:
        return int(db.execute(text(f"SELECT COUNT(*) FROM {table} {where}")).scalar() or 0)


def test_pruning_drops_old_events_and_keeps_the_issue_list(engine: Engine) -> None:
    admin.add_project(engine, "shop")
    project = queries.project_id(engine, "shop")
    assert project is not None
    stall = add_issue(engine, project, "stall", OLD - 100, NOW)
    crash = add_issue(engine, project, "crash", OLD - 50, OLD)
    add_sessions(engine, project, 30, OLD, release="1.0", hits={stall: 2, crash: 1}, prefix="old")
    add_sessions(engine, project, 5, NOW, release="2.0", hits={stall: 1}, prefix="new")
    add_loose(engine, crash, 4, OLD)
    partitions.ensure_ahead(engine, OLD)  # PostgreSQL: OLD's month becomes a partition
    before = queries.list_issues(engine, project)
    by_release = queries.list_issues(engine, project, release="1.0")
    assert [(i["kind"], i["count"], i["sessions"]) for i in before] == [
        ("stall", 65, 35), ("crash", 34, 30)]  # fmt: skip

    done = prune(engine, Retention(envelopes_days=None, events_days=30, batch=7), now=NOW)

    assert (done.sessions, done.occurrences) == (30, 94)
    assert count(engine, "sessions") == 5 and count(engine, "occurrences") == 5
    assert queries.list_issues(engine, project) == before
    assert queries.list_issues(engine, project, release="1.0") == by_release
    assert [i["releases"] for i in before] == [["1.0", "2.0"], ["1.0"]]
    recent = queries.list_issues(engine, project, since=NOW - DAY)
    assert [(i["kind"], i["count"], i["sessions"]) for i in recent] == [("stall", 5, 5)]
    if engine.dialect.name == "postgresql":
        assert done.partitions_dropped >= 1  # the old month went whole, not row by row
        with engine.connect() as db:
            assert partitions.partition_name(OLD) not in {p.name for p in partitions.months(db)}
    assert prune(engine, Retention(None, 30), now=NOW).occurrences == 0  # nothing left to do


def test_envelopes_are_pruned_only_once_their_job_is_done(engine: Engine) -> None:
    project = queue_envelopes(engine, 3)
    drain(engine)
    key = admin.add_project(engine, "other")
    other = admin.project_for_key(engine, key)
    assert other is not None
    for number in range(2):  # two more, still queued; one of them claimed (running)
        body = f'{{"id": "q{number}:1", "session": {{"name": "q{number}"}}, "records": []}}'
        accept(engine, other[0], body.encode(), content_encoding=None, artifact_name=None,
               envelope_id=None)  # fmt: skip
    with engine.begin() as db:
        first = db.execute(select(func.min(jobs.c.id)).where(jobs.c.state == "queued")).scalar()
        db.execute(update(jobs).where(jobs.c.id == first).values(state="running",
                                                                  lease_until=time.time() + 3600))
        db.execute(update(envelopes).values(received=NOW - 40 * DAY))
    done = prune(engine, Retention(envelopes_days=30, events_days=90), now=NOW)
    assert done.envelopes == 3
    with engine.connect() as db:
        left = db.execute(select(envelopes.c.project_id, jobs.c.state)
                          .join(jobs, jobs.c.envelope_id == envelopes.c.id)).all()  # fmt: skip
    assert sorted(state for _, state in left) == ["queued", "running"]
    assert {p for p, _ in left} == {other[0]} and count(engine, "sessions") == 3
    # a late replay of a pruned envelope is stored again, and its session is not duplicated
    queue_envelopes_replay(engine, project)
    drain(engine)
    # the replayed session is still one row; of 'other', the queued job ran (the running one is
    # leased by a worker that is not there)
    assert count(engine, "sessions", f"WHERE project_id = {project}") == 3
    assert count(engine, "sessions", f"WHERE project_id = {other[0]}") == 1


def queue_envelopes_replay(engine: Engine, project: int) -> None:
    from hawkwatch.model.envelope import Envelope, EnvelopeSession, encode_envelope
    from hawkwatch.model.records import GcPause

    record = GcPause(start=1_700_000_000.0, generation=2, duration_ms=20.0)
    body = encode_envelope(Envelope(id="s0:1", session=EnvelopeSession("s0"),
                                    records=[tuple(record.to_record())]))  # type: ignore[list-item]  # fmt: skip
    answer = accept(engine, project, body, content_encoding=None, artifact_name=None,
                    envelope_id=None)  # fmt: skip
    assert answer.body == {"id": "s0:1", "duplicate": False}


def test_a_projects_own_retention_wins(engine: Engine) -> None:
    for name in ("short", "long"):
        admin.add_project(engine, name)
    admin.set_retention(engine, "short", keep_events_days=10)
    ids = {name: queries.project_id(engine, name) for name in ("short", "long")}
    for name, project in ids.items():
        assert project is not None
        issue = add_issue(engine, project, "stall", OLD, OLD)
        add_sessions(engine, project, 3, OLD, release="1", hits={issue: 1}, prefix=name)
    partitions.ensure_ahead(engine, OLD)
    done = prune(engine, Retention(envelopes_days=None, events_days=400), now=NOW)
    assert done.partitions_dropped == 0 and done.sessions == 3
    with engine.connect() as db:
        kept = db.execute(select(sessions.c.project_id).distinct()).scalars().all()
    assert kept == [ids["long"]]
    assert queries.list_issues(engine, ids["short"])[0]["count"] == 3


def test_the_worker_prunes_at_start(engine: Engine) -> None:
    admin.add_project(engine, "shop")
    project = queries.project_id(engine, "shop")
    assert project is not None
    issue = add_issue(engine, project, "stall", OLD, OLD)
    add_sessions(engine, project, 4, OLD, release="1", hits={issue: 1}, prefix="s")
    stop = start_thread(engine, retention=Retention(None, 30))
    try:
        deadline = time.monotonic() + 60
        while count(engine, "sessions") and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        stop.set()
    assert count(engine, "sessions") == 0 and count(engine, "occurrences") == 0
    assert queries.list_issues(engine, project)[0]["count"] == 4
    if engine.dialect.name == "postgresql":  # months ahead exist for the coming inserts
        with engine.connect() as db:
            names = {p.name for p in partitions.months(db)}
        assert partitions.partition_name(partitions.month_start(NOW, 3)) in names


def test_upgrading_a_0001_database_keeps_every_row(engine: Engine) -> None:
    downgrade(engine, "0001")
    with engine.begin() as db:
        db.execute(text("INSERT INTO projects (id, name, ingest_key_hash, created) "
                        "VALUES (1, 'shop', 'k', 0)"))  # fmt: skip
        db.execute(text("INSERT INTO envelopes (id, project_id, envelope_id, kind, name, body, "
                        f"received) VALUES (1, 1, 's:1', 'session', 's', :b, {OLD})"),
                   {"b": b"{}"})  # fmt: skip
        db.execute(text("INSERT INTO sessions (id, project_id, name, sequence, report) "
                        "VALUES (1, 1, 's', 1, '{}')"))  # fmt: skip
        db.execute(text("INSERT INTO issues (id, project_id, kind, fingerprint, title, "
                        "first_seen, last_seen, example) VALUES (1, 1, 'stall', 'f', 't', 0, 0, "
                        "'{}')"))  # fmt: skip
        for number in (1, 2):
            db.execute(text("INSERT INTO occurrences (id, issue_id, session_id, envelope_id, "
                            f"time, release, detail) VALUES ({number}, 1, 1, 1, {OLD}, '1', "
                            "'{}')"))  # fmt: skip
    migrate(engine)
    with engine.connect() as db:
        moved = db.execute(select(occurrences.c.id, occurrences.c.received)).all()
        session_received = db.execute(select(sessions.c.received)).scalar()
    assert sorted(moved) == [(1, OLD), (2, OLD)] and session_received == OLD
    assert [(i["count"], i["sessions"]) for i in queries.list_issues(engine, 1)] == [(2, 1)]
    if engine.dialect.name == "postgresql":
        assert count(engine, partitions.partition_name(OLD)) == 2  # a month of its own
    add_loose(engine, 1, 1, NOW, envelope=1)  # new ids continue after the copied ones
    add_loose(engine, 1, 1, NOW, envelope=99)  # its envelope pruned: 0001 cannot hold it
    assert count(engine, "occurrences", "WHERE id = 3") == 1
    downgrade(engine, "0001")
    assert count(engine, "occurrences") == 3
    migrate(engine)


def test_prune_and_set_retention_commands(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'server.db'}"
    made = make_engine(url)
    migrate(made)
    admin.add_project(made, "shop")
    project = queries.project_id(made, "shop")
    assert project is not None
    issue = add_issue(made, project, "stall", OLD, OLD)
    add_sessions(made, project, 2, OLD, release="1", hits={issue: 3}, prefix="s")
    run = [str(HAWKWATCH), "server"]
    keep = subprocess.run([*run, "set-retention", "shop", "--events-days", "7", "--database",
                           url], capture_output=True, text=True)  # fmt: skip
    assert keep.returncode == 0, keep.stderr
    pruned = subprocess.run([*run, "prune", "--database", url, "--keep-events-days", "forever"],
                            capture_output=True, text=True)  # fmt: skip
    assert pruned.returncode == 0, pruned.stderr
    assert json.loads(pruned.stdout)["sessions"] == 2 and json.loads(pruned.stdout)[
        "occurrences"] == 6  # fmt: skip
    unknown = subprocess.run([*run, "set-retention", "nope", "--events-days", "3", "--database",
                              url], capture_output=True, text=True)  # fmt: skip
    assert unknown.returncode == 1 and unknown.stderr.strip().splitlines() == [
        "hawkwatch: no project 'nope'"]  # fmt: skip
    made.dispose()
