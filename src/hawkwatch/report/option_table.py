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


#: Below this width the environment variable column is left out (its name follows a rule).
WIDE: Final = 120


def render_text(result: OptionTable, file: TextIO, width: int | None = None) -> None:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    console = Console(file=file, width=width, markup=False, emoji=False, highlight=False)
    wide = console.width >= WIDE
    table = Table(
        title=f"hawkwatch options (file: {result.file or 'none found'})",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
    )
    table.add_column("option", no_wrap=True)
    table.add_column("value", overflow="fold", min_width=10)
    if wide:
        table.add_column("environment variable", no_wrap=True)
    table.add_column("source", overflow="fold", min_width=12, ratio=1)
    for row in result.options:
        env = (row.env,) if wide else ()
        table.add_row(row.option, repr(row.value), *env, row.source)
    console.print(table)
    if not wide:
        console.print(
            "environment variables: HAWKWATCH_ + the option in capitals, dots as underscores "
            "(e.g. HAWKWATCH_GC_THRESHOLD_MS)"
        )


def to_json(result: OptionTable) -> dict[str, Any]:
    return document(
        FORMAT,
        FORMAT_VERSION,
        {"file": result.file, "options": [dataclasses.asdict(row) for row in result.options]},
    )


def render_json(result: OptionTable, file: TextIO) -> None:
    write_json(to_json(result), file, indent=1)
