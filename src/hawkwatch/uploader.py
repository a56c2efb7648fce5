"""Sending stored sessions and iOS artifacts to a collector (``hawkwatch upload``).

Standard library only (``urllib.request``, ``gzip``), so the agent's background uploader can use
it too. A session folder becomes one envelope (``hawkwatch.model.envelope``) holding all its
records, its id ``<session name>:<number of records>`` — the same snapshot sent twice is one
upload; a grown session is a newer snapshot. What was acknowledged is remembered in the session
folder (``upload.json``), so ``hawkwatch upload`` sends only what is new. A file is sent as an
artifact (``.crash``, ``.ips``, KSCrash JSON); an MTHawkeye folder as a tar.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import random
import tarfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from hawkwatch.errors import HawkwatchError
from hawkwatch.model.envelope import Envelope, EnvelopeSession, encode_envelope
from hawkwatch.store import Session

UPLOAD_STATE: Final = "upload.json"
INGEST_PATH: Final = "/api/v1/ingest"
ENVELOPE_TYPE: Final = "application/vnd.hawkwatch.envelope+json"


class UploadError(HawkwatchError):
    """The collector refused an upload (or could not be reached after the retries)."""

    exit_code = 1


@dataclass(frozen=True)
class Sent:
    what: str
    status: int
    duplicate: bool
    records: int = 0


def session_envelope(session: Session) -> Envelope:
    records = session.records().records
    return Envelope(
        id=f"{session.name}:{len(records)}",
        session=EnvelopeSession(session.name, dict(session.metadata)),
        records=[(r.collection, r.key, r.value) for r in records],
    )


def already_sent(session: Session) -> int | None:
    """How many records of ``session`` the collector acknowledged, if any."""
    try:
        state = json.loads((session.path / UPLOAD_STATE).read_text())
        return int(state["records"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def upload_session(session: Session, url: str, key: str, *, retries: int = 4,
                   timeout_s: float = 30.0) -> Sent:  # fmt: skip
    envelope = session_envelope(session)
    body = gzip.compress(encode_envelope(envelope), compresslevel=6)
    headers = {"Content-Encoding": "gzip", "Content-Type": ENVELOPE_TYPE}
    status, answer = post(url, key, body, headers, retries=retries, timeout_s=timeout_s)
    count = len(envelope.records)
    (session.path / UPLOAD_STATE).write_text(json.dumps({"records": count, "id": envelope.id}))
    return Sent(session.name, status, bool(answer.get("duplicate")), count)


def upload_within(path: Path, url: str, key: str, wait_s: float) -> Sent | None:
    """Upload the session at ``path`` (the supervisor's, after the program ended: its final
    snapshot, exit state included, even when the program was SIGKILLed) waiting at most
    ``wait_s``; None when it is not done by then or failed — the session stays unsent in the
    store, and the next start's uploader sends it. Never raises."""
    done: list[Sent] = []

    def send() -> None:
        with contextlib.suppress(Exception):
            done.append(upload_session(Session.open(path), url, key, retries=1,
                                       timeout_s=max(wait_s, 0.1)))  # fmt: skip

    thread = threading.Thread(target=send, name="hawkwatch-exit-upload", daemon=True)
    thread.start()
    thread.join(wait_s)
    return done[0] if done else None


def upload_file(path: Path, url: str, key: str, *, retries: int = 4) -> Sent:
    """An iOS artifact file, or an MTHawkeye session folder (sent as a tar)."""
    if path.is_dir():
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as archive:
            archive.add(path, arcname=path.name)
        data, name = buffer.getvalue(), path.name + ".tar"
    else:
        data, name = path.read_bytes(), path.name
    status, answer = post(url, key, gzip.compress(data), {
        "Content-Encoding": "gzip", "X-Hawkwatch-Artifact": name,
    }, retries=retries)  # fmt: skip
    return Sent(name, status, bool(answer.get("duplicate")))


def post(url: str, key: str, body: bytes, headers: dict[str, str], *,
         retries: int = 4, timeout_s: float = 30.0) -> tuple[int, dict[str, object]]:  # fmt: skip
    """POST to the collector's ingest route; retries 429/5xx/unreachable with exponential
    backoff and jitter (``Retry-After`` honoured); raises ``UploadError`` on a refusal."""
    target = url.rstrip("/") + INGEST_PATH
    delay = 0.5
    for attempt in range(retries + 1):
        request = urllib.request.Request(target, data=body, method="POST", headers={
            **headers, "Authorization": f"Bearer {key}",
        })  # fmt: skip
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                return response.status, json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as exc:
            with exc:  # the error holds the connection's response: close it
                text = exc.read()[:300].decode("utf-8", "replace")
            if (exc.code != 429 and exc.code < 500) or attempt == retries:
                raise UploadError(f"{target}: {exc.code}: {_reason(text)}") from None
            wait = _retry_after(exc.headers.get("Retry-After")) or delay
        except (urllib.error.URLError, OSError) as exc:
            if attempt == retries:
                raise UploadError(f"{target}: cannot reach the collector: {exc}") from None
            wait = delay
        time.sleep(wait * (0.5 + random.random()))  # jitter: spread the retries of many clients
        delay = min(delay * 2, 30.0)
    raise UploadError(f"{target}: gave up")  # pragma: no cover - the loop returns or raises


def _reason(text: str) -> str:
    try:
        return str(json.loads(text).get("error", text))
    except (ValueError, AttributeError):
        return text


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None


def pending_sessions(root: str | os.PathLike[str] | None = None) -> list[Session]:
    """Stored sessions with records the collector has not acknowledged."""
    from hawkwatch.store import list_sessions

    found = []
    for session in list_sessions(root):
        sent = already_sent(session)
        if sent is None or sent < len(session.records().records):
            found.append(session)
    return found
