"""``hawkwatch check-config``: the effective options and where each came from (strict)."""

from __future__ import annotations

import argparse
import json

from hawkwatch.cli.run import parse_options
from hawkwatch.config import load_config, option_specs


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--option", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--json", action="store_true", help="JSON Lines, one option per line")


def run(args: argparse.Namespace) -> int:
    loaded = load_config(parse_options(args.option), strict=True)
    rows = []
    for spec in option_specs():
        section = getattr(loaded.config, spec.section) if spec.section else loaded.config
        value = getattr(section, spec.field_name)
        rows.append(
            {
                "option": spec.name,
                "value": value,
                "source": loaded.sources.get(spec.name, "default"),
                "env": spec.env_var,
                "doc": spec.doc,
            }
        )
    if args.json:
        for row in rows:
            print(json.dumps(row))
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title=f"hawkwatch options (file: {loaded.file or 'none found'})", title_justify="left"
    )
    table.add_column("option", no_wrap=True)
    table.add_column("value", no_wrap=True)
    table.add_column("environment variable", no_wrap=True)
    table.add_column("source", overflow="fold")
    for row in rows:
        table.add_row(str(row["option"]), repr(row["value"]), str(row["env"]), str(row["source"]))
    Console().print(table)
    return 0
