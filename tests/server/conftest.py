"""The collector's tests run on SQLite and on a real PostgreSQL (started once per run)."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from hawkwatch.server.app import ServerSettings, create_app
from hawkwatch.server.database import make_engine, migrate
from hawkwatch.server.schema import metadata
from tests.server.alert_receivers import Mailbox, Webhook, serve_smtp, serve_webhook
from tests.server.postgres import Postgres, start_postgres


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """One server for the run. Its folder is under /tmp itself: pytest's folders are private to
    root, and the server runs as the ``postgres`` user. In CI a missing server fails the run."""
    folder = Path(tempfile.mkdtemp(prefix="hawkwatch-postgres-"))
    started = start_postgres(folder)
    if isinstance(started, str):
        shutil.rmtree(folder, ignore_errors=True)
        if os.environ.get("CI"):
            pytest.fail(f"CI must test PostgreSQL: {started}")
        pytest.skip(f"no PostgreSQL here: {started}")
    yield started
    started.stop()
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """A migrated, empty database of each kind."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'server.db'}"
    else:
        url = request.getfixturevalue("postgres").url
    made = make_engine(url)
    if request.param == "postgresql":
        with made.begin() as db:  # a clean schema for every test
            db.execute(text("DROP SCHEMA public CASCADE; CREATE SCHEMA public"))
    migrate(made)
    yield made
    made.dispose()


def row_counts(engine: Engine) -> dict[str, int]:
    with engine.connect() as db:
        return {
            table.name: int(db.execute(text(f"SELECT COUNT(*) FROM {table.name}")).scalar() or 0)
            for table in metadata.sorted_tables
        }


@dataclass
class LiveServer:
    url: str
    engine: Engine


@pytest.fixture
def live_server(engine: Engine) -> Iterator[LiveServer]:
    """The real ASGI app under uvicorn on a loopback port, in a thread (no worker)."""
    import uvicorn

    settings = ServerSettings(rate_per_s=1000.0, burst=1000.0)
    config = uvicorn.Config(create_app(engine, settings), host="127.0.0.1", port=0,
                            log_level="warning", lifespan="off")  # fmt: skip
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield LiveServer(f"http://127.0.0.1:{port}", engine)
    server.should_exit = True
    thread.join(10)


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    """A loopback webhook receiver answering 200 (scripted statuses: ``webhook.statuses``)."""
    yield from serve_webhook()


@pytest.fixture
def smtp() -> Iterator[tuple[Mailbox, int]]:
    """A loopback ``aiosmtpd`` server: its mailbox and port."""
    yield from serve_smtp()
