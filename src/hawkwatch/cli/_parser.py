"""The ``hawkwatch`` command's parser: every subcommand's, or only the chosen one's."""

from __future__ import annotations

import argparse
import os
import sys

from hawkwatch._version import __version__
from hawkwatch.cli import COMMANDS, _chosen_command, _load


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser; when ``argv`` names a subcommand, only that one is imported and set up (with
    no name, or an unknown one, every subcommand is listed, for help and the usage error)."""
    parser = argparse.ArgumentParser(
        prog="hawkwatch",
        description="Application performance monitoring for Python.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"hawkwatch {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = _chosen_command(argv)
    for name, module_name, help_text in COMMANDS:
        if chosen is not None and chosen != name:
            continue  # a named command is parsed by its own parser alone (each costs ~0.5 ms)
        sub = subparsers.add_parser(
            name, help=help_text, description=help_text, formatter_class=HelpFormatter
        )
        sub.set_defaults(_module=module_name)
        if argv is None or chosen == name:
            _load(module_name).configure(sub)
    return parser


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, told the terminal's width: argparse's own asks
    ``shutil.get_terminal_size`` for every argument added, and ``shutil`` (with its compression
    modules, ~1.2 ms) would be imported before ``hawkwatch run`` spawns its program."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
        **kwargs: bool,
    ) -> None:
        if width is None:
            width = terminal_columns() - 2
        super().__init__(prog, indent_increment, max_help_position, width, **kwargs)


def terminal_columns(fallback: int = 80) -> int:
    """``shutil.get_terminal_size().columns``: ``COLUMNS``, else the terminal's, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else fallback
