"""Alert rules on both databases: regressions by release order, thresholds with a minimum of
sessions, retries with backoff, a receiver down for good, a worker killed between queueing and
sending. Every interval is crossed by moving an injected clock, never by waiting."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import Engine, insert, select

from hawkwatch.server.alerts import AlertSettings, rules
from hawkwatch.server.alerts.deliver import deliver_due
from hawkwatch.server.alerts.releases import compare_releases
from hawkwatch.server.alerts.trigger import evaluate_thresholds
from hawkwatch.server.pipeline import drain
from hawkwatch.server.schema import alert_deliveries, envelopes, issues, occurrences, sessions
from tests.server.alert_receivers import (
    Mailbox,
    Webhook,
    deliveries,
    free_port,
    project_with_key,
    upload_session,
)

T0 = 1_900_000_000.0
SETTINGS = AlertSettings(public_url="http://dash.test", backoff_s=30.0, max_attempts=4)


def now_is(when: float) -> object:
    return lambda: when


def issue_row(engine: Engine) -> object:
    with engine.connect() as db:
        return db.execute(select(issues)).one()


@pytest.mark.parametrize(("older", "newer"), [
    ("1.9", "1.10"), ("1.0rc1", "1.0"), ("1.0", "1.0.1"), ("2.0.0-beta.2", "2.0.0"),
    ("v1.2.3-beta", "v1.2.3"), ("1.2 (45)", "1.2 (46)"), ("0.9", "1.0"), ("1.0.0-alpha",
    "1.0.0-alpha.1"), ("1.0.0-alpha.2", "1.0.0-alpha.10"), ("2024.1-ios", "2024.2-ios"),
])  # fmt: skip
def test_release_order(older: str, newer: str) -> None:
    assert compare_releases(older, newer) == -1
    assert compare_releases(newer, older) == 1
    assert compare_releases(newer, newer) == 0


def test_a_resolved_issue_seen_in_a_later_release_regresses_once(
    engine: Engine, webhook: Webhook
) -> None:
    project = project_with_key(engine)
    rules.add_rule(engine, rules.NewRule(project="shop", rule="regression",
                                         webhook_url=webhook.url))  # fmt: skip
    upload_session(engine, project, "a", release="1.0", start=T0, crashed=True)
    assert drain(engine, clock=now_is(T0)) == 1
    issue_id = issue_row(engine).id  # type: ignore[attr-defined]
    assert rules.resolve_issue(engine, issue_id, "1.0") == {
        "id": issue_id, "status": "resolved", "resolved_in_release": "1.0"}  # fmt: skip

    upload_session(engine, project, "b", release="0.9", start=T0 + 10, crashed=True)
    upload_session(engine, project, "c", release="1.0", start=T0 + 20, crashed=True)
    upload_session(engine, project, "d", release=None, start=T0 + 25, crashed=True)
    assert drain(engine, clock=now_is(T0 + 30)) == 3
    assert deliver_due(engine, SETTINGS, T0 + 30) == 0 and webhook.received == []
    assert issue_row(engine).status == "resolved"  # type: ignore[attr-defined]

    upload_session(engine, project, "e", release="1.1", start=T0 + 40, crashed=True)
    assert drain(engine, clock=now_is(T0 + 40)) == 1
    assert deliver_due(engine, SETTINGS, T0 + 40) == 1
    (call,) = webhook.received
    body = json.loads(call.body)
    assert body["type"] == "regression" and body["release"] == "1.1"
    assert body["resolved_in_release"] == "1.0" and body["issue"]["id"] == issue_id
    assert body["url"] == f"http://dash.test/p/shop/issues/{issue_id}"
    reopened = issue_row(engine)
    assert reopened.status == "open" and reopened.resolved_in_release is None  # type: ignore[attr-defined]

    upload_session(engine, project, "f", release="1.2", start=T0 + 50, crashed=True)
    assert drain(engine, clock=now_is(T0 + 50)) == 1  # open already: no second regression
    assert deliver_due(engine, SETTINGS, T0 + 50) == 0 and len(webhook.received) == 1


def test_a_crash_free_rate_under_the_threshold_fires_once_per_interval(
    engine: Engine, webhook: Webhook
) -> None:
    shop = project_with_key(engine, "shop")
    calm = project_with_key(engine, "calm")
    for name in ("shop", "calm"):
        rules.add_rule(engine, rules.NewRule(
            project=name, rule="threshold", metric="crash-free", limit_pct=90.0, min_sessions=6,
            window_s=3600.0, interval_s=1800.0, webhook_url=webhook.url,
        ))  # fmt: skip
    for number in range(5):  # 2 crashes in 5 sessions: 60 %, but under the minimum of 6
        upload_session(engine, shop, f"s{number}", release="1.0", start=T0 - 100 + number,
                       crashed=number < 2)  # fmt: skip
    for number in range(8):
        upload_session(engine, calm, f"c{number}", release="1.0", start=T0 - 100, crashed=False)
    drain(engine, clock=now_is(T0))
    assert evaluate_thresholds(engine, T0) == 0

    upload_session(engine, shop, "s5", release="1.0", start=T0 - 50, crashed=True)
    drain(engine, clock=now_is(T0))
    assert evaluate_thresholds(engine, T0) == 1  # 3 of 6 crashed: 50 % < 90 %
    assert evaluate_thresholds(engine, T0 + 60) == 0
    assert evaluate_thresholds(engine, T0 + 1799) == 0
    assert evaluate_thresholds(engine, T0 + 1800) == 1  # the next interval, still breached
    assert evaluate_thresholds(engine, T0 + 3700) == 0  # the sessions left the hour
    assert deliver_due(engine, SETTINGS, T0 + 3700) == 2
    first = json.loads(webhook.received[0].body)
    assert first["type"] == "threshold" and first["project"] == "shop"
    assert first["value_pct"] == pytest.approx(50.0) and first["sessions"] == 6
    assert first["url"] == "http://dash.test/p/shop"


def test_a_stall_rate_over_the_threshold_fires(engine: Engine, webhook: Webhook) -> None:
    from hawkwatch.server.alerts.trigger import session_rates

    project = project_with_key(engine)
    rules.add_rule(engine, rules.NewRule(project="shop", rule="threshold", metric="stall",
                                         limit_pct=10.0, min_sessions=1,
                                         webhook_url=webhook.url))  # fmt: skip
    upload_session(engine, project, "a", release="1.0", start=T0 - 10, crashed=False)
    drain(engine, clock=now_is(T0))
    with engine.connect() as db:
        assert session_rates(db, project, T0 - 3600, T0) == (1, 0, 0)
    assert evaluate_thresholds(engine, T0) == 0  # no stalled session: 0 % is not above 10 %
    with engine.begin() as db:  # a stall seen in that session (as the pipeline records one)
        session_id = db.execute(select(sessions.c.id).where(sessions.c.name == "a")).scalar()
        envelope_id = db.execute(select(envelopes.c.id).where(envelopes.c.name == "a")).scalar()
        stall = db.execute(insert(issues).values(
            project_id=project, kind="stall", fingerprint="f", title="loop stalled in f",
            first_seen=T0, last_seen=T0, example={},
        ).returning(issues.c.id)).scalar_one()  # fmt: skip
        db.execute(insert(occurrences).values(issue_id=stall, session_id=session_id,
                   envelope_id=envelope_id, received=T0, time=T0, release="1.0",
                   detail={}))  # fmt: skip
        assert session_rates(db, project, T0 - 3600, T0) == (1, 0, 1)
    assert evaluate_thresholds(engine, T0) == 1
    deliver_due(engine, SETTINGS, T0)
    body = json.loads(webhook.received[0].body)
    assert (body["metric"], body["value_pct"]) == ("stall", 100.0)
    assert "stall rate 100.0 % is above 10 %" in body["text"]


def test_a_receiver_failing_twice_gets_it_once_on_the_third_attempt(
    engine: Engine, webhook: Webhook
) -> None:
    project = project_with_key(engine)
    rules.add_rule(engine, rules.NewRule(project="shop", rule="new-issue",
                                         webhook_url=webhook.url))  # fmt: skip
    webhook.statuses.extend([500, 503])
    upload_session(engine, project, "a", release="1.0", start=T0, crashed=True)
    drain(engine, clock=now_is(T0))
    assert deliver_due(engine, SETTINGS, T0) == 1
    (row,) = deliveries(engine)
    assert (row.state, row.attempts) == ("queued", 1)
    assert row.last_error == "HTTP 500 Internal Server Error"
    assert row.next_attempt == T0 + 30
    assert deliver_due(engine, SETTINGS, T0 + 29) == 0  # backing off
    assert deliver_due(engine, SETTINGS, T0 + 30) == 1
    (row,) = deliveries(engine)
    assert row.next_attempt == T0 + 30 + 60 and row.last_error.startswith("HTTP 503")
    assert deliver_due(engine, SETTINGS, T0 + 90) == 1
    (row,) = deliveries(engine)
    assert (row.state, row.attempts, row.last_error, row.sent) == ("sent", 3, None, T0 + 90)
    assert deliver_due(engine, SETTINGS, T0 + 10_000) == 0
    assert len(webhook.received) == 3
    assert len({call.headers["X-Hawkwatch-Delivery"] for call in webhook.received}) == 1


def test_a_receiver_down_for_good_is_capped_and_blocks_nothing(
    engine: Engine, webhook: Webhook
) -> None:
    project = project_with_key(engine)
    dead = f"http://127.0.0.1:{free_port()}/hook"  # nothing listens there
    for url in (dead, webhook.url):
        rules.add_rule(engine, rules.NewRule(project="shop", rule="new-issue", webhook_url=url))
    upload_session(engine, project, "a", release="1.0", start=T0, crashed=True)
    drain(engine, clock=now_is(T0))
    assert deliver_due(engine, SETTINGS, T0) == 2
    assert len(webhook.received) == 1  # delivered at once, beside the failing one
    when = T0
    for _ in range(10):
        when += 3600
        deliver_due(engine, SETTINGS, when)
    down, up = deliveries(engine)
    assert (down.state, down.attempts) == ("failed", SETTINGS.max_attempts)
    assert "refused" in down.last_error.lower()
    assert (up.state, up.attempts) == ("sent", 1) and len(webhook.received) == 1


def test_a_refusing_receiver_is_not_retried(engine: Engine, webhook: Webhook) -> None:
    project = project_with_key(engine)
    rules.add_rule(engine, rules.NewRule(project="shop", rule="new-issue",
                                         webhook_url=webhook.url))  # fmt: skip
    webhook.statuses.append(410)
    upload_session(engine, project, "a", release="1.0", start=T0, crashed=True)
    drain(engine, clock=now_is(T0))
    deliver_due(engine, SETTINGS, T0)
    deliver_due(engine, SETTINGS, T0 + 10_000)
    (row,) = deliveries(engine)
    assert (row.state, row.attempts, row.last_error) == ("failed", 1, "HTTP 410 Gone")


def test_a_worker_killed_between_queueing_and_sending_delivers_exactly_once(
    engine: Engine, webhook: Webhook
) -> None:
    project = project_with_key(engine)
    rules.add_rule(engine, rules.NewRule(project="shop", rule="new-issue",
                                         webhook_url=webhook.url))  # fmt: skip
    upload_session(engine, project, "a", release="1.0", start=T0, crashed=True)
    url = engine.url.render_as_string(hide_password=False)
    worker = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time
        from hawkwatch.server.alerts import AlertSettings
        from hawkwatch.server.alerts.deliver import claim
        from hawkwatch.server.database import make_engine
        from hawkwatch.server.pipeline import drain
        engine = make_engine({url!r})
        print(drain(engine), flush=True)  # the occurrence and its delivery, committed
        claimed = claim(engine, AlertSettings(lease_s=5.0), time.time())
        print(claimed.lease_until, flush=True)  # about to send
        time.sleep(600)
    """)], stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert worker.stdout is not None
    assert worker.stdout.readline().strip() == "1"
    lease_until = float(worker.stdout.readline())
    worker.send_signal(signal.SIGKILL)
    worker.wait(30)
    worker.stdout.close()
    (row,) = deliveries(engine)
    assert (row.state, row.attempts) == ("sending", 1) and webhook.received == []
    assert deliver_due(engine, SETTINGS, lease_until - 1) == 0  # its lease still holds
    assert deliver_due(engine, SETTINGS, lease_until + 1) == 1  # taken over
    assert deliver_due(engine, SETTINGS, lease_until + 10_000) == 0
    (row,) = deliveries(engine)
    assert (row.state, row.attempts) == ("sent", 2) and len(webhook.received) == 1
    with engine.connect() as db:
        assert db.execute(select(alert_deliveries.c.key)).scalar() == json.loads(
            webhook.received[0].body)["id"]  # fmt: skip


