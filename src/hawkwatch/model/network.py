"""The network report: a session's HTTP requests, per-host figures and what looks wrong (no I/O).

Built by ``hawkwatch.analysis.network.build_network_report`` from ``network-transaction``
records (hawkwatch) or MTHawkeye's ``network-transactions`` side file (iOS); rendered by
``hawkwatch.report.network_console`` and ``network_json``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from hawkwatch.model.network_rules import SLOW_REQUEST_MS
from hawkwatch.model.records.network import NetworkTransaction

NETWORK_FORMAT: Final = "hawkwatch-network"
NETWORK_VERSION: Final = 1

FindingType = Literal[
    "slow-request",
    "failing-host",
    "duplicate-request",
    "large-response",
    "blocking-client-on-loop",
    "slow-dns",
    "no-connection-reuse",
]


#: Findings that need a request's phases or call details, so see only traced requests when the
#: agent sampled: the others (slow requests, failing hosts, a blocking client on a loop's
#: thread) see every request (an untraced one is recorded when it is slow, failed or blocked).
TRACED_ONLY_FINDINGS: Final = (
    "duplicate-request", "large-response", "slow-dns", "no-connection-reuse",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class NetworkThresholds:
    """When a request or host is worth a finding; every detector's knob in one place."""

    slow_ms: float = SLOW_REQUEST_MS
    failing_min_requests: int = 3
    failing_rate: float = 0.2
    duplicate_window_s: float = 1.0
    large_response_bytes: int = 1024 * 1024
    slow_dns_ms: float = 100.0
    no_reuse_min_requests: int = 3


@dataclass(frozen=True, slots=True)
class HostStats:
    """Requests to one ``host:port``; times in ms over requests that completed.

    ``sampled``: the agent traced only some of them (head sampling); ``count``, ``errors``,
    ``error_rate``, ``p50_ms``/``p95_ms`` (from a histogram: within 25 %) and
    ``response_bytes`` then cover every request (``network-aggregate``), while ``reused`` and
    ``request_bytes`` come from the ``traced`` requests only.
    """

    host: str
    count: int
    errors: int
    error_rate: float
    p50_ms: float | None
    p95_ms: float | None
    request_bytes: int
    response_bytes: int
    reused: int
    traced: int = 0
    """Requests traced in full (their phases are known)."""
    sampled: bool = False


@dataclass(frozen=True, slots=True)
class NetworkFinding:
    """Something wrong with some requests: ``requests`` are indexes into the report's list."""

    type: FindingType
    detail: str
    requests: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class NetworkReport:
    """Requests in start order, hosts by request count, findings, and the slowest requests."""

    requests: tuple[NetworkTransaction, ...]
    hosts: tuple[HostStats, ...]
    findings: tuple[NetworkFinding, ...]
    slowest: tuple[int, ...]
    rejected: int = 0
    counted: int = 0
    """Every request the agent counted (traced or not); ``len(requests)`` without sampling."""
    sampled: bool = False
    """Some requests were not traced: the findings in ``TRACED_ONLY_FINDINGS`` saw only the
    traced ones (and the untraced ones recorded because they failed or were slow)."""
