"""Sending queued notifications: claim under a lease, send, then record the outcome.

Delivery is at-least-once with an idempotency key. A row is claimed (``sending``, attempts + 1,
a lease) and committed before anything leaves the server; the outcome is committed after. A
worker killed before sending leaves the claim to expire and the next worker sends it: exactly
once. Killed after the receiver got it but before the outcome commits, it is sent again with the
same key (``X-Hawkwatch-Delivery``, ``id`` in the body, the email's ``Message-ID``): no sender
can make a remote side effect and a local commit atomic, so the receiver drops the repeat.

Failures (connection errors, timeouts, 5xx, 408, 429) are retried with exponential backoff up to
``max_attempts``; other 4xx answers are final. Each is recorded in ``last_error``; rows wait on
their own ``next_attempt``, so a receiver that is down delays nothing else.
"""

from __future__ import annotations

import smtplib
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from typing import Any

from sqlalchemy import Engine, select, update

from hawkwatch.server.alerts import messages, signing
from hawkwatch.server.database import is_sqlite
from hawkwatch.server.schema import alert_deliveries, alert_rules

_RETRIED_4XX = frozenset({408, 425, 429})


@dataclass(frozen=True, slots=True)
class AlertSettings:
    """How the worker sends. ``public_url``: the dashboard's address as users reach it (links).
    SMTP: ``smtp_host`` unset means email alerts fail (and say so) until it is configured;
    ``smtp_starttls`` upgrades a plain connection; ``smtp_user``/``smtp_password`` log in.
    ``max_attempts`` and ``backoff_s`` (doubled per attempt, at most ``max_backoff_s``) bound the
    retries; ``timeout_s`` bounds one attempt."""

    public_url: str = "http://127.0.0.1:8470"
    smtp_host: str | None = None
    smtp_port: int = 25
    smtp_from: str = "hawkwatch@localhost"
    smtp_user: str | None = None
    smtp_password: str | None = None
    smtp_starttls: bool = False
    timeout_s: float = 10.0
    max_attempts: int = 8
    backoff_s: float = 30.0
    max_backoff_s: float = 3600.0
    lease_s: float = 120.0


class DeliveryFailed(Exception):
    def __init__(self, reason: str, *, final: bool = False) -> None:
        super().__init__(reason)
        self.final = final


@dataclass(frozen=True)
class Claimed:
    id: int
    key: str
    channel: str
    target: str
    event: dict[str, Any]
    attempts: int
    lease_until: float
    secret: str | None


def claim(engine: Engine, settings: AlertSettings, now: float) -> Claimed | None:
    """Take the oldest due delivery (or one whose sender died); None when none is due."""
    due = ((alert_deliveries.c.state == "queued") & (alert_deliveries.c.next_attempt <= now)) | (
        (alert_deliveries.c.state == "sending") & (alert_deliveries.c.lease_until < now)
    )
    with engine.begin() as db:
        query = (
            select(alert_deliveries, alert_rules.c.webhook_secret)
            .outerjoin(alert_rules, alert_rules.c.id == alert_deliveries.c.rule_id)
            .where(due)
            .order_by(alert_deliveries.c.next_attempt, alert_deliveries.c.id)
            .limit(1)
        )
        if not is_sqlite(engine):
            query = query.with_for_update(skip_locked=True, of=alert_deliveries)
        row = db.execute(query).first()
        if row is None:
            return None
        lease = now + settings.lease_s
        taken = db.execute(
            update(alert_deliveries).where(alert_deliveries.c.id == row.id).where(due)
            .values(state="sending", lease_until=lease, attempts=alert_deliveries.c.attempts + 1)
        ).rowcount  # fmt: skip
    if taken != 1:
        return None
    return Claimed(row.id, row.key, row.channel, row.target, row.event, row.attempts + 1, lease,
                   row.webhook_secret)  # fmt: skip


def send(claimed: Claimed, settings: AlertSettings, now: float) -> None:
    """One attempt; raises ``DeliveryFailed`` with the reason."""
    if claimed.channel == "webhook":
        _post(claimed, settings, now)
    else:
        _mail(claimed, settings, now)


def _post(claimed: Claimed, settings: AlertSettings, now: float) -> None:
    body = messages.webhook_body(claimed.key, claimed.event, settings.public_url)
    headers = {"Content-Type": "application/json", "User-Agent": "hawkwatch-alerts",
               "X-Hawkwatch-Delivery": claimed.key, "X-Hawkwatch-Event": claimed.event["type"]}
    if claimed.secret:
        headers |= signing.headers(claimed.secret, int(now), body)
    request = urllib.request.Request(claimed.target, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=settings.timeout_s) as response:
            response.read(65536)
    except urllib.error.HTTPError as exc:
        exc.close()
        final = 400 <= exc.code < 500 and exc.code not in _RETRIED_4XX
        raise DeliveryFailed(f"HTTP {exc.code} {exc.reason}", final=final) from None
    except (OSError, ValueError) as exc:  # refused, reset, timeout, DNS, a bad URL
        raise DeliveryFailed(f"{type(exc).__name__}: {exc}") from None


def _mail(claimed: Claimed, settings: AlertSettings, now: float) -> None:
    if not settings.smtp_host:
        raise DeliveryFailed("no SMTP server configured (--smtp-host)")
    subject, text = messages.email_text(claimed.event, settings.public_url)
    message = EmailMessage()
    message["From"] = settings.smtp_from
    message["To"] = claimed.target.replace(",", ", ")
    message["Subject"] = subject
    message["Date"] = formatdate(now)
    message["Message-ID"] = make_msgid(idstring=claimed.key, domain="hawkwatch")
    message["X-Hawkwatch-Delivery"] = claimed.key
    message.set_content(text)
    try:
        with smtplib.SMTP(settings.smtp_host, settings.smtp_port,
                          timeout=settings.timeout_s) as smtp:  # fmt: skip
            if settings.smtp_starttls:
                smtp.starttls(context=ssl.create_default_context())
            if settings.smtp_user:
                smtp.login(settings.smtp_user, settings.smtp_password or "")
            smtp.send_message(message)
    except (smtplib.SMTPException, OSError) as exc:
        raise DeliveryFailed(f"{type(exc).__name__}: {exc}") from None


def finish(engine: Engine, claimed: Claimed, settings: AlertSettings, now: float,
           error: DeliveryFailed | None) -> None:  # fmt: skip
    """Record the attempt's outcome (unless the lease was lost to another sender)."""
    if error is None:
        values: dict[str, Any] = {"state": "sent", "sent": now, "last_error": None}
    else:
        final = error.final or claimed.attempts >= settings.max_attempts
        wait = min(settings.max_backoff_s, settings.backoff_s * 2 ** (claimed.attempts - 1))
        values = {"state": "failed" if final else "queued", "next_attempt": now + wait,
                  "last_error": str(error)[:2000]}  # fmt: skip
    with engine.begin() as db:
        db.execute(
            update(alert_deliveries)
            .where(alert_deliveries.c.id == claimed.id)
            .where(alert_deliveries.c.lease_until == claimed.lease_until)
            .values(lease_until=None, **values)
        )


def deliver_due(engine: Engine, settings: AlertSettings, now: float, *, limit: int = 100) -> int:
    """Send what is due at ``now`` (one attempt each); returns how many were attempted."""
    attempted = 0
    while attempted < limit and (claimed := claim(engine, settings, now)) is not None:
        error = None
        try:
            send(claimed, settings, now)
        except DeliveryFailed as exc:
            error = exc
        finish(engine, claimed, settings, now, error)
        attempted += 1
    return attempted
