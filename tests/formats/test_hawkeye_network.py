"""MTHawkeye's network-transactions file: read into typed transactions, and written back."""

from __future__ import annotations

import json
from pathlib import Path

from hawkwatch.formats.hawkeye import read_network_transactions
from hawkwatch.formats.hawkeye_network import (
    read_hawkeye_transactions,
    transactions_from_hawkeye,
    write_hawkeye_transactions,
)
from hawkwatch.formats.network_session import session_transactions
from hawkwatch.model.records import NetworkTransaction, Phases
from hawkwatch.store.appender import AppenderFile

T0 = 1_554_251_562.0

IOS_TRANSACTION = {
    "id": "7", "index": 7, "request_mechanism": "NSURLSession", "start_time": T0,
    "duration": 0.5, "latency": 0.3, "error": "",
    "request": {"url": "https://api.test/feed?uid=42", "http_method": "POST", "headers": {}},
    "request_length": 120, "response_length": 2048,
    "response": {"status_code": 200, "recv_data_len": 2048, "headers": {}},
    "task_metrics": {"redirect_count": 0, "transaction_metrics": [
        {"type": 3, "fetch_start": T0, "res_end": T0 + 0.01},
        {"type": 1, "fetch_start": T0, "dns_start": T0 + 0.01, "dns_end": T0 + 0.05,
         "conn_start": T0 + 0.05, "conn_end": T0 + 0.2, "sec_conn_start": T0 + 0.1,
         "sec_conn_end": T0 + 0.2, "req_start": T0 + 0.2, "req_end": T0 + 0.21,
         "res_start": T0 + 0.41, "res_end": T0 + 0.5, "protocol": "h2"},
    ]},
}  # fmt: skip


def test_phases_come_from_the_last_network_load_metric_with_zero_as_missing() -> None:
    reused = dict(IOS_TRANSACTION, index=8)
    reused["task_metrics"] = {"transaction_metrics": [
        {"type": 1, "fetch_start": T0, "dns_start": 0, "dns_end": 0, "conn_start": 0,
         "conn_end": 0, "sec_conn_start": 0, "sec_conn_end": 0, "req_start": T0 + 0.001,
         "req_end": T0 + 0.002, "res_start": T0 + 0.1, "res_end": T0 + 0.12},
    ]}  # fmt: skip
    parsed = transactions_from_hawkeye([IOS_TRANSACTION, reused, {"index": 9}])
    assert [s.reason for s in parsed.skipped] == ["network transaction: no request url"]
    first, second = parsed.value
    assert (first.method, first.status, first.http_version, first.reused) == (
        "POST",
        200,
        "2",
        False,
    )
    assert first.url == "https://api.test/feed?uid=[redacted]"
    assert first.phases_ms == Phases(queue=10.0, dns=40.0, tcp=50.0, tls=100.0, send=10.0,
                                     ttfb=200.0, receive=90.0, total=500.0)  # fmt: skip
    assert (second.reused, second.phases_ms.dns, second.phases_ms.tcp) == (True, None, None)
    assert first.response_bytes == 2048 and first.library == "NSURLSession"


def test_written_transactions_read_back_equal_in_mthawkeyes_layout(tmp_path: Path) -> None:
    ours = [
        NetworkTransaction(
            start=T0, index=1, method="GET", url="https://api.test/a", host="api.test:443",
            library="requests", status=200, http_version="1.1", reused=False,
            phases_ms=Phases(queue=1.0, dns=2.0, tcp=3.0, tls=4.0, send=5.0, ttfb=6.0,
                             receive=7.0, total=28.0),
            request_bytes=100, response_bytes=2000,
        ),
        NetworkTransaction(
            start=T0 + 1, index=2, method="GET", url="http://api.test/b?q=[redacted]",
            host="api.test:80", library="httpx", status=404, http_version="1.1", reused=True,
            phases_ms=Phases(queue=1.0, send=1.0, ttfb=2.0, receive=1.0, total=5.0),
            request_bytes=90, response_bytes=10,
        ),
    ]  # fmt: skip
    write_hawkeye_transactions(tmp_path, ours)
    raw = read_network_transactions(tmp_path)
    assert raw.skipped == [] and [item["index"] for item in raw.value] == [2, 1]  # newest first
    back = read_hawkeye_transactions(tmp_path)
    assert back.skipped == []
    for original, read in zip(ours, back.value, strict=True):
        assert (read.method, read.url, read.status, read.reused) == (
            original.method,
            original.url,
            original.status,
            original.reused,
        )
        for phase in ("queue", "dns", "tcp", "tls", "send", "ttfb", "receive", "total"):
            expected, got = getattr(original.phases_ms, phase), getattr(read.phases_ms, phase)
            assert (got is None) == (expected is None), phase
            if expected is not None:
                assert abs(got - expected) < 0.01, phase


def test_a_session_lists_its_records_and_an_mthawkeye_file_together(tmp_path: Path) -> None:
    with AppenderFile(tmp_path, "network-transactions") as out:
        out.append(b"key,value")
        out.append(json.dumps(IOS_TRANSACTION).encode())
        out.append(b'{"index": 3, "request": {"url": "http://x.test/"}, "task_me')  # truncated
    mine = NetworkTransaction(start=T0 - 5, method="GET", url="http://x.test/", host="x.test:80",
                              library="urllib.request")  # fmt: skip
    bad = mine.to_record()._replace(value='{"start": "soon"}')
    parsed = session_transactions(tmp_path, [mine.to_record(), bad])
    assert [t.library for t in parsed.value] == ["urllib.request", "NSURLSession"]
    assert len(parsed.skipped) == 2
    assert "truncated" in " ".join(s.reason for s in parsed.skipped)
