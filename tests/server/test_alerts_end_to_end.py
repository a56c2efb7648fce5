"""A new crash uploaded over HTTP → the worker → exactly one signed webhook call and one email,
each linking to the issue; the same crash again within the interval notifies nobody, and the
digest at the interval's end reports it. Clocks are injected: no test waits for an interval."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import Engine

from hawkwatch.server.alerts import AlertSettings, rules, signing
from hawkwatch.server.alerts.runner import Runner
from hawkwatch.server.pipeline import drain
from hawkwatch.uploader import upload_file
from tests.server.alert_receivers import Mailbox, Webhook, deliveries
from tests.server.conftest import LiveServer

CRASH = Path(__file__).resolve().parents[1] / "fixtures" / "crash" / "ips" / "nullderef.ips"
T0 = 1_900_000_000.0
PUBLIC = "https://hawkwatch.example.test"


def test_a_new_crash_notifies_once_and_a_repeat_goes_into_the_digest(
    live_server: LiveServer, engine: Engine, webhook: Webhook, smtp: tuple[Mailbox, int],
    tmp_path: Path,
) -> None:  # fmt: skip
    mailbox, smtp_port = smtp
    from hawkwatch.server import admin

    key = admin.add_project(engine, "shop floor")
    added = rules.add_rule(engine, rules.NewRule(
        project="shop floor", rule="new-issue", webhook_url=webhook.url,
        email_to=("oncall@example.test",), interval_s=3600.0,
    ))  # fmt: skip
    secret = added["webhook_secret"]
    settings = AlertSettings(public_url=PUBLIC, smtp_host="127.0.0.1", smtp_port=smtp_port,
                             smtp_from="alerts@example.test")  # fmt: skip
    clock = [T0]
    runner = Runner(engine, settings, clock=lambda: clock[0])

    assert upload_file(CRASH, live_server.url, key).status == 202
    assert drain(engine, clock=lambda: clock[0]) == 1
    assert runner.tick() == 2  # the webhook and the email

    (call,) = webhook.received
    body = json.loads(call.body)
    issue_id = body["issue"]["id"]
    link = f"{PUBLIC}/p/shop%20floor/issues/{issue_id}"
    assert body["type"] == "new-issue" and body["issue"]["kind"] == "crash"
    assert body["url"] == link and body["project"] == "shop floor"
    assert call.headers["X-Hawkwatch-Delivery"] == body["id"]
    timestamp, signed = call.headers["X-Hawkwatch-Timestamp"], call.headers["X-Hawkwatch-Signature"]
    assert int(timestamp) == int(T0)
    assert signing.verify(secret, call.body, timestamp, signed, now=T0 + 10)
    assert not signing.verify(secret, call.body + b" ", timestamp, signed, now=T0 + 10)
    assert not signing.verify("another secret", call.body, timestamp, signed, now=T0 + 10)
    assert not signing.verify(secret, call.body, timestamp, signed, now=T0 + 3600)  # a replay

    (mail,) = mailbox.messages
    assert mailbox.recipients == [["oncall@example.test"]]
    assert mail["From"] == "alerts@example.test" and "new crash issue" in mail["Subject"]
    text = mail.get_payload(decode=True).decode()
    assert link in text and body["issue"]["title"] in text

    # the same crash again (another file: its upload id differs) within the interval
    again = tmp_path / "nullderef-again.ips"
    again.write_bytes(CRASH.read_bytes() + b"\n")
    assert upload_file(again, live_server.url, key).status == 202
    clock[0] = T0 + 600
    assert drain(engine, clock=lambda: clock[0]) == 1
    assert runner.tick() == 0
    assert len(webhook.received) == 1 and len(mailbox.messages) == 1

    clock[0] = T0 + 3600  # the window ends: one digest, on each channel
    assert runner.tick() == 2
    digest = json.loads(webhook.received[1].body)
    assert digest["type"] == "digest" and digest["occurrences"] == 1
    assert [(i["id"], i["occurrences"], i["url"]) for i in digest["issues"]] == [
        (issue_id, 1, link)
    ]
    assert digest["text"] == "shop floor: and 1 more occurrence of 1 issue (new-issue)"
    assert "and 1 more occurrence of 1 issue" in mailbox.messages[1]["Subject"]
    assert link in mailbox.messages[1].get_payload(decode=True).decode()

    clock[0] = T0 + 7200  # nothing left: no more digests, no more notifications
    assert runner.tick() == 0
    sent = deliveries(engine)
    assert [(d.channel, d.state, d.attempts) for d in sent] == [
        ("webhook", "sent", 1), ("email", "sent", 1), ("webhook", "sent", 1), ("email", "sent", 1)
    ]  # fmt: skip
    assert len({d.key for d in sent}) == 4


def test_hawkwatch_server_run_sends_alerts_from_its_worker(
    webhook: Webhook, smtp: tuple[Mailbox, int], tmp_path: Path
) -> None:
    """The real command: its worker thread runs the alert loop with the SMTP options given."""
    import os
    import subprocess
    import sys
    import time
    import urllib.request

    from hawkwatch.server import admin
    from hawkwatch.server.database import make_engine, migrate
    from tests.server.alert_receivers import free_port

    mailbox, smtp_port = smtp
    url = f"sqlite:///{tmp_path / 'server.db'}"
    engine = make_engine(url)
    migrate(engine)
    key = admin.add_project(engine, "shop")
    rules.add_rule(engine, rules.NewRule(project="shop", rule="new-issue", webhook_url=webhook.url,
                                         email_to=("oncall@example.test",)))  # fmt: skip
    engine.dispose()
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}
    env["HAWKWATCH_HOME"] = str(tmp_path / "home")
    server = subprocess.Popen([
        str(Path(sys.executable).with_name("hawkwatch")), "server", "run", "--database", url,
        "--port", str(port), "--public-url", PUBLIC, "--smtp-host", "127.0.0.1",
        "--smtp-port", str(smtp_port), "--smtp-from", "alerts@example.test",
    ], env=env, stderr=subprocess.PIPE)  # fmt: skip
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(base + "/healthz", timeout=5).close()
                break
            except OSError:
                time.sleep(0.1)
        assert upload_file(CRASH, base, key).status == 202
        while time.monotonic() < deadline and not (webhook.received and mailbox.messages):
            time.sleep(0.1)  # until the worker has processed the upload and sent both
    finally:
        server.terminate()
        _, errors = server.communicate(timeout=30)
    assert len(webhook.received) == 1 and len(mailbox.messages) == 1, errors.decode()
    body = json.loads(webhook.received[0].body)
    assert body["url"] == f"{PUBLIC}/p/shop/issues/{body['issue']['id']}"
    assert body["url"] in mailbox.messages[0].get_payload(decode=True).decode()
