"""The upload envelope: one session's records (or a part of them) as the agent sends them.

JSON (compressed by the sender with gzip or zstd, named in ``Content-Encoding``)::

    {"format": "hawkwatch-envelope", "format_version": 1,
     "id": "<session name>:<sequence>",          # idempotency: a replay is acknowledged, not stored
     "session": {"name": str, "metadata": {...}},  # session.json, first
     "records": [[collection, key, value], ...]}   # the records file, in stored order

Each envelope holds every record of the session up to its sending (a snapshot), so a later one of
the same session replaces an earlier one: nothing is lost when one of them never arrives.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from hawkwatch.model.record import Record

ENVELOPE_FORMAT: Final = "hawkwatch-envelope"
ENVELOPE_VERSION: Final = 1


class EnvelopeSession(msgspec.Struct, frozen=True):
    name: str
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)


class Envelope(msgspec.Struct, frozen=True, kw_only=True):
    format: str = ENVELOPE_FORMAT
    format_version: int = ENVELOPE_VERSION
    id: str
    session: EnvelopeSession
    records: list[tuple[str, str, str]]

    @property
    def session_name(self) -> str:
        return self.session.name

    @property
    def sequence(self) -> int:
        tail = self.id.rpartition(":")[2]
        return int(tail) if tail.isdigit() else 0

    def as_records(self) -> list[Record]:
        return [Record(*fields) for fields in self.records]


class EnvelopeError(ValueError):
    """An envelope that does not decode: ``str(error)`` says why (sent back with a 400)."""


def encode_envelope(envelope: Envelope) -> bytes:
    return msgspec.json.encode(envelope)


def decode_envelope(data: bytes) -> Envelope:
    try:
        envelope = msgspec.json.decode(data, type=Envelope)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise EnvelopeError(f"not a hawkwatch envelope: {exc}") from None
    if envelope.format != ENVELOPE_FORMAT:
        raise EnvelopeError(f"format {envelope.format!r} is not {ENVELOPE_FORMAT!r}")
    if envelope.format_version > ENVELOPE_VERSION:
        raise EnvelopeError(
            f"format_version {envelope.format_version} is newer than this server's "
            f"{ENVELOPE_VERSION}; upgrade the server"
        )
    if not envelope.id or not envelope.session.name:
        raise EnvelopeError("id and session.name must not be empty")
    return envelope
