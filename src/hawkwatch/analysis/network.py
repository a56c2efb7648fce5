"""Requests → per-host figures and findings (pure): the founding article's and MTHawkeye's checks.

Detectors (thresholds in ``NetworkThresholds``): slow requests (naming the phase that dominates),
failing hosts (errors and 5xx over a rate), duplicate requests (same method and URL within a
window), large responses, blocking clients on an event loop's thread (a stall cause), slow DNS,
and hosts whose connections are never reused.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from hawkwatch.analysis.series import quantile, weighted_quantile
from hawkwatch.model.network import HostStats, NetworkFinding, NetworkReport, NetworkThresholds
from hawkwatch.model.network_rules import BLOCKING_LIBRARIES
from hawkwatch.model.records.network import PHASES, NetworkTransaction
from hawkwatch.model.records.network_aggregate import NetworkAggregate, bucket_bounds

_TIMED_PHASES: Final = tuple(phase for phase in PHASES if phase != "total")


def build_network_report(
    transactions: Iterable[NetworkTransaction],
    thresholds: NetworkThresholds | None = None,
    *,
    max_slowest: int = 10,
    rejected: int = 0,
    aggregates: Iterable[NetworkAggregate] = (),
) -> NetworkReport:
    """The report of a session's requests (``thresholds``: the detectors' defaults if None);
    with the agent's ``aggregates``, per-host figures count every request, traced or not."""
    thresholds = thresholds or NetworkThresholds()
    requests = tuple(sorted(transactions, key=lambda t: (t.start, t.index)))
    hosts = host_stats(requests, tuple(aggregates))
    slowest = sorted(
        (i for i, t in enumerate(requests) if t.phases_ms.total is not None),
        key=lambda i: -(requests[i].phases_ms.total or 0.0),
    )
    return NetworkReport(
        requests=requests,
        hosts=hosts,
        findings=tuple(find_problems(requests, thresholds, hosts)),
        slowest=tuple(slowest[:max_slowest]),
        rejected=rejected,
        counted=sum(h.count for h in hosts),
        sampled=any(h.sampled for h in hosts),
    )


def failed(transaction: NetworkTransaction) -> bool:
    """An error, or a server error status (5xx)."""
    return transaction.error is not None or (transaction.status or 0) >= 500


def host_stats(
    requests: tuple[NetworkTransaction, ...], aggregates: tuple[NetworkAggregate, ...] = ()
) -> tuple[HostStats, ...]:
    """Per-host figures: from the records, or, for a host whose aggregates counted requests
    that were not traced, count, errors, quantiles and bytes received from the aggregates."""
    by_host: dict[str, list[NetworkTransaction]] = {}
    for request in requests:
        by_host.setdefault(request.host, []).append(request)
    counted: dict[str, list[NetworkAggregate]] = {}
    for aggregate in aggregates:
        counted.setdefault(aggregate.host, []).append(aggregate)
        by_host.setdefault(aggregate.host, [])
    stats = []
    for host, members in by_host.items():
        traced = sum(1 for m in members if m.traced)
        folds = counted.get(host, [])
        if sum(f.count for f in folds) > traced:
            stats.append(_sampled_host(host, members, folds, traced))
            continue
        totals = [m.phases_ms.total for m in members if m.error is None and m.phases_ms.total]
        errors = sum(1 for m in members if failed(m))
        stats.append(
            HostStats(
                host=host,
                count=len(members),
                errors=errors,
                error_rate=errors / len(members),
                p50_ms=quantile(totals, 0.5) if totals else None,
                p95_ms=quantile(totals, 0.95) if totals else None,
                request_bytes=sum(m.request_bytes or 0 for m in members),
                response_bytes=sum(m.response_bytes or 0 for m in members),
                reused=sum(1 for m in members if m.reused),
                traced=traced,
            )
        )
    stats.sort(key=lambda s: (-s.count, s.host))
    return tuple(stats)


def _sampled_host(
    host: str, members: list[NetworkTransaction], folds: list[NetworkAggregate], traced: int
) -> HostStats:
    count = sum(f.count for f in folds)
    errors = sum(f.errors for f in folds)
    middles: list[float] = []  # each bucket's middle (ms), weighted by its requests
    weights: list[float] = []
    for fold in folds:
        if fold.status_class == "failed":
            continue  # as without sampling: times of requests that completed
        for bucket, number in fold.histogram:
            low, high = bucket_bounds(bucket)
            middles.append((low + high) / 2000)
            weights.append(float(number))
    return HostStats(
        host=host,
        count=count,
        errors=errors,
        error_rate=errors / count,
        p50_ms=weighted_quantile(middles, weights, 0.5) if middles else None,
        p95_ms=weighted_quantile(middles, weights, 0.95) if middles else None,
        request_bytes=sum(m.request_bytes or 0 for m in members),
        response_bytes=sum(f.response_bytes for f in folds),
        reused=sum(1 for m in members if m.reused),
        traced=traced,
        sampled=True,
    )


def dominant_phase(transaction: NetworkTransaction) -> tuple[str, float] | None:
    """The phase that took longest, and its milliseconds."""
    timed = [(getattr(transaction.phases_ms, p), p) for p in _TIMED_PHASES]
    present = [(ms, phase) for ms, phase in timed if ms is not None]
    if not present:
        return None
    ms, phase = max(present)
    return phase, ms


