"""Alembic's entry point: runs migrations on the connection ``database.migrate`` passes."""

from __future__ import annotations

from alembic import context

from hawkwatch.server.schema import metadata

connection = context.config.attributes.get("connection")
if connection is None:  # the ``alembic`` command line (revision --autogenerate): a URL is set
    from sqlalchemy import create_engine

    engine = create_engine(context.config.get_main_option("sqlalchemy.url") or "sqlite://")
    with engine.begin() as connection:
        context.configure(connection=connection, target_metadata=metadata,
                          render_as_batch=True)  # fmt: skip
        with context.begin_transaction():
            context.run_migrations()
else:
    context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()
