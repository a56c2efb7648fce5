"""``hawkwatch network``: where a session's HTTP requests spent their time, and what went wrong."""

from __future__ import annotations

import argparse
import importlib
import sys

from hawkwatch.analysis.network import build_network_report
from hawkwatch.cli._sessions import add_session_arguments, find_session
from hawkwatch.formats.network_session import session_transactions

RENDERERS = {"console": "hawkwatch.report.network_console", "json": "hawkwatch.report.network_json"}


def configure(parser: argparse.ArgumentParser) -> None:
    add_session_arguments(parser)
    parser.add_argument("--format", choices=sorted(RENDERERS), default="console",
                        help="output format (default: console)")  # fmt: skip
    parser.add_argument(
        "--json", action="store_const", const="json", dest="format", help="same as --format json"
    )
    parser.add_argument("-o", "--output", help="write to this file instead of standard output")


def run(args: argparse.Namespace) -> int:
    session = find_session(args.session, args.root)
    parsed = session_transactions(session.path, session.records().records)
    report = build_network_report(parsed.value, rejected=len(parsed.skipped))
    renderer = importlib.import_module(RENDERERS[args.format])
    if args.output:
        with open(args.output, "w", encoding="utf-8") as out:
            renderer.render(report, out)
        print(f"wrote {len(report.requests)} requests to {args.output}", file=sys.stderr)
    else:
        renderer.render(report, sys.stdout)
    return 0
