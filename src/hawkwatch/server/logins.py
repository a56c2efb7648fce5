"""Browser logins for the dashboard: password check, login sessions, CSRF tokens, rate limit.

A login session is a random cookie value stored only as its SHA-256 (like API tokens), with a
CSRF token of its own that every form of that login carries and every POST must repeat. Failed
logins are rows in ``login_failures`` keyed by account and by client address, so the limit holds
across any number of collectors behind a balancer; a success clears the account's failures.
"""

from __future__ import annotations

import hmac
import secrets
import time
from dataclasses import dataclass
from typing import Final

from sqlalchemy import Engine, delete, func, insert, select

from hawkwatch.server import auth
from hawkwatch.server.schema import login_failures, login_sessions, users

SESSION_S: Final = 14 * 86400.0
# checked when the email is unknown, so that a wrong address costs as long as a wrong password
_DUMMY_HASH: Final = auth.hash_password("not a password anyone has")


@dataclass(frozen=True)
class LoginLimits:
    """How many failed logins within ``window_s`` lock an account or a client address out."""

    per_account: int = 5
    per_address: int = 20
    window_s: float = 900.0


@dataclass(frozen=True)
class Login:
    user_id: int
    email: str
    csrf_token: str


def check_user(engine: Engine, email: str, password: str) -> int | None:
    """The user's id when ``password`` is theirs, else None (same work either way)."""
    with engine.connect() as db:
        row = db.execute(
            select(users.c.id, users.c.password_hash).where(users.c.email == email)
        ).first()
    stored = row.password_hash if row is not None else _DUMMY_HASH
    ok = auth.check_password(password, stored)
    return int(row.id) if ok and row is not None else None


def start(engine: Engine, user_id: int, *, now: float | None = None) -> str:
    """A new login session for ``user_id``; returns the cookie value (shown once)."""
    now = time.time() if now is None else now
    token = auth.new_secret()
    with engine.begin() as db:
        db.execute(delete(login_sessions).where(login_sessions.c.expires < now))
        db.execute(insert(login_sessions).values(
            user_id=user_id, token_hash=auth.digest(token), csrf_token=secrets.token_hex(32),
            created=now, expires=now + SESSION_S,
        ))  # fmt: skip
    return token


def find(engine: Engine, token: str | None, *, now: float | None = None) -> Login | None:
    """The login a cookie value stands for, unless unknown or expired."""
    if not token:
        return None
    now = time.time() if now is None else now
    with engine.connect() as db:
        row = db.execute(
            select(login_sessions.c.user_id, login_sessions.c.csrf_token, users.c.email)
            .join(users, users.c.id == login_sessions.c.user_id)
            .where(login_sessions.c.token_hash == auth.digest(token))
            .where(login_sessions.c.expires > now)
        ).first()
    return None if row is None else Login(int(row.user_id), row.email, row.csrf_token)


def end(engine: Engine, token: str | None) -> None:
    """Log out: the cookie value stops meaning anything."""
    if token:
        with engine.begin() as db:
            db.execute(
                delete(login_sessions).where(login_sessions.c.token_hash == auth.digest(token))
            )


def same_token(expected: str | None, given: str | None) -> bool:
    """A constant-time comparison of two CSRF tokens; both must be present."""
    if not expected or not given:
        return False
    return hmac.compare_digest(expected.encode(), given.encode())


def _keys(email: str, address: str) -> tuple[str, str]:
    return f"account:{email.strip().lower()}"[:400], f"address:{address}"[:400]


def wait_s(
    engine: Engine, email: str, address: str, limits: LoginLimits, *, now: float | None = None
) -> float:
    """0 when a login attempt may be checked now, else seconds until the oldest failure ages out."""
    now = time.time() if now is None else now
    account, client = _keys(email, address)
    waits = [0.0]
    with engine.connect() as db:
        for key, allowed in ((account, limits.per_account), (client, limits.per_address)):
            count, oldest = db.execute(
                select(func.count(), func.min(login_failures.c.time))
                .where(login_failures.c.key == key)
                .where(login_failures.c.time > now - limits.window_s)
            ).one()
            if count >= allowed:
                waits.append(oldest + limits.window_s - now)
    return max(waits)


def record_failure(engine: Engine, email: str, address: str, limits: LoginLimits,
                   *, now: float | None = None) -> None:  # fmt: skip
    now = time.time() if now is None else now
    with engine.begin() as db:
        db.execute(delete(login_failures).where(login_failures.c.time < now - limits.window_s))
        rows = [{"key": key, "time": now} for key in _keys(email, address)]
        db.execute(insert(login_failures), rows)


def clear_account(engine: Engine, email: str) -> None:
    account, _ = _keys(email, "")
    with engine.begin() as db:
        db.execute(delete(login_failures).where(login_failures.c.key == account))
