"""MTHawkeye's network transactions as hawkwatch's ``NetworkTransaction``, both ways.

Reading (``formats/hawkeye.md`` §5.2): the raw objects come from ``formats.hawkeye``'s reader of
``network-transactions`` and ``hugeNetworkRecords``; the phases are computed from the last
network-load transaction metric of the task (``detectors.md`` §6.3–6.4), where every date is Unix
seconds and 0 means "did not happen". URLs are redacted like the agent's.

Writing: the same AppenderFile layout MTHawkeye writes (a ``key,value`` header line, then one
compact JSON object per transaction; 16 KiB or more goes to ``hugeNetworkRecords``), with task
metrics rebuilt from the phases, so a hawkwatch session's requests open in MTHawkeye's viewers.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Final

from hawkwatch.formats.hawkeye import (
    HUGE_NETWORK_RECORDS_NAME,
    HUGE_RECORD_DELIMITER,
    NETWORK_HEADER,
    NETWORK_TRANSACTIONS_NAME,
    read_network_transactions,
)
from hawkwatch.model import Parsed, Skipped
from hawkwatch.model.records import CallSite, NetworkTransaction, Phases
from hawkwatch.model.urls import host_of, redact_url
from hawkwatch.store.appender import AppenderFile

HUGE_RECORD_BYTES: Final = 16_384
#: Under this MTHawkeye's formatter may truncate a line (hawkeye.md §5.2 "code bug"); so larger
#: objects go to ``hugeNetworkRecords``.
_SAFE_LINE_BYTES: Final = 16_254
_NETWORK_LOAD: Final = 1
_PROTOCOLS: Final = {"h1": "1.1", "http/1.1": "1.1", "http/1.0": "1.0", "h2": "2", "h3": "3"}


def transactions_from_hawkeye(raw: list[dict[str, Any]]) -> Parsed[list[NetworkTransaction]]:
    """Typed transactions from MTHawkeye's objects, oldest first; unusable ones skipped."""
    found: list[NetworkTransaction] = []
    skipped: list[Skipped] = []
    for number, item in enumerate(raw, start=1):
        try:
            found.append(_transaction(item))
        except (TypeError, ValueError, KeyError) as exc:
            skipped.append(Skipped(number, f"network transaction: {exc}"))
    found.sort(key=lambda t: (t.start, t.index))
    return Parsed(found, skipped)


def read_hawkeye_transactions(folder: str | os.PathLike[str]) -> Parsed[list[NetworkTransaction]]:
    """A session folder's MTHawkeye network transactions, typed."""
    raw = read_network_transactions(folder)
    typed = transactions_from_hawkeye(raw.value)
    return Parsed(typed.value, raw.skipped + typed.skipped)


def _transaction(item: dict[str, Any]) -> NetworkTransaction:
    request = item.get("request") or {}
    response = item.get("response") or {}
    url = str(request.get("url") or "")
    if not url:
        raise ValueError("no request url")
    start = float(item.get("start_time") or 0)
    metric = _last_network_load(item.get("task_metrics") or {})
    phases = _phases(metric, item)
    status = response.get("status_code")
    error = item.get("error")
    return NetworkTransaction(
        start=start,
        index=int(item.get("index") or 0),
        method=str(request.get("http_method") or "GET"),
        url=redact_url(url),
        host=host_of(url),
        library=str(item.get("request_mechanism") or "NSURLSession"),
        status=int(status) if isinstance(status, int | float) and status > 0 else None,
        http_version=_protocol(metric),
        reused=None if not metric else not _date(metric, "conn_start"),
        phases_ms=phases,
        request_bytes=_count(item.get("request_length")),
        response_bytes=_count(response.get("recv_data_len") or item.get("response_length")),
        error=str(error) if error else None,
    )


def _protocol(metric: dict[str, Any]) -> str | None:
    if not metric:
        return None
    return _PROTOCOLS.get(str(metric.get("protocol") or "h1").lower())


def _last_network_load(task_metrics: dict[str, Any]) -> dict[str, Any]:
    metrics = task_metrics.get("transaction_metrics")
    if not isinstance(metrics, list):
        return {}
    loads = [m for m in metrics if isinstance(m, dict) and m.get("type") == _NETWORK_LOAD]
    return loads[-1] if loads else {}


def _date(metric: dict[str, Any], name: str) -> float | None:
    value = metric.get(name)
    return float(value) if isinstance(value, int | float) and value > 0 else None


