"""``hawkwatch check-config``: the effective options and where each came from (strict)."""

from __future__ import annotations

import argparse

from hawkwatch.api.options import effective_options
from hawkwatch.cli._common import add_output_arguments, emit
from hawkwatch.config import parse_options


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-c",
        "--option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an option as 'hawkwatch run -c' would set it (repeatable)",
    )
    add_output_arguments(parser, "OptionTable")


def run(args: argparse.Namespace) -> int:
    emit(effective_options(parse_options(args.option)), args)
    return 0
