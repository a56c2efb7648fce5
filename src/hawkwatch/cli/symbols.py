"""``hawkwatch symbols add PATH...`` / ``hawkwatch symbols list``: the debug-file store."""

from __future__ import annotations

import argparse

from hawkwatch.api.symbols import add_debug_files, list_debug_files
from hawkwatch.cli._common import add_output_arguments, emit, status
from hawkwatch.errors import HawkwatchError


def configure(parser: argparse.ArgumentParser) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--root", metavar="DIR", help="symbol store folder (default: $HAWKWATCH_HOME/symbols)"
    )
    add_output_arguments(common, "DebugFileList")
    sub = parser.add_subparsers(dest="symbols_command", metavar="ACTION", required=True)
    add = sub.add_parser(
        "add",
        parents=[common],
        help="index dSYM bundles, Mach-O / ELF files, folders or zip archives of them",
    )
    add.add_argument("paths", nargs="+", metavar="PATH")
    sub.add_parser("list", parents=[common], help="the stored debug files, one per debug id")


def run(args: argparse.Namespace) -> int:
    if args.symbols_command == "list":
        result = list_debug_files(args.root)
        emit(result, args)
        status(f"{len(result.files)} debug file(s) in {result.root}")
        return 0
    result = add_debug_files(args.paths, args.root)
    emit(result, args)
    for source, reason in result.skipped:
        status(f"skipped {source}: {reason}")
    status(
        f"{len(result.files)} debug file(s) added to {result.root}, {len(result.skipped)} skipped"
    )
    if not result.files and result.skipped:
        raise HawkwatchError("no debug file with a UUID or build id found in the given paths")
    return 0
