"""The network report's detectors on hand-built requests, and URL redaction."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from hawkwatch.analysis.network import build_network_report, dominant_phase
from hawkwatch.model.network import NetworkThresholds
from hawkwatch.model.records import CallSite, NetworkTransaction, Phases
from hawkwatch.model.urls import REDACTED, host_of, redact_url


def request(
    start: float, url: str = "http://api.test/items", **fields: object
) -> NetworkTransaction:
    base: dict[str, object] = {
        "start": start, "index": int(start * 10), "method": "GET", "url": url,
        "host": host_of(url), "library": "requests", "status": 200, "reused": True,
        "phases_ms": Phases(queue=0.1, send=0.2, ttfb=20.0, receive=1.0, total=21.3),
    }  # fmt: skip
    base.update(fields)
    return NetworkTransaction(**base)  # type: ignore[arg-type]


def finding_types(report) -> dict[str, tuple[int, ...]]:
    return {f.type: f.requests for f in report.findings}


def test_a_slow_request_names_the_phase_that_dominates() -> None:
    slow = request(1.0, phases_ms=Phases(dns=900.0, tcp=5.0, ttfb=300.0, total=1205.0))
    report = build_network_report([request(0.0), slow])
    (finding,) = [f for f in report.findings if f.type == "slow-request"]
    assert finding.requests == (1,)
    assert "mostly dns (900 ms)" in finding.detail
    assert dominant_phase(slow) == ("dns", 900.0)
    assert report.slowest == (1, 0)
    assert finding_types(report)["slow-dns"] == (1,)


def test_a_host_failing_a_fifth_of_its_requests_is_failing() -> None:
    requests = [request(float(i)) for i in range(7)]
    requests += [request(7.0, status=502), request(8.0, error="TimeoutError", status=None)]
    report = build_network_report(requests)
    assert finding_types(report)["failing-host"] == (7, 8)
    (host,) = report.hosts
    assert (host.count, host.errors, round(host.error_rate, 3)) == (9, 2, 0.222)
    # one failure in ten is under the 20 % rate
    quieter = build_network_report(
        [request(float(i)) for i in range(9)] + [request(9.0, status=500)]
    )
    assert "failing-host" not in finding_types(quieter)


def test_duplicates_are_runs_within_the_window() -> None:
    report = build_network_report([
        request(0.0), request(0.5), request(0.9), request(5.0), request(5.1, url="http://api.test/other"),
    ])  # fmt: skip
    assert finding_types(report)["duplicate-request"] == (0, 1, 2)
    tight = build_network_report(
        [request(0.0), request(0.5)], NetworkThresholds(duplicate_window_s=0.1)
    )
    assert "duplicate-request" not in finding_types(tight)


def test_blocking_clients_on_the_loop_thread_are_flagged_async_ones_are_not() -> None:
    blocking = request(0.0, on_loop_thread=True, frames=(CallSite("handler", "/app/api.py", 42),))
    fine = request(1.0, url="http://api.test/b", on_loop_thread=True, library="aiohttp")
    report = build_network_report([blocking, fine])
    (finding,) = [f for f in report.findings if f.type == "blocking-client-on-loop"]
    assert finding.requests == (0,)
    assert "handler at /app/api.py:42" in finding.detail


def test_hosts_that_never_reuse_a_connection_and_large_responses() -> None:
    fresh = [request(float(i), url=f"http://cdn.test/{i}", reused=False) for i in range(3)]
    big = request(9.0, url="http://api.test/dump", response_bytes=3 * 1024 * 1024)
    report = build_network_report([*fresh, big, request(10.0)])
    found = finding_types(report)
    assert found["no-connection-reuse"] == (0, 1, 2)
    assert found["large-response"] == (3,)
    assert "api.test" not in "".join(
        f.detail for f in report.findings if f.type == "no-connection-reuse"
    )


def test_an_empty_session_has_an_empty_report() -> None:
    report = build_network_report([])
    assert (report.requests, report.hosts, report.findings, report.slowest) == ((), (), (), ())


def test_redaction_keeps_where_and_drops_secrets() -> None:
    url = "https://alice:pw@Example.test:8443/a/b?token=abc&page=2&flag#frag"
    assert redact_url(url) == f"https://example.test:8443/a/b?token={REDACTED}&page={REDACTED}&flag"
    assert redact_url(url, frozenset({"page"})) == (
        f"https://example.test:8443/a/b?token={REDACTED}&page=2&flag"
    )
    assert redact_url("http://[::1]:80/x") == "http://[::1]:80/x"
    assert redact_url("http://bad:port/") == REDACTED
    assert host_of("https://example.test/x") == "example.test:443"


@given(st.text(min_size=1, max_size=20, alphabet=st.characters(blacklist_characters="&=#%")))
def test_no_query_value_survives_redaction(secret: str) -> None:
    redacted = redact_url(f"http://host.test/p?key={secret}&other={secret}")
    assert redacted == f"http://host.test/p?key={REDACTED}&other={REDACTED}"
