"""``OptionTable`` (``hawkwatch check-config``) as a table and as JSON (``hawkwatch-options``).

Option names, values and variables are never cut; the source column folds instead of vanishing.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Final, TextIO

from hawkwatch.api.options import OptionTable
from hawkwatch.report._json import document

FORMAT: Final = "hawkwatch-options"
FORMAT_VERSION: Final = 1


#: Below this width the environment variable column is left out (its name follows a rule).
WIDE: Final = 120


def render_text(result: OptionTable, file: TextIO, width: int | None = None) -> None:
    from rich.console import Console

    from hawkwatch.report._tables import simple_table

    console = Console(file=file, width=width, markup=False, emoji=False, highlight=False)
    wide = console.width >= WIDE
    table = simple_table(f"hawkwatch options (file: {result.file or 'none found'})")
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
