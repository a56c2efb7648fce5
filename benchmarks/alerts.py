"""Alerts' cost to the worker and how fast notifications leave.

Run: python benchmarks/alerts.py [--database sqlite|postgresql|both] [--envelopes 300]
         [--deliveries 300]

Worker overhead: the same envelopes (sessions ending by SIGSEGV: one issue, one occurrence
each) are drained by one in-process worker into two fresh databases of the same kind, one
project without rules and one with a new-issue and a regression rule (webhook and email
each), in alternating rounds; printed: ms per occurrence for both and the ratio (the added
work: loading the rules, the regression check, folding each repeat into its window).
Delivery: ``--deliveries`` queued webhook notifications sent by one sender to a loopback
receiver (``http.server``), then the same number of emails to a loopback ``aiosmtpd``:
notifications per second (one connection per notification, a claim and an outcome commit
each).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _databases import each_database
from sqlalchemy import Engine, event, insert
from tests.server.alert_receivers import (
    project_with_key,
    serve_smtp,
    serve_webhook,
    upload_session,
)

from hawkwatch.server.alerts import AlertSettings, rules
from hawkwatch.server.alerts.deliver import deliver_due
from hawkwatch.server.database import make_engine, migrate
from hawkwatch.server.pipeline import drain
from hawkwatch.server.schema import alert_deliveries

T0 = 1_900_000_000.0


def fresh(url: str) -> Engine:
    engine = make_engine(url)
    if engine.dialect.name == "postgresql":
        from sqlalchemy import text

        with engine.begin() as db:
            db.execute(text("DROP SCHEMA public CASCADE; CREATE SCHEMA public"))
    migrate(engine)
    return engine


def drain_ms(url: str, envelopes: int, with_rules: bool) -> tuple[float, float]:
    """Milliseconds and SQL statements per occurrence."""
    engine = fresh(url)
    project = project_with_key(engine)
    if with_rules:
        for rule in ("new-issue", "regression"):
            rules.add_rule(engine, rules.NewRule(project="shop", rule=rule,
                                                 webhook_url="http://127.0.0.1:9/hook",
                                                 email_to=("a@example.test",)))  # fmt: skip
    for number in range(envelopes):
        upload_session(engine, project, f"s{number}", release="1.0", start=T0 + number,
                       crashed=True)  # fmt: skip
    statements = [0]

    def count(*_: object) -> None:
        statements[0] += 1

    event.listen(engine, "before_cursor_execute", count)
    started = time.perf_counter()
    assert drain(engine, deadline_s=3600, clock=lambda: T0) == envelopes
    took = time.perf_counter() - started
    engine.dispose()
    return took * 1000 / envelopes, statements[0] / envelopes


def queue(engine: Engine, count: int, channel: str, target: str) -> None:
    event = {"type": "threshold", "project": "shop", "rule_id": None, "time": T0,
             "metric": "crash-free", "value_pct": 50.0, "limit_pct": 90.0, "sessions": 10,
             "window_s": 3600.0}  # fmt: skip
    with engine.begin() as db:
        db.execute(insert(alert_deliveries), [
            {"key": f"{channel}-{n}", "rule_id": None, "channel": channel, "target": target,
             "event": event, "state": "queued", "attempts": 0, "next_attempt": T0,
             "created": T0} for n in range(count)
        ])  # fmt: skip


def per_second(engine: Engine, settings: AlertSettings, count: int) -> float:
    started = time.perf_counter()
    assert deliver_due(engine, settings, T0, limit=count) == count
    return count / (time.perf_counter() - started)


def measure(url: str, label: str, args: argparse.Namespace, folder: Path) -> None:
    runs: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    drain_ms(url if url.startswith("postgresql") else f"sqlite:///{folder / 'w.db'}", 20, True)
    for round_ in range(args.rounds):
        for with_rules in (False, True) if round_ % 2 else (True, False):  # alternate who's first
            name = f"sqlite:///{folder / f'{round_}-{with_rules}.db'}"
            runs[with_rules].append(drain_ms(
                url if url.startswith("postgresql") else name, args.envelopes, with_rules
            ))  # fmt: skip
    plain = statistics.median(ms for ms, _ in runs[False])
    alerting = statistics.median(ms for ms, _ in runs[True])
    print(f"{label}: worker, {args.envelopes} occurrences of one issue, median of {args.rounds}")
    print(f"  without rules {plain:.2f} ms and {runs[False][0][1]:.0f} SQL statements per "
          f"occurrence; with 2 rules {alerting:.2f} ms and {runs[True][0][1]:.0f}: "
          f"x{alerting / plain:.2f}")  # fmt: skip

    engine = fresh(url if url.startswith("postgresql") else f"sqlite:///{folder / 'd.db'}")
    hooks: Iterator[object] = serve_webhook()
    hook = next(hooks)
    mails = serve_smtp()
    _mailbox, smtp_port = next(mails)
    settings = AlertSettings(smtp_host="127.0.0.1", smtp_port=smtp_port)
    try:
        queue(engine, args.deliveries, "webhook", hook.url)  # type: ignore[attr-defined]
        webhooks = per_second(engine, settings, args.deliveries)
        queue(engine, args.deliveries, "email", "a@example.test")
        emails = per_second(engine, settings, args.deliveries)
    finally:
        for generator in (hooks, mails):
            for _ in generator:  # type: ignore[attr-defined]
                pass
        engine.dispose()
    print(f"  one sender: {webhooks:,.0f} webhooks/s, {emails:,.0f} emails/s (loopback)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--envelopes", type=int, default=300)
    parser.add_argument("--deliveries", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    each_database(args.database, "hawkwatch-alerts-",
                  lambda url, label, folder: measure(url, label, args, folder))  # fmt: skip


if __name__ == "__main__":
    main()
