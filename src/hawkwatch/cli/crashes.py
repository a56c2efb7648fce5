"""``hawkwatch crashes PATH``: the crash reports under a folder, grouped by fingerprint."""

from __future__ import annotations

import argparse

from hawkwatch.api.crashes import group_crashes
from hawkwatch.cli._common import add_output_arguments, add_symbols_argument, emit, status
from hawkwatch.report.crash_groups import summary


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path",
        metavar="PATH",
        help="a folder of .crash, .ips or KSCrash files (or one file), or of hawkwatch "
        "sessions (their Python crash records)",
    )
    parser.add_argument(
        "--frames", type=int, default=5, metavar="N", help="in-app frames per fingerprint (5)"
    )
    parser.add_argument(
        "--in-app",
        action="append",
        default=[],
        metavar="GLOB",
        help="image names that count as the app's own code (repeatable)",
    )
    parser.add_argument(
        "--not-in-app",
        action="append",
        default=None,
        metavar="GLOB",
        help="image names inside the app bundle that are not its code (default: libswift*)",
    )
    parser.add_argument(
        "--symbolicate",
        action="store_true",
        help="symbolicate every report first (symbol store), so unsymbolicated reports group "
        "by function instead of by image",
    )
    add_symbols_argument(
        parser, "also search this folder for debug files; implies --symbolicate (repeatable)"
    )
    add_output_arguments(parser, "CrashGroups")


def run(args: argparse.Namespace) -> int:
    result = group_crashes(
        args.path,
        frames=args.frames,
        in_app=args.in_app,
        not_in_app=args.not_in_app,
        symbolicate=args.symbolicate,
        symbols=args.symbols,
    )
    emit(result, args)
    status(summary(result))
    return 0 if result.reports or not result.not_read else 1
