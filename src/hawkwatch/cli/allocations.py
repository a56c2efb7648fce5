"""``hawkwatch allocations``: what was live in an iOS app's memory, by stack and category —
from a MallocStackLogging log folder, a ``.memgraph`` or an MTHawkeye Allocations folder."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TextIO

from hawkwatch.analysis.allocations import build_allocation_report
from hawkwatch.errors import HawkwatchError
from hawkwatch.formats.allocations import read_allocations
from hawkwatch.model.allocations import LiveAllocations, call_tree, with_image_names
from hawkwatch.report.allocations import render_console, render_json

FORMATS = ("console", "json", "collapsed", "speedscope", "svg")


class OutputError(HawkwatchError):
    """The output file cannot be written."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path",
        metavar="PATH",
        help="a MallocStackLogging folder (stack-logs.*.index + MslUniquingTable), an .index "
        "file, a .memgraph, or an MTHawkeye allocations/ or session folder",
    )
    parser.add_argument(
        "--at", type=int, metavar="RECORD", help="MSL logs: what was live after this many records"
    )
    parser.add_argument(
        "--since",
        type=int,
        metavar="RECORD",
        help="MSL logs: also show which stacks grew between this record and --at (or the end)",
    )
    parser.add_argument(
        "--symbols",
        action="append",
        default=[],
        metavar="DIR",
        help="also search this folder for dSYMs (repeatable); frames are symbolicated through "
        "the symbol store whenever the symbols extra is installed",
    )
    parser.add_argument("--format", choices=FORMATS, default="console", help="default: console")
    parser.add_argument("--json", action="store_true", help="same as --format json")
    parser.add_argument(
        "--weight",
        choices=("bytes", "count"),
        default="bytes",
        help="flame graph exports: weigh stacks by live bytes (default) or allocation count",
    )
    parser.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")


def run(args: argparse.Namespace) -> int:
    for option, value in (("--at", args.at), ("--since", args.since)):
        if value is not None and value < 0:
            raise OutputError(f"{option} {value}: a record number is ≥ 0")
    parsed = read_allocations(args.path, at=args.at, since=args.since)
    live = _symbolicated(parsed.value, args.symbols)
    skipped = [entry.reason for entry in parsed.skipped]
    output_format = "json" if args.json else args.format
    if args.output:
        try:
            with Path(args.output).open("w", encoding="utf-8") as file:
                _render(live, skipped, output_format, args.weight, file)
        except OSError as exc:
            raise OutputError(f"{args.output}: cannot write: {exc.strerror}") from exc
        where = args.output
    else:
        _render(live, skipped, output_format, args.weight, sys.stdout)
        sys.stdout.flush()
        where = "stdout"
    if output_format != "console":
        note = f"; skipped: {len(skipped)}" if skipped else ""
        print(
            f"hawkwatch: wrote {where}: {live.total_bytes:,} live bytes in "
            f"{live.total_count:,} allocations ({live.source}){note}",
            file=sys.stderr,
        )
    return 0


def _render(
    live: LiveAllocations, skipped: list[str], output_format: str, weight: str, file: TextIO
) -> None:
    if output_format in ("console", "json"):
        report = build_allocation_report(live, skipped=skipped)
        (render_console if output_format == "console" else render_json)(report, file)
        return
    tree = call_tree(live, weight=weight, name=f"{live.source} live {weight}")
    if output_format == "speedscope":
        from hawkwatch.formats.speedscope import to_json_dict

        document = to_json_dict(tree)
        document["profiles"][0]["unit"] = "bytes" if weight == "bytes" else "none"
        json.dump(document, file, separators=(",", ":"))
        file.write("\n")
        return
    from hawkwatch.formats.profile_exports import get_exporter

    get_exporter(output_format).render(tree, file)


def _symbolicated(live: LiveAllocations, folders: list[str]) -> LiveAllocations:
    """Frames named through the symbol store; image names only when that cannot be done."""
    if not live.images:
        if folders:
            print(
                "hawkwatch: no image list (dyld-images or Binary Images:) beside the artifact: "
                "frames stay addresses",
                file=sys.stderr,
            )
        return live
    try:
        from hawkwatch.symbols import Symbolicator, SymbolStore, symbolic
        from hawkwatch.symbols.allocations import symbolicate_allocations

        symbolic()
    except HawkwatchError as exc:
        print(f"hawkwatch: frames stay addresses: {exc}", file=sys.stderr)
        return with_image_names(live)
    return symbolicate_allocations(live, Symbolicator(SymbolStore(None, extra=folders)))
