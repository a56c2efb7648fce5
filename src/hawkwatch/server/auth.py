"""Keys, tokens and passwords: generated here, stored only as hashes.

Ingest keys and API tokens are 32 random bytes (URL-safe text); being unguessable they are
stored as SHA-256 digests and looked up by digest. Passwords are people's: scrypt with a random
salt (``scrypt$n$r$p$salt$hash``) and a constant-time comparison.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from typing import Final

_N: Final = 2**14
_R: Final = 8
_P: Final = 1


def new_secret() -> str:
    return secrets.token_urlsafe(32)


def digest(secret: str) -> str:
    """The stored form of an ingest key or API token."""
    return hashlib.sha256(secret.encode()).hexdigest()


def hash_password(password: str) -> str:
    salt = secrets.token_bytes(16)
    derived = hashlib.scrypt(password.encode(), salt=salt, n=_N, r=_R, p=_P, dklen=32)
    encode = base64.urlsafe_b64encode
    return f"scrypt${_N}${_R}${_P}${encode(salt).decode()}${encode(derived).decode()}"


def check_password(password: str, stored: str) -> bool:
    try:
        scheme, n, r, p, salt, expected = stored.split("$")
        if scheme != "scrypt":
            return False
        derived = hashlib.scrypt(
            password.encode(),
            salt=base64.urlsafe_b64decode(salt),
            n=int(n), r=int(r), p=int(p), dklen=32,
        )  # fmt: skip
    except ValueError:
        return False
    return hmac.compare_digest(derived, base64.urlsafe_b64decode(expected))


def bearer(header: str | None) -> str | None:
    """The secret of an ``Authorization: Bearer …`` header."""
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    return value.strip() or None if scheme.lower() == "bearer" else None
