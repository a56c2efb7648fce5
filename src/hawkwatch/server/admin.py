"""Projects, users and API tokens: what ``hawkwatch server add-*`` does, as library calls."""

from __future__ import annotations

import time

from sqlalchemy import Engine, insert, select, update
from sqlalchemy.exc import IntegrityError

from hawkwatch.errors import HawkwatchError
from hawkwatch.server import auth
from hawkwatch.server.schema import api_tokens, projects, users


class AdminError(HawkwatchError):
    """A name already taken, an unknown user…: one line for the admin command."""

    exit_code = 1


def add_project(engine: Engine, name: str) -> str:
    """Create a project; returns its ingest key (shown once: only its hash is stored)."""
    if not name.strip():
        raise AdminError("a project needs a name")
    key = auth.new_secret()
    try:
        with engine.begin() as db:
            db.execute(insert(projects).values(
                name=name, ingest_key_hash=auth.digest(key), created=time.time()
            ))  # fmt: skip
    except IntegrityError:
        raise AdminError(f"project {name!r} exists already") from None
    return key


def add_user(engine: Engine, email: str, password: str) -> None:
    if "@" not in email:
        raise AdminError(f"{email!r} is not an email address")
    if len(password) < 8:
        raise AdminError("the password must have at least 8 characters")
    try:
        with engine.begin() as db:
            db.execute(insert(users).values(
                email=email, password_hash=auth.hash_password(password), created=time.time()
            ))  # fmt: skip
    except IntegrityError:
        raise AdminError(f"user {email!r} exists already") from None


def add_token(engine: Engine, email: str) -> str:
    """A new API token for ``email`` (shown once)."""
    with engine.begin() as db:
        user_id = db.execute(select(users.c.id).where(users.c.email == email)).scalar()
        if user_id is None:
            raise AdminError(f"no user {email!r}; add it with 'hawkwatch server add-user'")
        token = auth.new_secret()
        db.execute(insert(api_tokens).values(
            user_id=user_id, token_hash=auth.digest(token), created=time.time()
        ))  # fmt: skip
    return token


def set_retention(engine: Engine, name: str, **days: float | None) -> None:
    """A project's own ``keep_envelopes_days`` / ``keep_events_days`` (None: the server's)."""
    unknown = set(days) - {"keep_envelopes_days", "keep_events_days"}
    if unknown:
        raise AdminError(f"no retention setting {sorted(unknown)}")
    if not days:
        raise AdminError("give --envelopes-days and/or --events-days")
    with engine.begin() as db:
        changed = db.execute(update(projects).where(projects.c.name == name).values(**days))
        if changed.rowcount != 1:
            raise AdminError(f"no project {name!r}")


def project_for_key(engine: Engine, key: str) -> tuple[int, str] | None:
    with engine.connect() as db:
        row = db.execute(
            select(projects.c.id, projects.c.name).where(
                projects.c.ingest_key_hash == auth.digest(key)
            )
        ).first()
    return None if row is None else (row.id, row.name)


def token_is_valid(engine: Engine, token: str) -> bool:
    with engine.connect() as db:
        found = db.execute(
            select(api_tokens.c.id).where(api_tokens.c.token_hash == auth.digest(token))
        ).first()
    return found is not None
