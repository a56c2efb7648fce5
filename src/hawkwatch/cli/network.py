"""``hawkwatch network``: where a session's HTTP requests spent their time, and what went wrong."""

from __future__ import annotations

import argparse

from hawkwatch.api.network import network_report
from hawkwatch.api.session import load_session
from hawkwatch.cli._common import add_output_arguments, add_session_arguments, emit, status


def configure(parser: argparse.ArgumentParser) -> None:
    add_session_arguments(parser)
    add_output_arguments(parser, "NetworkReport")


def run(args: argparse.Namespace) -> int:
    report = network_report(load_session(args.session, args.root))
    where = emit(report, args)
    if where != "stdout":
        status(f"wrote {len(report.requests)} requests to {where}")
    return 0
