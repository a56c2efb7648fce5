"""Faults with real processes, on both databases: the collector SIGKILLed mid-request while a
client uploads (the client retries; every envelope is stored exactly once), PostgreSQL stopped
and started under a running server (503 with Retry-After meanwhile, then it recovers by itself
and its worker resumes), and a full (SQLite) or read-only (PostgreSQL) database (503 with the
reason, nothing stored)."""

from __future__ import annotations

import gzip
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, event, select, text

from hawkwatch.model.envelope import Envelope, EnvelopeSession, encode_envelope
from hawkwatch.model.records import GcPause
from hawkwatch.server import admin
from hawkwatch.server.database import make_engine, migrate
from hawkwatch.server.pipeline import drain
from hawkwatch.server.schema import envelopes, jobs, sessions
from hawkwatch.uploader import ENVELOPE_TYPE, post
from tests.server.conftest import LiveServer, row_counts
from tests.server.postgres import Postgres

HAWKWATCH = Path(sys.executable).with_name("hawkwatch")
HEADERS = {"Content-Encoding": "gzip", "Content-Type": ENVELOPE_TYPE}


def body(name: str, records: int = 50) -> bytes:
    rows = [tuple(GcPause(start=1_700_000_000.0 + i, generation=2, duration_ms=5.0).to_record())
            for i in range(records)]  # fmt: skip
    envelope = Envelope(id=f"{name}:1", session=EnvelopeSession(name), records=rows)  # type: ignore[arg-type]
    return gzip.compress(encode_envelope(envelope))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Collector:
    """``hawkwatch server run`` as its own process on a fixed loopback port."""

    def __init__(self, url: str, port: int, *, worker: bool) -> None:
        self.url, self.port, self.worker = url, port, worker
        self.base = f"http://127.0.0.1:{port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}
        command = [str(HAWKWATCH), "server", "run", "--database", self.url, "--port",
                   str(self.port), *([] if self.worker else ["--no-worker"])]  # fmt: skip
        self.process = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.base + "/healthz", timeout=2):
                    return
            except OSError:
                time.sleep(0.1)
        raise AssertionError("the collector did not start")

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture
def collector(engine: Engine) -> Iterator[Collector]:
    made = Collector(engine.url.render_as_string(hide_password=False), free_port(), worker=False)
    yield made
    made.stop()


def stored_ids(engine: Engine) -> list[str]:
    with engine.connect() as db:
        return list(db.execute(select(envelopes.c.envelope_id)).scalars())


