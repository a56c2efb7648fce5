"""``hawkwatch symbolicate FILE``: a crash report with function, file and line for every frame.

Debug files come from the symbol store (``hawkwatch symbols add``) and from ``--symbols DIR``
folders searched on the fly. Console output is Apple's classic ``.crash`` layout (so an ``.ips``
becomes a readable classic report); ``--json`` prints the crash model.
"""

from __future__ import annotations

import argparse

from hawkwatch.api.symbols import open_symbol_store, symbolicate
from hawkwatch.cli._common import add_output_arguments, add_symbols_argument, emit, status


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path", metavar="FILE", help="a .crash, .ips or KSCrash JSON report, or an MTHawkeye folder"
    )
    add_symbols_argument(
        parser, "also search this folder (dSYMs, binaries, zips) without adding it (repeatable)"
    )
    parser.add_argument(
        "--root", metavar="DIR", help="symbol store folder (default: $HAWKWATCH_HOME/symbols)"
    )
    add_output_arguments(parser, "SymbolicatedCrash")


def run(args: argparse.Namespace) -> int:
    result = symbolicate(args.path, open_symbol_store(args.root, args.symbols))
    for skipped in result.skipped:
        status(f"{args.path}: line {skipped.line}: {skipped.reason}")
    emit(result, args)
    if result.missing:
        names = ", ".join(image.name for image in result.missing[:5])
        more = f" and {len(result.missing) - 5} more" if len(result.missing) > 5 else ""
        status(f"no debug files for {len(result.missing)} image(s): {names}{more}")
    return 0
