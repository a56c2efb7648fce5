"""The migrations build exactly the tables ``schema.py`` declares, on both databases (Alembic's
autogenerate comparison finds nothing to add, drop or alter). On PostgreSQL the month partitions
of ``occurrences`` (``server.partitions``) are not declared tables: they are left out."""

from __future__ import annotations

import re
from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Engine

from hawkwatch.server.schema import metadata

PARTITION = re.compile(r"occurrences_(p\d{6}|default)$")


def _is_partition(obj: Any, name: str | None, kind: str, reflected: bool, other: Any) -> bool:
    table = obj if kind == "table" else getattr(obj, "table", None)
    return bool(PARTITION.match(getattr(table, "name", "") or ""))


def test_the_migrated_database_is_the_declared_schema(engine: Engine) -> None:
    with engine.connect() as db:
        context = MigrationContext.configure(
            db, opts={"include_object": lambda *args: not _is_partition(*args)}
        )
        differences = compare_metadata(context, metadata)
    assert differences == []
