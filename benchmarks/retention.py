"""Retention: how long pruning a month of occurrences takes by partition drop (PostgreSQL) and by
batched deletes, and how much ingest slows while it runs.

Run: python benchmarks/retention.py [--database sqlite|postgresql|both] [--occurrences 1000000]
         [--per-session 10] [--seconds 8] [--clients 4]

A month five months back is seeded with ``--occurrences`` occurrences in sessions of
``--per-session`` each (plus their issues); ``--per-session 0``: occurrences of no session (as
iOS crash reports make), so only occurrences are pruned. Then, with a real ``hawkwatch server run
--no-worker`` collector on loopback and ``--clients`` uploading envelopes of 200 records:
1. ingest alone for ``--seconds`` (the baseline rate);
2. ``hawkwatch server prune`` in its own process (PostgreSQL: the month's partition is rolled
   up and dropped) while the clients upload — its duration, and the ingest rate meanwhile;
3. the month seeded again and pruned by batched deletes (``Retention(drop_partitions=False)``;
   on SQLite the only way) while the clients upload.
Printed: each prune's time and rows/s, the drop-vs-delete ratio, and each ingest rate during
pruning as a percentage of the baseline, all measured in this run.

``--upgrade``: instead, how long migration 0002 takes on a 0001 database holding
``--occurrences`` occurrences (one envelope per session), the operator's upgrade window.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _databases import each_database
from ingest import HAWKWATCH, envelope_body, free_port

from hawkwatch.server import admin, partitions, queries
from hawkwatch.server.database import make_engine, migrate
from hawkwatch.uploader import ENVELOPE_TYPE, post

RECORDS = 200
PRUNE = """
import json, sys, time
from hawkwatch.server.database import make_engine
from hawkwatch.server.retention import Retention, prune
started = time.perf_counter()
done = prune(make_engine(sys.argv[1]), Retention(None, 30, drop_partitions=sys.argv[2] == "drop"))
print(json.dumps({**done.as_dict(), "seconds": time.perf_counter() - started}))
"""


def seed(engine: object, project: int, occurrences: int, per_session: int) -> float:
    """A month of sessions and occurrences five months back, in SQL (generate_series or a
    recursive CTE); returns the upload time given to them."""
    from sqlalchemy import Engine, text

    assert isinstance(engine, Engine)
    received = partitions.month_start(time.time(), -5) + 86400 * 3
    count = occurrences // per_session if per_session else 0
    numbers = ("generate_series(0, :n - 1) AS g(i)" if engine.dialect.name == "postgresql"
               else "(WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c "
                    "WHERE i < :n - 1) SELECT i FROM c) AS g")  # fmt: skip
    with engine.begin() as db:
        issue = db.execute(text(
            "INSERT INTO issues (project_id, kind, fingerprint, title, first_seen, last_seen, "
            "example) VALUES (:p, 'stall', :f, 'seeded', :r, :r, '{}') RETURNING id"
        ), {"p": project, "f": f"seed-{time.time_ns()}", "r": received}).scalar_one()
        if not per_session:
            db.execute(text(
                "INSERT INTO occurrences (issue_id, session_id, envelope_id, received, time, "
                f"release, detail) SELECT :issue, NULL, 0, :r, :r - g.i, NULL, '{{}}' "
                f"FROM {numbers}"
            ), {"issue": issue, "r": received, "n": occurrences})  # fmt: skip
            return received
        tag = f"seed-{time.time_ns()}-"
        db.execute(text(
            "INSERT INTO sessions (project_id, name, sequence, app_version, start_time, "
            f"exit_kind, report, received) SELECT :p, :tag || i, 1, '1.0', :r, "
            f"'clean', '{{}}', :r FROM {numbers}"
        ), {"p": project, "n": count, "r": received, "tag": tag})
        db.execute(text(
            "INSERT INTO occurrences (issue_id, session_id, envelope_id, received, time, "
            f"release, detail) SELECT :issue, s.id, 0, :r, :r - g.i, '1.0', '{{}}' "
            f"FROM sessions s CROSS JOIN {numbers} WHERE s.name LIKE :like"
        ), {"issue": issue, "r": received, "n": per_session, "like": tag + "%"})  # fmt: skip
    return received


class Clients:
    """Threads uploading envelopes to the collector until stopped; counts acknowledged ones."""

    def __init__(self, base: str, key: str, clients: int) -> None:
        self.base, self.key = base, key
        self.acked = 0
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.client, args=(i,)) for i in range(clients)]

    def client(self, index: int) -> None:
        headers = {"Content-Encoding": "gzip", "Content-Type": ENVELOPE_TYPE}
        number = 0
        while not self.stop.is_set():
            number += 1
            body = envelope_body(index * 100_000 + number, RECORDS)
            post(self.base, self.key, body, headers, retries=5)
            with self.lock:
                self.acked += 1

    def rate_during(self, action: object) -> tuple[float, object]:
        """Records/s acknowledged while ``action()`` runs."""
        before, started = self.acked, time.perf_counter()
        outcome = action()  # type: ignore[operator]
        return (self.acked - before) * RECORDS / (time.perf_counter() - started), outcome


def measure(url: str, label: str, args: argparse.Namespace) -> None:
    engine = make_engine(url)
    migrate(engine)
    name = f"bench-{time.time_ns()}"
    key = admin.add_project(engine, name)
    project = queries.project_id(engine, name)
    assert project is not None
    started = time.perf_counter()
    received = seed(engine, project, args.occurrences, args.per_session)
    partitions.ensure_ahead(engine, received, 0)
    took = time.perf_counter() - started
    sessions = f"{args.occurrences // args.per_session:,}" if args.per_session else "no"
    print(f"{label}: seeded {args.occurrences:,} occurrences in {sessions} sessions "
          f"({took:.0f} s)")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}
    command = [str(HAWKWATCH), "server", "run", "--no-worker", "--database", url,
               "--port", str(port)]  # fmt: skip
    server = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    clients = Clients(f"http://127.0.0.1:{port}", key, args.clients)
    for thread in clients.threads:
        thread.start()

    def prune(mode: str) -> dict[str, float]:
        done = subprocess.run([sys.executable, "-c", PRUNE, url, mode], env=env, check=True,
                              capture_output=True, text=True)  # fmt: skip
        return dict(json.loads(done.stdout))

    try:
        time.sleep(1.0)  # warm up
        baseline, _ = clients.rate_during(lambda: time.sleep(args.seconds))
        print(f"  ingest alone: {baseline:,.0f} records/s")
        results = {}
        modes = ["drop", "delete"] if engine.dialect.name == "postgresql" else ["delete"]
        for number, mode in enumerate(modes):
            if number:
                seed(engine, project, args.occurrences, args.per_session)
                partitions.ensure_ahead(engine, received, 0)
            rate, outcome = clients.rate_during(lambda mode=mode: prune(mode))
            assert isinstance(outcome, dict)
            results[mode] = outcome["seconds"]
            what = "partition drop" if mode == "drop" else "batched delete"
            print(f"  prune by {what}: {outcome['occurrences']:,.0f} occurrences, "
                  f"{outcome['sessions']:,.0f} sessions in {outcome['seconds']:.2f} s "
                  f"({outcome['occurrences'] / outcome['seconds']:,.0f} occurrences/s); "
                  f"ingest meanwhile {rate:,.0f} records/s = {rate / baseline:.0%} of alone")
        if len(results) == 2:
            print(f"  partition drop is {results['delete'] / results['drop']:.1f}x faster than "
                  "batched delete" + (" (sessions deleted in batches by both)"
                                      if args.per_session else ""))  # fmt: skip
    finally:
        clients.stop.set()
        for thread in clients.threads:
            thread.join(60)
        server.send_signal(signal.SIGINT)
        server.wait(30)
        engine.dispose()


def measure_upgrade(url: str, label: str, args: argparse.Namespace) -> None:
    from sqlalchemy import text

    engine = make_engine(url)
    migrate(engine, "0001")
    per = max(args.per_session, 1)
    count = args.occurrences // per
    numbers = ("generate_series(0, :n - 1) AS g(i)" if engine.dialect.name == "postgresql"
               else "(WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c "
                    "WHERE i < :n - 1) SELECT i FROM c) AS g")  # fmt: skip
    received = time.time() - 86400 * 40
    with engine.begin() as db:
        db.execute(text("INSERT INTO projects (id, name, ingest_key_hash, created) "
                        "VALUES (1, 'p', 'k', 0)"))  # fmt: skip
        db.execute(text("INSERT INTO issues (id, project_id, kind, fingerprint, title, "
                        "first_seen, last_seen, example) VALUES (1, 1, 'stall', 'f', 't', 0, 0, "
                        "'{}')"))  # fmt: skip
        db.execute(text(f"INSERT INTO envelopes (id, project_id, envelope_id, kind, name, body, "
                        f"received) SELECT i + 1, 1, 'e' || i, 'session', 's' || i, :b, :r "
                        f"FROM {numbers}"), {"n": count, "b": b"{}", "r": received})  # fmt: skip
        db.execute(text(f"INSERT INTO sessions (id, project_id, name, sequence, report) "
                        f"SELECT i + 1, 1, 's' || i, 1, '{{}}' FROM {numbers}"), {"n": count})
        db.execute(text(
            "INSERT INTO occurrences (issue_id, session_id, envelope_id, time, release, detail) "
            f"SELECT 1, s.id, s.id, :r, '1', '{{}}' FROM sessions s CROSS JOIN {numbers}"
        ), {"n": per, "r": received})  # fmt: skip
    started = time.perf_counter()
    migrate(engine)
    took = time.perf_counter() - started
    print(f"{label}: migration 0002 over {count * per:,} occurrences in {count:,} sessions: "
          f"{took:.1f} s ({count * per / took:,.0f} occurrences/s)")
    engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--occurrences", type=int, default=1_000_000)
    parser.add_argument("--per-session", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--upgrade", action="store_true", help="time migration 0002 instead")
    args = parser.parse_args()
    run = measure_upgrade if args.upgrade else measure
    each_database(
        args.database, "hawkwatch-retention-", lambda url, label, _: run(url, label, args)
    )


if __name__ == "__main__":
    main()
