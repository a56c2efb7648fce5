"""Loopback receivers for alert tests: a webhook server answering scripted statuses, an
``aiosmtpd`` SMTP server keeping what it was sent, and envelopes of sessions that crash or not."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from sqlalchemy import Engine, select

from hawkwatch.model.envelope import Envelope, EnvelopeSession, encode_envelope
from hawkwatch.model.records import ExitState
from hawkwatch.server import admin
from hawkwatch.server.ingest import accept
from hawkwatch.server.schema import alert_deliveries


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes


@dataclass
class Webhook:
    """Answers each POST with the next scripted status (then 200) and records it."""

    url: str = ""
    statuses: list[int] = field(default_factory=list)
    received: list[Received] = field(default_factory=list)


def _handler(hook: Webhook) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            hook.received.append(Received(dict(self.headers.items()), body))
            status = hook.statuses.pop(0) if hook.statuses else 200
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


def serve_webhook(statuses: list[int] | None = None) -> Iterator[Webhook]:
    hook = Webhook(statuses=list(statuses or []))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hook))
    hook.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield hook
    server.shutdown()
    server.server_close()
    thread.join(10)


class Mailbox:
    """An aiosmtpd handler keeping each message it accepts."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.recipients: list[list[str]] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append(message_from_bytes(envelope.content))
        self.recipients.append(list(envelope.rcpt_tos))
        return "250 OK"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve_smtp() -> Iterator[tuple[Mailbox, int]]:
    from aiosmtpd.controller import Controller

    mailbox = Mailbox()
    port = free_port()
    controller = Controller(mailbox, hostname="127.0.0.1", port=port)
    controller.start()
    yield mailbox, port
    controller.stop()


def project_with_key(engine: Engine, name: str = "shop") -> int:
    key = admin.add_project(engine, name)
    found = admin.project_for_key(engine, key)
    assert found is not None
    return found[0]


def upload_session(
    engine: Engine, project: int, name: str, *, release: str | None, start: float,
    crashed: bool, sequence: int = 1,
) -> None:  # fmt: skip
    """One session envelope, stored like ``POST /api/v1/ingest`` stores it."""
    exit_state = ExitState(
        clean=not crashed, exit_code=None if crashed else 0, signal=11 if crashed else None,
        signal_name="SIGSEGV" if crashed else None, reason=None, exception=None,
        source="hawkwatch-run", time=start + 1,
    )  # fmt: skip
    metadata: dict[str, Any] = {"start_time": start}
    if release is not None:
        metadata["app_version"] = release
    body = encode_envelope(Envelope(
        id=f"{name}:{sequence}", session=EnvelopeSession(name, metadata),
        records=[tuple(exit_state.to_record())],  # type: ignore[list-item]
    ))  # fmt: skip
    outcome = accept(engine, project, body, content_encoding=None, artifact_name=None,
                     envelope_id=None)  # fmt: skip
    assert outcome.status == 202, outcome.body


def deliveries(engine: Engine) -> list[Any]:
    with engine.connect() as db:
        return list(db.execute(select(alert_deliveries).order_by(alert_deliveries.c.id)).all())
