"""Dashboard page latency with 100,000 sessions and 1,000 issues: p50/p95 per page type against
the 200 ms goal, on PostgreSQL and on SQLite for comparison.

Run: python benchmarks/dashboard_pages.py [--database sqlite|postgresql|both]
         [--sessions 100000] [--issues 1000] [--occurrences 250000] [--requests 60]

Seeding: the schema comes from the migrations (indexes included); rows are bulk-inserted (COPY on
PostgreSQL), the rollups the pipeline keeps are filled from them, then ``ANALYZE`` runs as
autovacuum would. The rows are shaped like the pipeline's: sessions spread over 30 days and 8
releases (exit kinds: mostly clean, ~3 % crashed; log-normal launch times), issues of every kind
whose occurrences follow a Zipf law (a few hot issues, a long tail), iOS crashes without a
session. Every session carries a report; 200 of them carry a real one (a session of a real
program run under ``hawkwatch run --profile``, through the pipeline's report builder, rendered
with its flame graph by the session view) and the session page is measured on those; crash
issues' latest occurrence carries a real symbolicated crash document (of a real ``.ips``).

Measuring: a real ``hawkwatch server run --no-worker`` process (uvicorn) on loopback; this
process logs in through the login form and requests each page type in turn (round-robin, after
a warm-up), timing each whole HTTP request. Printed per page: p50, p95 and whether p95 meets 200 ms.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import httpx
from _databases import each_database
from sqlalchemy import Engine, insert, text

from hawkwatch.server import admin, rollups
from hawkwatch.server.database import make_engine, migrate
from hawkwatch.server.schema import envelopes, issues, occurrences, sessions

HAWKWATCH = Path(sys.executable).with_name("hawkwatch")
ROOT = Path(__file__).resolve().parents[1]
RELEASES = [f"3.{minor}.0" for minor in range(8)]
KINDS = [("stall", 0.40), ("network", 0.20), ("crash", 0.25), ("fatal-signal", 0.10),
         ("hang-kill", 0.05)]  # fmt: skip
EXITS = [("clean", 0.955), ("exit-code", 0.015), ("fatal-signal", 0.012), ("exception", 0.012),
         ("hang-killed", 0.004), ("oom-killed", 0.002)]  # fmt: skip
GOAL_MS = 200.0
DAY = 86400.0
STALL_APP = """
import asyncio, json, time

def block_the_loop():
    time.sleep(0.3)

async def handler():
    for _ in range(3):
        json.dumps([{"a": i} for i in range(20000)])
        await asyncio.sleep(0.05)
    block_the_loop()

asyncio.run(handler())
"""


def real_session_report(folder: Path) -> dict[str, Any]:
    """A real program's session, as the pipeline turns it into the stored report."""
    from hawkwatch.server.pipeline import _session_result
    from hawkwatch.store import Session, list_sessions

    env = {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}
    env["HAWKWATCH_HOME"] = str(folder)
    script = folder / "app.py"
    script.write_text(STALL_APP)
    profiled = ["--profile", "-c", "profiler.rate_hz=100", "-c", "profiler.engine=in-process"]
    subprocess.run([str(HAWKWATCH), "run", *profiled, "--", sys.executable, str(script)], env=env,
                   cwd=folder, capture_output=True, timeout=120, check=True)  # fmt: skip
    (found,) = list_sessions(folder / "sessions")
    session = Session.open(found.path)
    result, _ = _session_result("bench", 0, session.records().records, session.metadata,
                                "hawkwatch")  # fmt: skip
    return result.report


def real_crash_document() -> dict[str, Any]:
    from hawkwatch.formats.crash import parse_crash
    from hawkwatch.report.crash_json import crash_to_json

    path = ROOT / "tests" / "fixtures" / "crash" / "ips" / "AppleDemo.ips"
    report = parse_crash(path.read_bytes(), source=path.name).value
    return {"artifact": path.name, **crash_to_json(report)}


def pick(rng: random.Random, weighted: list[tuple[str, float]]) -> str:
    return rng.choices([k for k, _ in weighted], [w for _, w in weighted])[0]


