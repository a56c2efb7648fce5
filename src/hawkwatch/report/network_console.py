"""``hawkwatch network`` for a terminal: hosts, findings, and a waterfall of the slowest requests.

The waterfall draws each request's phases as one bar on a shared scale (the slowest request's
total), one letter per phase: q queue, d DNS, c TCP connect, s TLS, > send, w waiting for the
first byte, r receive.
"""

from __future__ import annotations

from typing import Final, TextIO

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from hawkwatch.model.network import TRACED_ONLY_FINDINGS, NetworkReport
from hawkwatch.model.records import NetworkTransaction

BAR_WIDTH: Final = 24
_GLYPHS: Final = (
    ("queue", "q", "grey50"),
    ("dns", "d", "cyan"),
    ("tcp", "c", "blue"),
    ("tls", "s", "magenta"),
    ("send", ">", "green"),
    ("ttfb", "w", "yellow"),
    ("receive", "r", "red"),
)


def render(report: NetworkReport, file: TextIO, width: int | None = None) -> None:
    console = Console(file=file, width=width, markup=False, emoji=False, highlight=False)
    if not report.requests and not report.hosts:
        console.print("No HTTP requests recorded.")
        return
    console.print(_hosts(report))
    if report.sampled:
        console.print(
            f"Sampled: {report.counted:,} requests counted and timed, "
            f"{sum(h.traced for h in report.hosts):,} traced in full; hosts marked * show "
            "every request's count, errors, p50/p95 (from a histogram, within 25 %) and bytes "
            "received, their reuse and bytes sent only of the traced ones. Findings "
            f"{', '.join(TRACED_ONLY_FINDINGS)} saw only traced requests."
        )
    console.print()
    if report.findings:
        console.print(_findings(report))
        console.print()
    if report.slowest:
        console.print(_waterfall(report))
    if report.rejected:
        console.print(f"{report.rejected} network records could not be read and are left out.")


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def _hosts(report: NetworkReport) -> Table:
    count = report.counted or len(report.requests)
    table = Table(title=f"HTTP requests: {count}", box=box.SIMPLE_HEAD)
    table.add_column("host", no_wrap=True)
    for heading in ("reqs", "p50 ms", "p95 ms", "errors", "reused", "sent", "recv"):
        table.add_column(heading, justify="right", no_wrap=True)
    for host in report.hosts:
        table.add_row(
            host.host + (" *" if host.sampled else ""),
            str(host.count),
            _ms(host.p50_ms),
            _ms(host.p95_ms),
            f"{host.errors} {host.error_rate:.0%}",
            str(host.reused),
            _bytes(host.request_bytes),
            _bytes(host.response_bytes),
        )
    return table


def _findings(report: NetworkReport) -> Table:
    table = Table(title="Findings", box=box.SIMPLE_HEAD)
    table.add_column("type", no_wrap=True)
    table.add_column("detail", overflow="fold")
    for finding in report.findings:
        table.add_row(finding.type, finding.detail)
    return table


def _waterfall(report: NetworkReport) -> Table:
    table = Table(title="Slowest requests (q queue, d DNS, c connect, s TLS, > send, "
                  "w first byte, r receive)", box=box.SIMPLE_HEAD)  # fmt: skip
    table.add_column("total ms", justify="right", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("phases", no_wrap=True, min_width=BAR_WIDTH)
    table.add_column("request", overflow="fold", ratio=1)
    scale = max((report.requests[i].phases_ms.total or 0.0) for i in report.slowest) or 1.0
    for index in report.slowest:
        request = report.requests[index]
        status = request.error or str(request.status or "-")
        if request.failed_phase:
            status += f" in {request.failed_phase}"
        table.add_row(
            _ms(request.phases_ms.total),
            status,
            _bar(request, scale),
            f"{request.method} {request.url}",
        )
    return table


def _bar(request: NetworkTransaction, scale: float) -> Text:
    bar = Text()
    for phase, glyph, style in _GLYPHS:
        ms = getattr(request.phases_ms, phase)
        if ms:
            bar.append(glyph * max(1, round(ms / scale * BAR_WIDTH)), style=style)
    return bar


def _bytes(count: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if count < 1024 or unit == "GB":
            return f"{count:,.0f} {unit}" if unit == "B" else f"{count:,.1f} {unit}"
        count /= 1024  # type: ignore[assignment]
    return str(count)
