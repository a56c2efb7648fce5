"""``hawkwatch sessions``: which runs were recorded, and how big they are."""

from __future__ import annotations

import argparse

from hawkwatch.api.listing import list_sessions
from hawkwatch.cli._common import add_output_arguments, emit, status


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", help="sessions folder (default: $HAWKWATCH_HOME/sessions)")
    add_output_arguments(parser, "SessionList")


def run(args: argparse.Namespace) -> int:
    result = list_sessions(args.root)
    for row in result.sessions:
        if row.error is not None:
            status(row.error)
    emit(result, args)
    if not result.sessions:
        status(f"no sessions under {result.root}")
    return 1 if any(row.error is not None for row in result.sessions) else 0  # as ls does
