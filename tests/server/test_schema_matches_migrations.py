"""The migrations build exactly the tables ``schema.py`` declares, on both databases (Alembic's
autogenerate comparison finds nothing to add, drop or alter)."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Engine

from hawkwatch.server.schema import metadata


def test_the_migrated_database_is_the_declared_schema(engine: Engine) -> None:
    with engine.connect() as db:
        differences = compare_metadata(MigrationContext.configure(db), metadata)
    assert differences == []
