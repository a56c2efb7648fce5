"""``hawkwatch allocations``: what was live in an iOS app's memory, by stack and category —
from a MallocStackLogging log folder, a ``.memgraph`` or an MTHawkeye Allocations folder."""

from __future__ import annotations

import argparse

from hawkwatch.api.allocations import allocations
from hawkwatch.cli._common import add_output_arguments, add_symbols_argument, emit, status


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
    add_symbols_argument(
        parser, "also search this folder for dSYMs (repeatable); frames are symbolicated "
        "through the symbol store whenever the symbols extra is installed",
    )  # fmt: skip
    parser.add_argument(
        "--weight",
        choices=("bytes", "count"),
        default="bytes",
        help="flame graph exports: weigh stacks by live bytes (default) or allocation count",
    )
    add_output_arguments(parser, "AllocationResult")


def run(args: argparse.Namespace) -> int:
    result = allocations(
        args.path, at=args.at, since=args.since, symbols=args.symbols, weight=args.weight
    )
    for note in result.notes:
        status(note)
    where = emit(result, args)
    if args.format != "console":
        live, skipped = result.live, result.report.skipped
        note = f"; skipped: {len(skipped)}" if skipped else ""
        status(
            f"wrote {where}: {live.total_bytes:,} live bytes in {live.total_count:,} "
            f"allocations ({live.source}){note}"
        )
    return 0