def test_removing_a_rule_drops_what_it_had_not_sent(engine: Engine, webhook: Webhook) -> None:
    project = project_with_key(engine)
    added = rules.add_rule(engine, rules.NewRule(project="shop", rule="new-issue",
                                                 webhook_url=webhook.url))  # fmt: skip
    upload_session(engine, project, "a", release="1.0", start=T0, crashed=True)
    drain(engine, clock=now_is(T0))
    rules.remove_rule(engine, added["id"])
    assert deliveries(engine) == [] and rules.list_rules(engine, "shop") == []
    assert deliver_due(engine, SETTINGS, T0) == 0 and webhook.received == []


def test_a_newer_snapshot_of_a_session_is_not_counted_again(
    engine: Engine, webhook: Webhook
) -> None:
    from hawkwatch.server.alerts.trigger import queue_digests

    project = project_with_key(engine)
    rules.add_rule(engine, rules.NewRule(project="shop", rule="new-issue",
                                         webhook_url=webhook.url))  # fmt: skip
    upload_session(engine, project, "a", release="1.0", start=T0, crashed=True)
    upload_session(engine, project, "a", release="1.0", start=T0, crashed=True, sequence=2)
    upload_session(engine, project, "b", release="1.0", start=T0, crashed=True)
    assert drain(engine, clock=now_is(T0)) == 3
    assert queue_digests(engine, T0 + 3600) == 1
    deliver_due(engine, SETTINGS, T0 + 3600)
    new, digest = (json.loads(call.body) for call in webhook.received)
    assert new["type"] == "new-issue" and digest["occurrences"] == 1  # b's, not a's again


