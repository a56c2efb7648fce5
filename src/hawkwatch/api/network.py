"""A session's HTTP requests as a ``NetworkReport`` (``hawkwatch network``)."""

from __future__ import annotations

from hawkwatch.analysis.network import build_network_report
from hawkwatch.api.session import Session
from hawkwatch.formats.network_session import session_aggregates, session_transactions
from hawkwatch.model.network import NetworkReport, NetworkThresholds

__all__ = ["NetworkReport", "network_report"]


def network_report(session: Session, thresholds: NetworkThresholds | None = None) -> NetworkReport:
    """Requests, per-host figures and findings, from the session's ``network-transaction``
    records (and ``network-aggregate``: every request counted, when the agent sampled) and,
    for MTHawkeye folders, its ``network-transactions`` side file."""
    parsed = session_transactions(session.path, session.records)
    counted = session_aggregates(session.records)
    return build_network_report(
        parsed.value,
        thresholds,
        rejected=len(parsed.skipped) + len(counted.skipped),
        aggregates=counted.value,
    )
