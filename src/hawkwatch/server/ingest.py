"""Accepting uploads: an envelope or an iOS artifact is validated, then stored durably with its
job in one transaction; only then is it acknowledged (202).

Statuses: 400 (bad compression, not an envelope, a record the typed model rejects, an artifact
no reader knows — nothing stored), 401 (bad key; in ``app``), 413 (over ``max_body_bytes``
compressed or ``max_decompressed_bytes`` decompressed), 415 (an unknown ``Content-Encoding``),
429 (over the key's rate; in ``app``). A replay of an envelope id already stored is acknowledged
again (``duplicate: true``) and stores nothing.
"""

from __future__ import annotations

import hashlib
import io
import tarfile
import time
import zlib
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, insert
from sqlalchemy.exc import IntegrityError

from hawkwatch.model.envelope import EnvelopeError, decode_envelope
from hawkwatch.model.records import decode_all
from hawkwatch.server.schema import envelopes, jobs

ENVELOPE_TYPE = "application/vnd.hawkwatch.envelope+json"


@dataclass(frozen=True)
class Limits:
    max_body_bytes: int = 20 * 1024 * 1024
    max_decompressed_bytes: int = 200 * 1024 * 1024


@dataclass(frozen=True)
class Outcome:
    status: int
    body: dict[str, Any]


class Rejected(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def accept(
    engine: Engine,
    project_id: int,
    body: bytes,
    *,
    content_encoding: str | None,
    artifact_name: str | None,
    envelope_id: str | None,
    limits: Limits = Limits(),
) -> Outcome:
    """Validate and store one upload; never raises for bad input (the status says)."""
    try:
        if len(body) > limits.max_body_bytes:
            raise Rejected(413, f"body of {len(body):,} bytes is over {limits.max_body_bytes:,}")
        data = decompress(body, content_encoding, limits.max_decompressed_bytes)
        if artifact_name is None:
            kind, name, key = _check_envelope(data)
        else:
            kind, name = "artifact", _check_artifact(artifact_name, data)
            key = envelope_id or "sha256:" + hashlib.sha256(data).hexdigest()
    except Rejected as exc:
        return Outcome(exc.status, {"error": exc.reason})
    try:
        with engine.begin() as db:
            row = db.execute(
                insert(envelopes).values(
                    project_id=project_id, envelope_id=key, kind=kind, name=name, body=data,
                    received=time.time(),
                ).returning(envelopes.c.id)
            ).scalar_one()  # fmt: skip
            db.execute(insert(jobs).values(envelope_id=row, state="queued", attempts=0))
    except IntegrityError:
        return Outcome(202, {"id": key, "duplicate": True})
    return Outcome(202, {"id": key, "duplicate": False})


def decompress(body: bytes, encoding: str | None, limit: int) -> bytes:
    encoding = (encoding or "identity").strip().lower()
    if encoding == "identity":
        data = body
    elif encoding == "gzip":
        decoder = zlib.decompressobj(wbits=47)  # gzip or zlib header
        try:
            data = decoder.decompress(body, limit + 1)
        except zlib.error as exc:
            raise Rejected(400, f"body is not valid gzip: {exc}") from None
        if not decoder.eof and len(data) <= limit:
            raise Rejected(400, "gzip body is truncated")
    elif encoding == "zstd":
        try:
            import zstandard
        except ImportError:
            raise Rejected(415, "zstd is not available on this server; send gzip") from None
        try:
            reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(body))
            data = reader.read(limit + 1)
        except zstandard.ZstdError as exc:
            raise Rejected(400, f"body is not valid zstd: {exc}") from None
    else:
        raise Rejected(415, f"Content-Encoding {encoding!r}: send gzip, zstd or identity")
    if len(data) > limit:
        raise Rejected(413, f"decompressed body is over {limit:,} bytes")
    return data


def _check_envelope(data: bytes) -> tuple[str, str, str]:
    try:
        envelope = decode_envelope(data)
    except EnvelopeError as exc:
        raise Rejected(400, str(exc)) from None
    decoded = decode_all(envelope.as_records())
    if decoded.rejected:
        first = decoded.rejected[0]
        raise Rejected(
            400,
            f"{len(decoded.rejected)} record(s) do not decode; first: {first.collection} "
            f"{first.key[:80]}: {first.reason[:200]}",
        )
    return "session", envelope.session_name, envelope.id


def _check_artifact(name: str, data: bytes) -> str:
    """The artifact's name if a reader accepts it: a crash report or an MTHawkeye folder tar."""
    from hawkwatch.formats.crash import parse_crash

    if name.endswith((".tar", ".tar.gz", ".tgz")):
        try:
            with tarfile.open(fileobj=io.BytesIO(data)) as archive:
                names = archive.getnames()
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise Rejected(400, f"{name}: not a tar archive: {exc}") from None
        if not any(n.endswith(("records.mtlog", "records.mmap2")) for n in names):
            raise Rejected(400, f"{name}: no MTHawkeye records file in the archive")
        return name
    try:
        parse_crash(data, source=name)
    except Exception as exc:  # noqa: BLE001 - any reader failure is about the sender's data
        raise Rejected(400, f"{name}: not a crash report hawkwatch reads: {exc}"[:300]) from None
    return name