def generate(args: argparse.Namespace, report: dict[str, Any], crash: dict[str, Any],
             now: float) -> dict[str, list[dict[str, Any]]]:  # fmt: skip
    """Rows for one project (id 1): envelopes, sessions, issues, occurrences."""
    rng = random.Random(21)
    small_report = {"format": "hawkwatch-report", "format_version": 1,
                    "session": {**report["session"], "record_count": 0}}  # fmt: skip
    session_rows, envelope_rows = [], []
    for n in range(1, args.sessions + 1):
        start = now - rng.random() * 30 * DAY
        release = RELEASES[min(7, int((1 - (now - start) / (30 * DAY)) * 8))]
        exit_kind = pick(rng, EXITS)
        envelope_rows.append({"id": n, "project_id": 1, "envelope_id": f"s{n}:1",
                              "kind": "session", "name": f"s{n}", "body": b"",
                              "received": start + 60})  # fmt: skip
        session_rows.append({
            "id": n, "project_id": 1, "name": f"s{n}", "sequence": 1, "app_version": release,
            "start_time": start, "exit_kind": exit_kind,
            "launch_s": rng.lognormvariate(-0.4, 0.5) if rng.random() < 0.9 else None,
            "report": report if n <= 200 else small_report, "received": start + 60,
        })  # fmt: skip
    issue_rows = []
    for n in range(1, args.issues + 1):
        kind = pick(rng, KINDS)
        where = f"handler_{n} (app/module_{n % 37}.py:{10 + n % 400})"
        title = {"stall": f"asyncio loop stalled in {where}",
                 "network": f"slow requests to api{n}.example.com",
                 "crash": f"EXC_BAD_ACCESS (SIGSEGV) in App: -[View{n} draw]",
                 "fatal-signal": f"ended by SIG{('SEGV', 'ABRT', 'BUS')[n % 3]}",
                 "hang-kill": f"killed while stalled in {where}"}[kind]  # fmt: skip
        issue_rows.append({
            "id": n, "project_id": 1, "kind": kind, "fingerprint": f"{n:016x}", "title": title,
            "culprit": where, "first_seen": now, "last_seen": 0.0,
            "example": crash if kind == "crash" else {"count": 1, "max_ms": 250.0},
        })  # fmt: skip
    weights = [1 / rank**1.1 for rank in range(1, args.issues + 1)]
    chosen = rng.choices(range(args.issues), weights, k=args.occurrences)
    occurrence_rows, latest = [], {}
    for n, index in enumerate(chosen, 1):
        issue = issue_rows[index]
        session = session_rows[rng.randrange(args.sessions)]
        moment = session["start_time"] + rng.random() * 600
        sessionless = issue["kind"] == "crash"
        occurrence_rows.append({
            "id": n, "issue_id": issue["id"],
            "session_id": None if sessionless else session["id"],
            "envelope_id": session["id"], "received": session["received"], "time": moment,
            "release": session["app_version"],
            "detail": {"artifact": f"crash-{n}.ips"} if sessionless else
                      {"count": 1, "max_ms": 120.0 + n % 900, "source_line": "time.sleep(0.3)"},
        })  # fmt: skip
        issue["first_seen"] = min(issue["first_seen"], moment)
        issue["last_seen"] = max(issue["last_seen"], moment)
        if sessionless and moment >= latest.get(index, (0.0, 0))[0]:
            latest[index] = (moment, n - 1)
    for _, row in latest.values():
        occurrence_rows[row]["detail"] = crash
    for issue in issue_rows:
        if issue["last_seen"] == 0.0:
            issue["first_seen"] = issue["last_seen"] = now - DAY
    return {"envelopes": envelope_rows, "sessions": session_rows, "issues": issue_rows,
            "occurrences": occurrence_rows}  # fmt: skip


def _copy(engine: Engine, table: str, rows: list[dict[str, Any]]) -> None:
    """PostgreSQL's COPY: the way bulk data goes in."""
    columns = list(rows[0])
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:  # type: ignore[attr-defined]
            for row in rows:
                copy.write_row([json.dumps(v) if isinstance(v, dict) else v
                                for v in (row[c] for c in columns)])  # fmt: skip
        raw.commit()
    finally:
        raw.close()


def load(engine: Engine, rows: dict[str, list[dict[str, Any]]]) -> None:
    admin.add_project(engine, "bench")
    admin.add_user(engine, "bench@example.test", "bench password")
    tables = {"envelopes": envelopes, "sessions": sessions, "issues": issues,
              "occurrences": occurrences}  # fmt: skip
    for name, table in tables.items():
        if engine.dialect.name == "postgresql":
            _copy(engine, name, rows[name])
        else:
            with engine.begin() as db:
                for start in range(0, len(rows[name]), 20000):
                    db.execute(insert(table), rows[name][start : start + 20000])
    with engine.begin() as db:  # what the pipeline keeps in step, from the rows loaded
        db.execute(text(rollups.backfill_statement(engine.dialect.name)))
        db.execute(text(rollups.STALLED_BACKFILL))
    if engine.dialect.name == "postgresql":
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as db:
            db.execute(text("VACUUM ANALYZE"))
            for name in tables:  # ids were given explicitly: move the sequences past them
                db.execute(text(f"SELECT setval(pg_get_serial_sequence('{name}', 'id'), "
                                f"(SELECT max(id) FROM {name}))"))  # fmt: skip
    else:
        with engine.begin() as db:
            db.execute(text("ANALYZE"))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def logged_in_client(base: str) -> httpx.Client:
    client = httpx.Client(base_url=base, timeout=60)
    form = client.get("/login")
    token = re.search(r'name="csrf_token" value="([^"]+)"', form.text)
    assert token is not None
    done = client.post("/login", data={"csrf_token": token.group(1), "email": "bench@example.test",
                                       "password": "bench password"})  # fmt: skip
    assert done.status_code == 303, done.text
    return client


