"""The one table style of terminal output: a rule under the header, no outer border."""

from __future__ import annotations

from rich import box
from rich.table import Table


def simple_table(title: str | None = None) -> Table:
    """An empty table in the shared style; ``title`` sits above it, left-aligned."""
    return Table(
        title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False
    )
