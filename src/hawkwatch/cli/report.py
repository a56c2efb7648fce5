"""``hawkwatch report``: what happened over one run — launch, resources, events, spans."""

from __future__ import annotations

import argparse

from hawkwatch.api.report import report_warnings, session_report
from hawkwatch.api.session import load_session
from hawkwatch.cli._common import add_output_arguments, add_session_arguments, emit, status


def configure(parser: argparse.ArgumentParser) -> None:
    add_session_arguments(parser)
    add_output_arguments(parser, "SessionReport")


def run(args: argparse.Namespace) -> int:
    session = load_session(args.session, args.root)
    report = session_report(session)
    where = emit(report, args)
    if args.format == "html" and where != "stdout":
        status(f"wrote {where}: open it in a web browser (one file, no network needed)")
    problems = report_warnings(session, report)
    if problems:
        status(f"{session.path}: {'; '.join(problems)}")
    return 0
