"""Migration 0004 on a database that already holds occurrences (written as the 0001-era pipeline
wrote them: today's pipeline needs 0004's tables): the rollups and ``sessions.stalled`` are
filled from what is there, on both databases."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from hawkwatch.server.database import MIGRATIONS, make_engine
from tests.server.postgres import Postgres

DAY = 86400.0


def upgrade(engine: Engine, revision: str, *, down: bool = False) -> None:
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        (command.downgrade if down else command.upgrade)(config, revision)


@pytest.fixture(params=["sqlite", "postgresql"])
def bare(request: pytest.FixtureRequest, tmp_path: Path) -> Engine:
    if request.param == "sqlite":
        return make_engine(f"sqlite:///{tmp_path / 'old.db'}")
    server: Postgres = request.getfixturevalue("postgres")
    made = make_engine(server.url)
    with made.begin() as db:
        db.execute(text("DROP SCHEMA public CASCADE; CREATE SCHEMA public"))
    return made


def test_0004_counts_what_was_stored_before_it(bare: Engine) -> None:
    upgrade(bare, "0001")
    day = 20_000  # 2024-10-04
    with bare.begin() as db:
        db.execute(text("INSERT INTO projects VALUES (1, 'shop', 'k', 0)"))
        db.execute(text("INSERT INTO envelopes VALUES (1, 1, 'e:1', 'session', 's', :b, 0)"),
                   {"b": b""})  # fmt: skip
        for session in (1, 2, 3):
            db.execute(text(
                "INSERT INTO sessions (id, project_id, name, sequence, app_version, start_time, "
                "exit_kind, launch_s, report) VALUES (:id, 1, :name, 1, '1.0', 0, 'clean', "
                "NULL, '{}')"
            ), {"id": session, "name": f"s{session}"})  # fmt: skip
        db.execute(text(
            "INSERT INTO issues VALUES (1, 1, 'stall', 'f1', 'stall', NULL, 0, 0, '{}'), "
            "(2, 1, 'crash', 'f2', 'crash', NULL, 0, 0, '{}')"
        ))  # fmt: skip
        rows = [  # issue, session, time, release
            (1, 1, day * DAY + 10, "1.0"), (1, 1, day * DAY + 20, "1.0"),
            (1, 2, day * DAY + 30, "1.0"), (1, 2, (day + 1) * DAY + 5, "1.0"),
            (2, None, day * DAY + 40, None),
        ]  # fmt: skip
        for n, (issue, session, moment, release) in enumerate(rows, 1):
            db.execute(text(
                "INSERT INTO occurrences VALUES (:id, :issue, :session, 1, :time, :release, '{}')"
            ), {"id": n, "issue": issue, "session": session, "time": moment,
                "release": release})  # fmt: skip
    upgrade(bare, "head")
    with bare.connect() as db:
        days = sorted(tuple(r) for r in db.execute(text(
            "SELECT issue_id, release, day, events, sessions FROM issue_days"
        )))  # fmt: skip
        stalled = dict(db.execute(text("SELECT id, stalled FROM sessions")).all())  # type: ignore[arg-type]
    assert days == [(1, "1.0", day, 3, 2), (1, "1.0", day + 1, 1, 1), (2, "", day, 1, 0)]
    assert {k: bool(v) for k, v in stalled.items()} == {1: True, 2: True, 3: False}
    upgrade(bare, "0001", down=True)  # and back, the data of 0001 kept
    with bare.connect() as db:
        assert db.execute(text("SELECT COUNT(*) FROM occurrences")).scalar() == 5
        assert "stalled" not in list(db.execute(text("SELECT * FROM sessions")).keys())
    bare.dispose()
