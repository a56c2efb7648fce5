"""``hawkwatch records``: a session's raw ``collection,key,value`` records."""

from __future__ import annotations

import argparse
import json
import sys

from hawkwatch.store import Session


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="PATH", help="a session folder (hawkwatch or MTHawkeye)")
    parser.add_argument("--collection", metavar="NAME", help="only this collection")
    parser.add_argument(
        "--json",
        action="store_true",
        help='JSON Lines: {"collection","key","value"} per record, stored order',
    )


def run(args: argparse.Namespace) -> int:
    session = Session.open(args.path)
    result = session.records(args.collection)
    out = sys.stdout
    if args.json:
        for record in result.records:
            out.write(json.dumps(record._asdict(), ensure_ascii=False) + "\n")
    else:
        for record in result.records:
            out.write(
                f"{record.collection}\t{record.key}\t{record.value!r}\n"
                if "\n" in record.value
                else f"{record.collection}\t{record.key}\t{record.value}\n"
            )
    out.flush()
    summary = f"{len(result.records):,} records from {session.path}"
    if result.skipped:
        first = result.skipped[0]
        summary += (
            f"; skipped {len(result.skipped):,} unreadable lines "
            f"(first: line {first.line}, {first.reason})"
        )
    print(summary, file=sys.stderr)
    return 0