def raw_post(base: str, key: str, data: bytes) -> tuple[int, dict[str, str], dict[str, str]]:
    """One POST without retries: status, headers (lower-case names), JSON answer."""
    request = urllib.request.Request(base + "/api/v1/ingest", data=data, method="POST",
                                     headers={**HEADERS, "Authorization": f"Bearer {key}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            status, headers, text = answer.status, answer.headers, answer.read()
    except urllib.error.HTTPError as exc:
        with exc:
            status, headers, text = exc.code, exc.headers, exc.read()
    return status, {k.lower(): v for k, v in headers.items()}, json.loads(text)


def test_a_collector_killed_mid_request_loses_and_duplicates_nothing(
    engine: Engine, collector: Collector
) -> None:
    key = admin.add_project(engine, "shop")
    collector.start()
    names = [f"kill{number}" for number in range(30)]
    failures: list[BaseException] = []

    def upload() -> None:
        try:
            for name in names:
                post(collector.base, key, body(name), HEADERS, retries=12)
        except BaseException as exc:
            failures.append(exc)

    client = threading.Thread(target=upload)
    client.start()
    deadline = time.monotonic() + 60
    while len(stored_ids(engine)) < 8 and time.monotonic() < deadline:
        time.sleep(0.02)
    half = body("half", 2000)  # a request whose body is half sent when the collector dies
    with socket.create_connection(("127.0.0.1", collector.port)) as sock:
        sock.sendall(f"POST /api/v1/ingest HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n"
                     f"Content-Encoding: gzip\r\nContent-Length: {len(half)}\r\n\r\n".encode()
                     + half[: len(half) // 2])  # fmt: skip
        collector.kill()
    collector.start()  # the same port: the client's retries reach the new process
    client.join(120)
    assert not failures
    ids = stored_ids(engine)
    assert sorted(ids) == sorted(f"{name}:1" for name in names)  # once each; 'half' not at all
    assert drain(engine) == 30
    assert row_counts(engine)["sessions"] == 30


def test_a_full_or_read_only_database_answers_503_and_stores_nothing(
    live_server: LiveServer,
) -> None:
    engine = live_server.engine
    key = admin.add_project(engine, "shop")
    assert raw_post(live_server.url, key, body("first"))[0] == 202
    before = row_counts(engine)
    undo = _break_writes(engine)
    try:
        status, headers, answer = raw_post(live_server.url, key, body("refused", 3000))
    finally:
        undo()
    assert status == 503 and headers["retry-after"] == "5"
    reason = "full" if engine.dialect.name == "sqlite" else "read-only transaction"
    assert answer["error"].startswith("database unavailable:") and reason in answer["error"]
    assert row_counts(engine) == before  # nothing of the refused upload
    assert post(live_server.url, key, body("refused", 3000), HEADERS)[0] == 202  # once fixed


def _break_writes(engine: Engine) -> object:
    """SQLite: new connections may not grow the file (SQLITE_FULL, as on a full disk).
    PostgreSQL: the database turns read-only. Returns how to undo it."""
    engine.dispose()
    if engine.dialect.name == "sqlite":
        with engine.connect() as db:
            pages = int(db.execute(text("PRAGMA page_count")).scalar() or 0)

        def limit(connection: object, _record: object) -> None:
            connection.execute(f"PRAGMA max_page_count = {pages}")  # type: ignore[attr-defined]

        event.listen(engine, "connect", limit)
        engine.dispose()

        def undo_sqlite() -> None:
            event.remove(engine, "connect", limit)
            engine.dispose()

        return undo_sqlite
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as db:
        db.execute(text("ALTER DATABASE hawkwatch SET default_transaction_read_only = on"))
    engine.dispose()

    def undo_postgres() -> None:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as db:
            db.execute(text("SET default_transaction_read_only = off"))
            db.execute(text("ALTER DATABASE hawkwatch RESET default_transaction_read_only"))
        engine.dispose()

    return undo_postgres


def test_a_postgres_restart_answers_503_then_recovers(postgres: Postgres) -> None:
    engine = make_engine(postgres.url)
    with engine.begin() as db:
        db.execute(text("DROP SCHEMA public CASCADE; CREATE SCHEMA public"))
    migrate(engine)
    key = admin.add_project(engine, "shop")
    server = Collector(postgres.url, free_port(), worker=True)
    server.start()
    try:
        for number in range(5):
            assert post(server.base, key, body(f"before{number}"), HEADERS)[0] == 202
        postgres.stop("immediate")
        try:
            status, headers, answer = raw_post(server.base, key, body("while-down"))
            assert status == 503 and headers["retry-after"] == "5"
            assert answer["error"].startswith("database unavailable:")
            client = threading.Thread(target=lambda: [
                post(server.base, key, body(f"after{number}"), HEADERS, retries=12)
                for number in range(5)
            ])  # fmt: skip
            client.start()
            time.sleep(1.0)  # the client meets the outage and retries
        finally:
            postgres.start()
        client.join(120)
        engine.dispose()
        deadline = time.monotonic() + 90  # the server's worker resumes by itself
        while time.monotonic() < deadline:
            with engine.connect() as db:
                states = list(db.execute(select(jobs.c.state)).scalars())
            if len(states) == 10 and set(states) == {"done"}:
                break
            time.sleep(0.2)
        with engine.connect() as db:
            names = sorted(db.execute(select(sessions.c.name)).scalars())
        assert names == sorted([f"before{n}" for n in range(5)] + [f"after{n}" for n in range(5)])
        assert sorted(stored_ids(engine)) == sorted(f"{name}:1" for name in names)
        assert server.process is not None and server.process.poll() is None
    finally:
        server.stop()
        engine.dispose()