def test_a_receiver_that_never_answers_times_out_and_is_retried(engine: Engine) -> None:
    import socket

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # connections are accepted by the kernel; nothing ever answers
    try:
        project = project_with_key(engine)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/hook"
        rules.add_rule(engine, rules.NewRule(project="shop", rule="new-issue", webhook_url=url))
        upload_session(engine, project, "a", release="1.0", start=T0, crashed=True)
        drain(engine, clock=now_is(T0))
        quick = AlertSettings(timeout_s=0.2, backoff_s=30.0)
        assert deliver_due(engine, quick, T0) == 1
    finally:
        silent.close()
    (row,) = deliveries(engine)
    assert (row.state, row.attempts, row.next_attempt) == ("queued", 1, T0 + 30)
    assert "timed out" in row.last_error


def test_email_over_starttls_with_a_login(
    engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ssl

    import trustme
    from aiosmtpd.controller import Controller
    from aiosmtpd.smtp import AuthResult, LoginPassword

    ca = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_context)
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))  # the client trusts this CA

    def authenticator(*args: object) -> AuthResult:
        login = args[-1]
        good = isinstance(login, LoginPassword) and [
            part if isinstance(part, bytes) else part.encode()
            for part in (login.login, login.password)
        ] == [b"hawk", b"s3cret"]
        return AuthResult(success=good, handled=False)  # not handled: aiosmtpd answers 535

    mailbox, port = Mailbox(), free_port()
    controller = Controller(mailbox, hostname="127.0.0.1", port=port, tls_context=server_context,
                            require_starttls=True, authenticator=authenticator,
                            auth_require_tls=True)  # fmt: skip
    controller.start()
    try:
        project = project_with_key(engine)
        rules.add_rule(engine, rules.NewRule(project="shop", rule="new-issue",
                                             email_to=("oncall@example.test",)))  # fmt: skip
        upload_session(engine, project, "a", release="1.0", start=T0, crashed=True)
        drain(engine, clock=now_is(T0))
        base = AlertSettings(smtp_host="127.0.0.1", smtp_port=port, smtp_user="hawk")
        deliver_due(engine, replace(base, smtp_password="wrong", smtp_starttls=True), T0)
        (row,) = deliveries(engine)
        assert row.state == "queued" and row.last_error.startswith("SMTPAuthenticationError")
        deliver_due(engine, replace(base, smtp_password="s3cret"), T0 + 30)  # no TLS: no AUTH
        (row,) = deliveries(engine)
        assert row.state == "queued" and "AUTH extension not supported" in row.last_error
        assert mailbox.messages == []
        deliver_due(engine, replace(base, smtp_password="s3cret", smtp_starttls=True), T0 + 90)
    finally:
        controller.stop()
    (row,) = deliveries(engine)
    assert (row.state, row.attempts) == ("sent", 3)
    (mail,) = mailbox.messages
    assert mailbox.recipients == [["oncall@example.test"]]
    assert mail["X-Hawkwatch-Delivery"] == row.key and row.key in mail["Message-ID"]


def test_workers_evaluating_a_threshold_at_once_queue_one_notification(
    engine: Engine, webhook: Webhook
) -> None:
    import threading

    if engine.dialect.name == "sqlite":
        pytest.skip("SQLite runs one worker (docs/server.md); PostgreSQL runs many")
    project = project_with_key(engine)
    rules.add_rule(engine, rules.NewRule(project="shop", rule="threshold", metric="crash-free",
                                         limit_pct=90.0, min_sessions=1,
                                         webhook_url=webhook.url))  # fmt: skip
    upload_session(engine, project, "a", release="1.0", start=T0 - 10, crashed=True)
    drain(engine, clock=now_is(T0))
    barrier = threading.Barrier(6)
    fired: list[int] = []
    failed: list[BaseException] = []

    def worker() -> None:
        barrier.wait()
        try:
            fired.append(evaluate_thresholds(engine, T0))
        except BaseException as exc:
            failed.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert failed == [] and sorted(fired) == [0, 0, 0, 0, 0, 1]
    assert len(deliveries(engine)) == 1