def _phases(metric: dict[str, Any], item: dict[str, Any]) -> Phases:
    def span(begin: float | None, end: float | None) -> float | None:
        return None if begin is None or end is None else round(max(end - begin, 0) * 1000, 3)

    d = {name: _date(metric, name) for name in (
        "fetch_start", "dns_start", "dns_end", "conn_start", "conn_end", "sec_conn_start",
        "sec_conn_end", "req_start", "req_end", "res_start", "res_end",
    )}  # fmt: skip
    duration = item.get("duration")
    total = (
        round(float(duration) * 1000, 3)
        if isinstance(duration, int | float) and duration > 0
        else span(d["fetch_start"], d["res_end"])
    )
    return Phases(
        queue=span(d["fetch_start"], d["dns_start"] or d["conn_start"] or d["req_start"]),
        dns=span(d["dns_start"], d["dns_end"]),
        tcp=span(d["conn_start"], d["sec_conn_start"] or d["conn_end"]),
        tls=span(d["sec_conn_start"], d["sec_conn_end"]),
        send=span(d["req_start"], d["req_end"]),
        ttfb=span(d["req_end"], d["res_start"]),
        receive=span(d["res_start"], d["res_end"]),
        total=total,
    )


def _count(value: object) -> int | None:
    return int(value) if isinstance(value, int | float) and value >= 0 else None


# -- writing ------------------------------------------------------------------------------------


def hawkeye_object(transaction: NetworkTransaction) -> dict[str, Any]:
    """MTHawkeye's JSON object for one transaction (task metrics rebuilt from the phases)."""
    p = transaction.phases_ms
    clock = transaction.start
    dates: dict[str, float] = {}

    def advance(begin: str, end: str, ms: float | None) -> None:
        nonlocal clock
        if ms is None:
            return
        dates[begin], clock = clock, clock + ms / 1000
        dates[end] = clock

    dates["fetch_start"] = clock
    clock += (p.queue or 0) / 1000
    advance("dns_start", "dns_end", p.dns)
    connect_start = clock
    advance("conn_start", "sec_conn_start" if p.tls is not None else "conn_end", p.tcp)
    advance("sec_conn_start", "sec_conn_end", p.tls)
    if p.tls is not None and p.tcp is not None:
        dates["conn_start"], dates["conn_end"] = connect_start, clock
    advance("req_start", "req_end", p.send)
    advance("req_end", "res_start", p.ttfb)
    advance("res_start", "res_end", p.receive)
    metric: dict[str, Any] = {"request_url": transaction.url, "type": _NETWORK_LOAD}
    for name in ("fetch_start", "dns_start", "dns_end", "conn_start", "conn_end",
                 "sec_conn_start", "sec_conn_end", "req_start", "req_end", "res_start", "res_end"):
        metric[name] = dates.get(name, 0)  # fmt: skip
    metric["protocol"] = "h2" if transaction.http_version == "2" else "h1"
    total_s = (p.total or 0) / 1000
    return {
        "id": str(transaction.index),
        "index": transaction.index,
        "request_mechanism": transaction.library,
        "start_time": transaction.start,
        "duration": total_s,
        "latency": (dates.get("res_start", transaction.start) - transaction.start),
        "error": transaction.error or "",
        "request": {"url": transaction.url, "http_method": transaction.method, "headers": {}},
        "request_length": transaction.request_bytes or 0,
        "response_length": transaction.response_bytes or 0,
        "response": {
            "status_code": transaction.status or 0,
            "recv_data_len": transaction.response_bytes or 0,
            "headers": {},
        },
        "task_metrics": {
            "redirect_count": 0,
            "task_interval": {
                "start": transaction.start,
                "end": transaction.start + total_s,
                "duration": total_s,
            },
            "transaction_metrics": [metric],
        },
    }


def write_hawkeye_transactions(
    folder: str | os.PathLike[str], transactions: list[NetworkTransaction]
) -> None:
    """Write ``network-transactions`` (and ``hugeNetworkRecords``) into ``folder``."""
    folder = Path(folder)
    huge: list[bytes] = []
    with AppenderFile(folder, NETWORK_TRANSACTIONS_NAME) as appender:
        appender.append(NETWORK_HEADER)
        for transaction in transactions:
            line = json.dumps(hawkeye_object(transaction), separators=(",", ":")).encode()
            if len(line) >= _SAFE_LINE_BYTES:
                huge.append(line + HUGE_RECORD_DELIMITER)
            else:
                appender.append(line)
    if huge:
        with (folder / HUGE_NETWORK_RECORDS_NAME).open("ab") as out:
            out.write(b"".join(huge))


__all__ = [
    "CallSite",
    "hawkeye_object",
    "read_hawkeye_transactions",
    "transactions_from_hawkeye",
    "write_hawkeye_transactions",
]
