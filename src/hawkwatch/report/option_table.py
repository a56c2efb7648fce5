"""``OptionTable`` (``hawkwatch check-config``) as a table and as JSON (``hawkwatch-options``).

Option names, values and variables are never cut; the source column folds instead of vanishing.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Final, TextIO

from hawkwatch.api.options import OptionTable
from hawkwatch.report._json import document, write_json

FORMAT: Final = "hawkwatch-options"
FORMAT_VERSION: Final = 1


def render_text(result: OptionTable, file: TextIO) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title=f"hawkwatch options (file: {result.file or 'none found'})", title_justify="left"
    )
    table.add_column("option", no_wrap=True)
    table.add_column("value", overflow="fold")
    table.add_column("environment variable", overflow="fold")
    table.add_column("source", overflow="fold", min_width=8)
    for row in result.options:
        table.add_row(row.option, repr(row.value), row.env, row.source)
    Console(file=file, markup=False, emoji=False, highlight=False).print(table)


def to_json(result: OptionTable) -> dict[str, Any]:
    return document(
        FORMAT,
        FORMAT_VERSION,
        {"file": result.file, "options": [dataclasses.asdict(row) for row in result.options]},
    )


def render_json(result: OptionTable, file: TextIO) -> None:
    write_json(to_json(result), file, indent=1)
