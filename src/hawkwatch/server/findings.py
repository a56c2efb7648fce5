"""What an upload says went wrong, as issue hits: the same analysis the CLI runs (pure).

A session's records go through ``build_session_report`` and the network report; an iOS crash
report through the crash grouping's ``fingerprint``. Each problem becomes an ``IssueHit``: its
kind, the fingerprint that groups it across sessions, a title and culprit, and a detail document
(a representative occurrence for the API).
"""

from __future__ import annotations

import hashlib
import signal
from dataclasses import dataclass, field
from typing import Any

from hawkwatch.analysis.crash_grouping import fingerprint as crash_fingerprint
from hawkwatch.analysis.network import build_network_report
from hawkwatch.model import Record
from hawkwatch.model.crash import CrashReport
from hawkwatch.model.records import NetworkTransaction, decode_all
from hawkwatch.model.report import SessionReport

FATAL_SIGNALS = {signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGABRT}


@dataclass(frozen=True)
class IssueHit:
    kind: str
    fingerprint: str
    title: str
    culprit: str | None
    time: float
    detail: dict[str, Any] = field(default_factory=dict)


def _digest(*parts: object) -> str:
    return hashlib.sha1("\x1f".join(str(p) for p in parts).encode()).hexdigest()[:16]


def exit_kind(report: SessionReport) -> str:
    """``clean``, ``exit-code``, ``fatal-signal``, ``killed`` or ``unknown`` (no exit record)."""
    state = report.exit
    if state is None:
        return "unknown"
    if state.signal is not None:
        return "fatal-signal" if state.signal in FATAL_SIGNALS else "killed"
    if state.clean or state.exit_code == 0:
        return "clean"
    return "exit-code"


def session_hits(report: SessionReport, records: list[Record]) -> list[IssueHit]:
    start = report.session.start_time or 0.0
    hits: list[IssueHit] = []
    if report.stalls is not None:
        hits.extend(
            IssueHit(
                "stall", group.fingerprint,
                f"{group.loop or 'loop'} stalled in {group.frame}", group.frame, start,
                {"count": group.count, "max_ms": group.max_ms, "total_ms": group.total_ms,
                 "source_line": group.source_line},
            )
            for group in report.stalls.groups
        )  # fmt: skip
        for kill in report.stalls.hang_kills:
            where = kill.frame or kill.loop or "unknown place"
            hits.append(IssueHit(
                "hang-kill", _digest("hang-kill", where), f"killed while stalled in {where}",
                kill.frame, kill.time,
                {"duration_ms": kill.duration_ms, "previous_session": kill.previous_session},
            ))  # fmt: skip
    state = report.exit
    if state is not None and exit_kind(report) == "fatal-signal" and state.signal is not None:
        name = signal.Signals(state.signal).name
        detail = {"signal": state.signal, "source": state.source}
        hits.append(
            IssueHit("fatal-signal", _digest("signal", name), f"ended by {name}", None,
                     state.time, detail)
        )  # fmt: skip
    hits += _network_hits(records)
    return hits


def _network_hits(records: list[Record]) -> list[IssueHit]:
    decoded = decode_all(r for r in records if r.collection == NetworkTransaction.collection)
    requests = decoded.of(NetworkTransaction)
    if not requests:
        return []
    report = build_network_report(requests)
    hits = []
    for finding in report.findings:
        first = report.requests[finding.requests[0]]
        culprit = None
        if first.frames:
            site = first.frames[0]
            culprit = f"{site.function} ({site.file}:{site.line})"
        hits.append(IssueHit(
            "network", _digest(finding.type, first.host, first.method), finding.detail, culprit,
            first.start, {"type": finding.type, "requests": len(finding.requests)},
        ))  # fmt: skip
    return hits


def crash_hit(report: CrashReport, when: float, detail: dict[str, Any]) -> IssueHit:
    found = crash_fingerprint(report)
    # components: the exception first, then the frames that grouped it (innermost first)
    culprit = found.components[1] if len(found.components) > 1 else None
    return IssueHit("crash", found.hash, found.title, culprit, when, detail)
