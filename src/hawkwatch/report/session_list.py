"""``SessionList`` (``hawkwatch sessions``) as a table and as JSON (``hawkwatch-sessions``).

The name column is never cut or wrapped: a name is what ``hawkwatch report NAME`` takes.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Final, TextIO

from hawkwatch.api.listing import SessionList
from hawkwatch.report._json import document

FORMAT: Final = "hawkwatch-sessions"
FORMAT_VERSION: Final = 1


def render_text(result: SessionList, file: TextIO) -> None:
    if not result.sessions:
        return  # the command says so on stderr
    from rich.console import Console
    from rich.filesize import decimal

    from hawkwatch.report._tables import simple_table

    table = simple_table(f"sessions in {result.root}")
    table.add_column("name", no_wrap=True, min_width=23)
    table.add_column("started", no_wrap=True)
    table.add_column("app", overflow="fold")
    table.add_column("size", justify="right", no_wrap=True)
    table.add_column("records", justify="right", no_wrap=True)
    table.add_column("exit", no_wrap=True)
    for row in result.sessions:
        started = (
            time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row.start_time))
            if row.start_time
            else "?"
        )
        records = "unreadable" if row.records is None else f"{row.records:,}"
        table.add_row(
            row.name, started, row.app_name or "", decimal(row.size_bytes), records, row.exit or "-"
        )
    Console(file=file, markup=False, emoji=False, highlight=False).print(table)


def to_json(result: SessionList) -> dict[str, Any]:
    return document(
        FORMAT,
        FORMAT_VERSION,
        {"root": result.root, "sessions": [dataclasses.asdict(row) for row in result.sessions]},
    )
