"""The per-day rollups stay equal to what the occurrences say, through snapshots that replace a
session's problems, on both databases (the invariant the dashboard's counts rest on)."""

from __future__ import annotations

import gzip

import pytest
from sqlalchemy import Engine, select, text

from hawkwatch.model.envelope import Envelope, EnvelopeSession, encode_envelope
from hawkwatch.server import admin, rollups
from hawkwatch.server.pipeline import drain
from hawkwatch.server.schema import issue_days, sessions
from hawkwatch.store import Session, list_sessions
from hawkwatch.uploader import ENVELOPE_TYPE, post
from tests.server.conftest import LiveServer
from tests.server.dashboard_world import run_apps

STALLS = "anr"  # the stall monitor's collection (MTHawkeye's name)


@pytest.fixture(scope="module")
def stalled_session(tmp_path_factory: pytest.TempPathFactory) -> Session:
    home = tmp_path_factory.mktemp("home")
    run_apps(home)
    (found,) = [s for s in list_sessions(home / "sessions")
                if any(r.collection == STALLS for r in s.records().records)]  # fmt: skip
    return found


def send(server: LiveServer, key: str, session: Session, sequence: int, keep_stalls: bool) -> None:
    records = [(r.collection, r.key, r.value) for r in session.records().records
               if keep_stalls or r.collection != STALLS]  # fmt: skip
    envelope = Envelope(id=f"{session.name}:{sequence}",
                        session=EnvelopeSession(session.name, dict(session.metadata)),
                        records=records)  # type: ignore[arg-type]  # fmt: skip
    status, _ = post(server.url, key, gzip.compress(encode_envelope(envelope)),
                     {"Content-Encoding": "gzip", "Content-Type": ENVELOPE_TYPE})  # fmt: skip
    assert status == 202


def rollup_rows(engine: Engine) -> list[tuple]:
    with engine.connect() as db:
        return sorted(tuple(r) for r in db.execute(select(issue_days)))


def recomputed(engine: Engine) -> list[tuple]:
    """What the migration's backfill makes of the occurrences stored now."""
    with engine.begin() as db:
        db.execute(text("CREATE TEMPORARY TABLE saved AS SELECT * FROM issue_days"))
        db.execute(text("DELETE FROM issue_days"))
        db.execute(text(rollups.backfill_statement(engine.dialect.name)))
        rows = sorted(tuple(r) for r in db.execute(select(issue_days)))
        db.execute(text("DELETE FROM issue_days"))
        db.execute(text("INSERT INTO issue_days SELECT * FROM saved"))
        db.execute(text("DROP TABLE saved"))
    return rows


def stall_events(engine: Engine) -> int:
    with engine.connect() as db:
        return int(db.execute(text(
            "SELECT COALESCE(SUM(events), 0) FROM issue_days JOIN issues "
            "ON issues.id = issue_days.issue_id WHERE issues.kind = 'stall'"
        )).scalar() or 0)  # fmt: skip


def stalled_flag(engine: Engine) -> bool:
    with engine.connect() as db:
        return bool(db.execute(select(sessions.c.stalled)).scalar_one())


def test_rollups_follow_replaced_snapshots(live_server: LiveServer, engine: Engine,
                                          stalled_session: Session) -> None:  # fmt: skip
    key = admin.add_project(engine, "shop")
    send(live_server, key, stalled_session, 2, keep_stalls=True)
    assert drain(engine) == 1
    first = rollup_rows(engine)
    assert first == recomputed(engine) and stall_events(engine) == 1 and stalled_flag(engine)
    assert all(row[3] >= 1 and row[4] == 1 for row in first)  # events, sessions

    send(live_server, key, stalled_session, 4, keep_stalls=False)  # the stall is gone
    assert drain(engine) == 1
    assert rollup_rows(engine) == recomputed(engine)
    assert stall_events(engine) == 0 and not stalled_flag(engine)

    send(live_server, key, stalled_session, 3, keep_stalls=True)  # older: changes nothing
    assert drain(engine) == 1
    assert stall_events(engine) == 0

    send(live_server, key, stalled_session, 5, keep_stalls=True)
    assert drain(engine) == 1
    assert rollup_rows(engine) == first == recomputed(engine)
    assert stalled_flag(engine)

