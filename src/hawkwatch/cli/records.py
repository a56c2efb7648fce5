"""``hawkwatch records [SESSION]``: a session's raw records, in stored order."""

from __future__ import annotations

import argparse

from hawkwatch.api.listing import session_records
from hawkwatch.api.session import load_session
from hawkwatch.cli._common import add_output_arguments, add_session_arguments, emit, status
from hawkwatch.report.record_listing import summary


def configure(parser: argparse.ArgumentParser) -> None:
    add_session_arguments(parser)
    parser.add_argument("--collection", metavar="NAME", help="only this collection")
    add_output_arguments(parser, "RecordListing")


def run(args: argparse.Namespace) -> int:
    result = session_records(load_session(args.session, args.root), args.collection)
    emit(result, args)
    status(summary(result))
    return 0
