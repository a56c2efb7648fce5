"""Engines and migrations: SQLite (WAL) on one machine, PostgreSQL to scale out.

``default_url()`` is ``sqlite:///$HAWKWATCH_HOME/server/hawkwatch.db``. SQLite connections get
WAL journaling, a busy timeout and foreign keys; PostgreSQL URLs (``postgresql+psycopg://…``)
are used as given. ``migrate(engine)`` brings the schema to the newest Alembic revision (run at
every start of the server and worker; a no-op when current).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event

from hawkwatch.home import hawkwatch_home

MIGRATIONS = Path(__file__).with_name("migrations")


def default_url() -> str:
    folder = hawkwatch_home() / "server"
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{folder / 'hawkwatch.db'}"


def is_sqlite(engine: Engine) -> bool:
    return engine.dialect.name == "sqlite"


def make_engine(url: str | None = None) -> Engine:
    """An engine for ``url`` (default: the embedded SQLite database)."""
    url = url or default_url()
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 30})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=10)


def _sqlite_pragmas(connection: Any, _record: Any) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: durable at each commit's sync
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def migrate(engine: Engine, revision: str = "head") -> None:
    """Upgrade the schema to ``revision`` (the newest by default)."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def downgrade(engine: Engine, revision: str) -> None:
    """Take the schema back to ``revision`` (an operator's way back after an upgrade)."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, revision)
