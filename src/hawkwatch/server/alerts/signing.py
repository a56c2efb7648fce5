"""The webhook signature: HMAC-SHA256 over ``"<timestamp>.<exact body bytes>"``.

Headers: ``X-Hawkwatch-Timestamp`` (Unix seconds at sending; each retry is signed again) and
``X-Hawkwatch-Signature: v1=<hex digest>``, keyed with the rule's secret. A receiver recomputes
the digest over the raw body it read (before parsing JSON), compares in constant time, and
refuses a timestamp more than ``tolerance_s`` away from its clock, so a captured request cannot
be replayed later; ``X-Hawkwatch-Delivery`` (also ``id`` in the body) lets it drop a duplicate.
"""

from __future__ import annotations

import hashlib
import hmac

SCHEME = "v1"


def signature(secret: str, timestamp: int, body: bytes) -> str:
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"{SCHEME}={mac.hexdigest()}"


def headers(secret: str, timestamp: int, body: bytes) -> dict[str, str]:
    return {
        "X-Hawkwatch-Timestamp": str(timestamp),
        "X-Hawkwatch-Signature": signature(secret, timestamp, body),
    }


def verify(
    secret: str, body: bytes, timestamp: str, signed: str, *, now: float,
    tolerance_s: float = 300.0,
) -> bool:  # fmt: skip
    """What a receiver does: the signature matches and the timestamp is recent."""
    try:
        when = int(timestamp)
    except ValueError:
        return False
    if abs(now - when) > tolerance_s:
        return False
    return hmac.compare_digest(signature(secret, when, body), signed.strip())
