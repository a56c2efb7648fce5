"""``hawkwatch report`` as a function: one session → ``SessionReport``."""

from __future__ import annotations

import linecache
from typing import Any

from hawkwatch.analysis.cpu_report import build_cpu_summary, outside_sampler_note
from hawkwatch.analysis.session_report import build_session_report
from hawkwatch.api.session import Session
from hawkwatch.formats.network_session import session_transactions
from hawkwatch.model.profile import CallTree
from hawkwatch.model.report import CpuSummary, SessionReport


def session_report(session: Session) -> SessionReport:
    """What happened over one run: launch, resources, CPU, events, spans, stalls, GC, exit.

    Stall groups show their blocking line's source text when the file is readable here; the
    flame graph draws the session's CPU profile and the waterfall its HTTP requests.
    """
    tree, source = _profile_tree(session)
    return build_session_report(
        session.records,
        session.metadata,
        name=session.name,
        source=session.source,
        skipped_lines=len(session.skipped),
        read_line=linecache.getline,
        cpu=cpu_summary(session),
        profile=tree,
        profile_source=source,
        transactions=session_transactions(session.path, session.records).value,
    )


def _profile_tree(session: Session) -> tuple[CallTree | None, str]:
    """The CPU call tree the flame graph draws (profiler windows, else high-load episodes) and
    where it came from."""
    from hawkwatch.api.profile import NoProfileError, profile

    try:
        found = profile(session)
    except NoProfileError:
        return None, ""
    return found.tree, found.source


def cpu_summary(session: Session) -> CpuSummary | None:
    """High-load episodes and profiler windows, side files included."""
    return build_cpu_summary(
        session.highload.value,
        session.profiles.value,
        start=session.start_time,
        skipped=session.side_file_problems,
        short_burn=_short_burn(session),
        outside_note=outside_sampler_note(session.metadata),
    )


def _short_burn(session: Session) -> dict[str, Any] | None:
    """The agent's note of the longest burn too short for an episode (``session.json``)."""
    cpu = session.metadata.get("cpu")
    burn = cpu.get("longest_short_burn") if isinstance(cpu, dict) else None
    return burn if isinstance(burn, dict) else None


def report_warnings(session: Session, report: SessionReport) -> list[str]:
    """What the reader should know about how complete ``report`` is (one sentence each)."""
    problems = []
    problem = session.folder.metadata_problem
    if problem:
        problems.append(problem)
    if session.skipped:
        first, count = session.skipped[0], len(session.skipped)
        problems.append(
            f"skipped {count:,} unreadable line{_s(count)} (first: line {first.line}, "
            f"{first.reason})"
        )
    unusable = sum(finding.count for finding in report.findings)
    if unusable:
        problems.append(
            f"left out {unusable:,} record{_s(unusable)} whose values could not be used "
            "(see 'Skipped records' in the report)"
        )
    return problems


def _s(count: int) -> str:
    return "" if count == 1 else "s"