def find_problems(
    requests: tuple[NetworkTransaction, ...],
    thresholds: NetworkThresholds,
    hosts: tuple[HostStats, ...] = (),
) -> list[NetworkFinding]:
    """What looks wrong; ``hosts`` (``host_stats``): the failing-host rule counts every request
    of a sampled host, not only the recorded ones."""
    findings: list[NetworkFinding] = []
    findings += _slow(requests, thresholds)
    findings += _failing_hosts(requests, thresholds, {h.host: h for h in hosts if h.sampled})
    findings += _duplicates(requests, thresholds)
    for i, request in enumerate(requests):
        size = request.response_bytes or 0
        if size >= thresholds.large_response_bytes:
            findings.append(NetworkFinding(
                "large-response", f"{request.method} {request.url}: {size / 1e6:.1f} MB", (i,)
            ))  # fmt: skip
        if request.on_loop_thread and request.library in BLOCKING_LIBRARIES:
            findings.append(NetworkFinding(
                "blocking-client-on-loop",
                f"{request.library} {request.method} {request.url} on the event loop's thread"
                f" ({_where(request)}): every task waited {_ms(request.phases_ms.total)}",
                (i,),
            ))  # fmt: skip
        dns = request.phases_ms.dns
        if dns is not None and dns >= thresholds.slow_dns_ms:
            findings.append(NetworkFinding(
                "slow-dns", f"{request.host}: name resolution took {dns:.0f} ms", (i,)
            ))  # fmt: skip
    findings += _never_reused(requests, thresholds)
    return findings


def _slow(requests: tuple[NetworkTransaction, ...], th: NetworkThresholds) -> list[NetworkFinding]:
    found = []
    for i, request in enumerate(requests):
        total = request.phases_ms.total
        if total is None or total < th.slow_ms:
            continue
        dominant = dominant_phase(request)
        phase = "" if dominant is None else f", mostly {dominant[0]} ({dominant[1]:.0f} ms)"
        found.append(NetworkFinding(
            "slow-request", f"{request.method} {request.url}: {total:.0f} ms{phase}", (i,)
        ))  # fmt: skip
    return found


def _failing_hosts(
    requests: tuple[NetworkTransaction, ...],
    th: NetworkThresholds,
    sampled: dict[str, HostStats],
) -> list[NetworkFinding]:
    by_host: dict[str, list[int]] = {host: [] for host in sampled}
    for i, request in enumerate(requests):
        by_host.setdefault(request.host, []).append(i)
    found = []
    for host, indexes in by_host.items():
        bad = [i for i in indexes if failed(requests[i])]
        stats = sampled.get(host)
        count, errors = (len(indexes), len(bad)) if stats is None else (stats.count, stats.errors)
        if count >= th.failing_min_requests and errors / count >= th.failing_rate:
            kinds = sorted({requests[i].error or f"HTTP {requests[i].status}" for i in bad})
            found.append(NetworkFinding(
                "failing-host",
                f"{host}: {errors} of {count} requests failed ({', '.join(kinds) or '5xx'})",
                tuple(bad),
            ))  # fmt: skip
    return found


def _duplicates(
    requests: tuple[NetworkTransaction, ...], th: NetworkThresholds
) -> list[NetworkFinding]:
    """Runs of the same method and URL each starting within the window of the previous one."""
    by_call: dict[tuple[str, str, str | None], list[int]] = {}
    for i, request in enumerate(requests):
        if request.redirect_to is None:  # same path, same query values (by digest)
            call = (request.method, request.url, request.query_digest)
            by_call.setdefault(call, []).append(i)
    found = []
    for (method, url, _query), indexes in by_call.items():
        runs = [[indexes[0]]]
        for i in indexes[1:]:
            if requests[i].start - requests[runs[-1][-1]].start <= th.duplicate_window_s:
                runs[-1].append(i)
            else:
                runs.append([i])
        for run in runs:
            if len(run) > 1:
                span = requests[run[-1]].start - requests[run[0]].start
                found.append(NetworkFinding(
                    "duplicate-request",
                    f"{method} {url}: {len(run)} times within {span:.2f} s",
                    tuple(run),
                ))  # fmt: skip
    return found


def _never_reused(
    requests: tuple[NetworkTransaction, ...], th: NetworkThresholds
) -> list[NetworkFinding]:
    by_host: dict[str, list[int]] = {}
    for i, request in enumerate(requests):
        if request.reused is not None:
            by_host.setdefault(request.host, []).append(i)
    return [
        NetworkFinding(
            "no-connection-reuse",
            f"{host}: {len(indexes)} requests, each on a new connection (use a session/client)",
            tuple(indexes),
        )
        for host, indexes in by_host.items()
        if len(indexes) >= th.no_reuse_min_requests
        and not any(requests[i].reused for i in indexes)
    ]


def _where(request: NetworkTransaction) -> str:
    if not request.frames:
        return "unknown caller"
    site = request.frames[0]
    return f"{site.function} at {site.file}:{site.line}"


def _ms(value: float | None) -> str:
    return "?" if value is None else f"{value:.0f} ms"
