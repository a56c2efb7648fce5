"""``hawkwatch report``: what happened over one run — launch, resources, events, spans."""

from __future__ import annotations

import argparse
import linecache
import sys

from hawkwatch.analysis.session_report import build_session_report
from hawkwatch.cli._sessions import add_session_arguments, find_session
from hawkwatch.model import Record
from hawkwatch.model.report import CpuSummary
from hawkwatch.report import RENDERERS, get_renderer
from hawkwatch.store import Session


def configure(parser: argparse.ArgumentParser) -> None:
    add_session_arguments(parser)
    parser.add_argument(
        "--format",
        choices=sorted(RENDERERS),
        default="console",
        help="output format (default: console)",
    )
    parser.add_argument(
        "--json", action="store_const", const="json", dest="format", help="same as --format json"
    )


def run(args: argparse.Namespace) -> int:
    session = find_session(args.session, args.root)
    read = session.records()
    cpu = _cpu_summary(session, read.records)
    report = build_session_report(
        read.records,
        session.metadata,
        name=session.name,
        source="hawkwatch" if session.is_hawkwatch else "mthawkeye",
        skipped_lines=len(read.skipped),
        read_line=linecache.getline,
        cpu=cpu,
    )
    get_renderer(args.format).render(report, sys.stdout)
    sys.stdout.flush()
    problems = []
    if session.metadata_problem:
        problems.append(session.metadata_problem)
    if read.skipped:
        first = read.skipped[0]
        problems.append(
            f"skipped {len(read.skipped):,} unreadable line{'s' if len(read.skipped) != 1 else ''} "
            f"(first: line {first.line}, {first.reason})"
        )
    unusable = sum(finding.count for finding in report.findings)
    if unusable:
        problems.append(
            f"left out {unusable:,} record{'s' if unusable != 1 else ''} whose values could not "
            "be used (see 'Skipped records' in the report)"
        )
    if problems:
        print(f"hawkwatch: {session.path}: {'; '.join(problems)}", file=sys.stderr)
    return 0


def _cpu_summary(session: Session, records: list[Record]) -> CpuSummary | None:
    """High-load episodes and profiler windows, side files included (formats read them)."""
    from hawkwatch.analysis.cpu_report import build_cpu_summary
    from hawkwatch.formats.cpu_profile import read_profiles
    from hawkwatch.formats.hawkeye_cpu import read_highload

    episodes = read_highload(session.path, records, is_hawkwatch=session.is_hawkwatch)
    profiles = read_profiles(session.path, records)
    return build_cpu_summary(
        episodes.value,
        profiles.value,
        start=session.start_time,
        skipped=len(episodes.skipped) + len(profiles.skipped),
    )