def pages(rng: random.Random, args: argparse.Namespace) -> dict[str, Callable[[], str]]:
    hot = list(range(1, 21))
    return {
        "projects": lambda: "/",
        "issues list": lambda: "/p/bench/issues",
        "issues, release filter": lambda: f"/p/bench/issues?release={rng.choice(RELEASES)}",
        "issues, kind + 7 days": lambda: f"/p/bench/issues?kind={rng.choice(KINDS)[0]}&range=7d",
        "issues, by last seen, page 5": lambda: "/p/bench/issues?sort=last_seen&page=5",
        "issue detail (hot)": lambda: f"/p/bench/issues/{rng.choice(hot)}",
        "issue detail (any)": lambda: f"/p/bench/issues/{rng.randint(1, args.issues)}",
        "session detail": lambda: f"/p/bench/sessions/{rng.randint(1, 200)}",
        "releases": lambda: "/p/bench/releases",
    }


def measure(url: str, label: str, args: argparse.Namespace,
            rows: dict[str, list[dict[str, Any]]]) -> dict[str, float]:  # fmt: skip
    engine = make_engine(url)
    migrate(engine)
    started = time.perf_counter()
    load(engine, rows)
    took = time.perf_counter() - started
    print(f"{label}: seeded {len(rows['sessions']):,} sessions, {len(rows['issues']):,} issues, "
          f"{len(rows['occurrences']):,} occurrences in {took:.0f} s")  # fmt: skip
    engine.dispose()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}
    command = [str(HAWKWATCH), "server", "run", "--no-worker", "--database", url,
               "--port", str(port)]  # fmt: skip
    server = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
    p95s: dict[str, float] = {}
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        rng = random.Random(5)
        kinds = pages(rng, args)
        timings: dict[str, list[float]] = {name: [] for name in kinds}
        client = logged_in_client(base)
        try:
            for round_ in range(args.requests + 5):
                for name, path in kinds.items():
                    began = time.perf_counter()
                    answer = client.get(path())
                    took = (time.perf_counter() - began) * 1000
                    assert answer.status_code == 200, (name, answer.status_code)
                    if round_ >= 5:  # warm-up
                        timings[name].append(took)
        finally:
            client.close()
        print(f"  {'page':<30} {'p50 ms':>8} {'p95 ms':>8}   goal: p95 < {GOAL_MS:.0f} ms")
        for name, values in timings.items():
            values.sort()
            p95 = values[max(0, round(0.95 * len(values)) - 1)]
            p95s[name] = p95
            verdict = "ok" if p95 < GOAL_MS else "OVER"
            print(f"  {name:<30} {statistics.median(values):8.1f} {p95:8.1f}   {verdict}")
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(30)
    return p95s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--sessions", type=int, default=100_000)
    parser.add_argument("--issues", type=int, default=1_000)
    parser.add_argument("--occurrences", type=int, default=250_000)
    parser.add_argument("--requests", type=int, default=60)
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    scratch = Path(tempfile.mkdtemp(prefix="hawkwatch-dashboard-"))
    try:
        rows = generate(args, real_session_report(scratch), real_crash_document(), time.time())
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    results = each_database(
        args.database, "hawkwatch-dashboard-", lambda url, label, _: measure(url, label, args, rows)
    )
    summarize(results.items())


def summarize(results: Iterable[tuple[str, dict[str, float]]]) -> None:
    out = io.StringIO()
    for label, p95s in results:
        worst = max(p95s, key=lambda name: p95s[name])
        met = sum(1 for v in p95s.values() if v < GOAL_MS)
        out.write(f"{label}: {met}/{len(p95s)} page types under {GOAL_MS:.0f} ms at p95 "
                  f"(slowest: {worst}, {p95s[worst]:.1f} ms); ")  # fmt: skip
    print(out.getvalue().rstrip("; "))


if __name__ == "__main__":
    main()
