"""The JSON twin of ``hawkwatch network``: ``{"format": "hawkwatch-network", "format_version": 1,
"requests": [...], "hosts": [...], "findings": [...], "slowest": [indexes], "rejected": n}``.

Each request: ``method, url, status, http_version, library, reused, phases_ms {queue, dns, tcp,
tls, send, ttfb, receive, total}`` (null when a phase did not happen), ``request_bytes,
response_bytes, error, failed_phase`` plus ``start, host, thread, task, on_loop_thread, frames
[{function, file, line}] (innermost first), redirect_to, traced`` (false: not traced by the
agent's sampling, recorded because it failed or was slow: only ``total`` is known of its
phases). Findings name requests by index. Each host adds ``traced`` and ``sampled`` (its
figures cover every request, counted by the agent, though only ``traced`` were traced); the
report adds ``counted`` (every request) and ``sampled``, and, when sampled,
``traced_only_findings``: the finding types that saw only traced requests.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import msgspec

from hawkwatch.model.network import (
    NETWORK_FORMAT,
    NETWORK_VERSION,
    TRACED_ONLY_FINDINGS,
    NetworkReport,
)
from hawkwatch.model.records import NetworkTransaction


def request_dict(request: NetworkTransaction) -> dict[str, Any]:
    data: dict[str, Any] = msgspec.to_builtins(request)
    data["phases_ms"] = msgspec.to_builtins(request.phases_ms)
    data["frames"] = [
        {"function": site.function, "file": site.file, "line": site.line}
        for site in request.frames
    ]
    for name in ("status", "http_version", "reused", "request_bytes", "response_bytes", "error",
                 "failed_phase"):  # fmt: skip
        data.setdefault(name, None)
    data["traced"] = request.traced
    return data


def to_json_dict(report: NetworkReport) -> dict[str, Any]:
    return {
        "format": NETWORK_FORMAT,
        "format_version": NETWORK_VERSION,
        "requests": [request_dict(r) for r in report.requests],
        "hosts": [dataclasses.asdict(h) for h in report.hosts],
        "findings": [
            {"type": f.type, "detail": f.detail, "requests": list(f.requests)}
            for f in report.findings
        ],
        "slowest": list(report.slowest),
        "rejected": report.rejected,
        "counted": report.counted,
        "sampled": report.sampled,
        "traced_only_findings": list(TRACED_ONLY_FINDINGS) if report.sampled else [],
    }

