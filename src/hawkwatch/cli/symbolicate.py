"""``hawkwatch symbolicate FILE``: a crash report with function, file and line for every frame.

Debug files come from the symbol store (``hawkwatch symbols add``) and from ``--symbols DIR``
folders searched on the fly. Text output is Apple's classic ``.crash`` layout (so an ``.ips``
becomes a readable classic report); ``--format json`` prints the crash model.
"""

from __future__ import annotations

import argparse
import json
import sys

from hawkwatch.formats.crash import read_crash
from hawkwatch.report.crash_json import crash_to_json
from hawkwatch.report.crash_text import render_crash_text
from hawkwatch.symbols import SymbolStore, images_without_debug_files, symbolic, symbolicate


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path", metavar="FILE", help="a .crash, .ips or KSCrash JSON report, or an MTHawkeye folder"
    )
    parser.add_argument(
        "--symbols",
        action="append",
        default=[],
        metavar="DIR",
        help="also search this folder (dSYMs, binaries, zips) without adding it (repeatable)",
    )
    parser.add_argument(
        "--root", metavar="DIR", help="symbol store folder (default: $HAWKWATCH_HOME/symbols)"
    )
    parser.add_argument("--format", choices=("text", "json"), default="text")


def run(args: argparse.Namespace) -> int:
    symbolic()  # names the extra to install when it is missing
    parsed = read_crash(args.path)
    for skipped in parsed.skipped:
        print(f"hawkwatch: {args.path}: line {skipped.line}: {skipped.reason}", file=sys.stderr)
    store = SymbolStore(args.root, extra=args.symbols)
    report = symbolicate(parsed.value, store)
    missing = images_without_debug_files(report, store)
    if args.format == "json":
        json.dump(crash_to_json(report, missing), sys.stdout, indent=1)
        print()
    else:
        sys.stdout.write(render_crash_text(report, missing))
    if missing:
        names = ", ".join(image.name for image in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        print(
            f"hawkwatch: no debug files for {len(missing)} image(s): {names}{more}",
            file=sys.stderr,
        )
    return 0
