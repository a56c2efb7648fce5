"""``hawkwatch jetsam FILE``: who iOS killed for memory, and the app's memory limit."""

from __future__ import annotations

import argparse

from hawkwatch.api.jetsam import jetsam
from hawkwatch.cli._common import add_output_arguments, emit, status


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="FILE", help="a JetsamEvent .ips file (bug_type 298)")
    parser.add_argument(
        "--app",
        metavar="NAME|UUID",
        help="the app's process name or main-image UUID (default: the process killed at its "
        "per-process limit, preferring the frontmost one)",
    )
    add_output_arguments(parser, "JetsamResult")


def run(args: argparse.Namespace) -> int:
    result = jetsam(args.path, args.app)
    emit(result, args)
    if result.skipped:
        status(f"warning: {len(result.skipped)} problem(s), first: {result.skipped[0].reason}")
    if args.app and result.app is None:
        status(f"no process named {args.app!r} in {args.path}")
        return 1
    return 0
