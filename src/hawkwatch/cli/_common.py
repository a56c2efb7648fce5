"""Arguments several subcommands share: the output convention, SESSION, --symbols, --option.

Every command that prints a result takes ``--format`` (the result type's outputs, from
``hawkwatch.report.outputs``), ``--json`` (same as ``--format json``) and ``-o/--output FILE``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hawkwatch run's start)
if TYPE_CHECKING:
    from typing import Any


def add_output_arguments(
    parser: argparse.ArgumentParser, result_type: str, default: str | None = None
) -> None:
    """``--format``/``--json``/``-o`` for a command printing a ``result_type``."""
    from hawkwatch.report.outputs import formats_for  # not for `run`: it writes no output

    choices = formats_for(result_type)
    default = default or choices[0]
    parser.add_argument(
        "--format",
        choices=choices,
        default=default,
        help=f"output format (default: {default})",
    )
    parser.add_argument(
        "--json", action="store_const", const="json", dest="format", help="same as --format json"
    )
    parser.add_argument(
        "-o", "--output", metavar="FILE", help="write the output here instead of stdout"
    )


def emit(result: object, args: argparse.Namespace) -> str:
    """Write ``result`` as the command line asked; returns where it went."""
    from hawkwatch.report.outputs import write_output

    return write_output(result, args.format, args.output)


def status(message: str) -> None:
    """A status line on stderr (data goes to stdout)."""
    print(f"hawkwatch: {message}", file=sys.stderr)


def add_session_arguments(parser: argparse.ArgumentParser) -> None:
    """``SESSION`` (optional: the newest) and ``--root``."""
    parser.add_argument(
        "session",
        metavar="SESSION",
        nargs="?",
        help="a session folder (hawkwatch or MTHawkeye) or a session name under --root "
        "(default: the newest session)",
    )
    parser.add_argument("--root", help="sessions folder (default: $HAWKWATCH_HOME/sessions)")


def add_symbols_argument(parser: argparse.ArgumentParser, help_text: str) -> None:
    parser.add_argument("--symbols", action="append", default=[], metavar="DIR", help=help_text)


class _DeprecatedOption(argparse.Action):
    """``-o NAME=VALUE`` in ``run`` and ``check-config``: still accepted, with a note."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        status("-o NAME=VALUE is deprecated here (-o means --output elsewhere); use -c NAME=VALUE")
        getattr(namespace, self.dest).append(values)


def add_option_arguments(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``-c/--option NAME=VALUE`` (repeatable), and the old ``-o`` spelling with a note."""
    parser.add_argument(
        "-c", "--option", action="append", default=[], metavar="NAME=VALUE", help=help_text
    )
    parser.add_argument(
        "-o", dest="option", action=_DeprecatedOption, metavar="NAME=VALUE", help=argparse.SUPPRESS
    )
