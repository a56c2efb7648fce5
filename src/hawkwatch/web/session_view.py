"""One session as an HTML fragment: key figures, drawn views and the findings' tables.

The input is the report JSON (``report.json_report.to_json_dict``: what ``hawkwatch report
--json`` prints and the server stores), so the HTML report and the dashboard render the same
thing from the same data. Tables and figures are HTML here (readable without scripts); the
timeline, launch bars, flame graph and waterfall are drawn by ``static/session.js`` from the
data embedded in a ``<script type="application/json" data-hw-data>`` element of the fragment.
The fragment has no inline script or style attribute, so a page with a strict Content Security
Policy can hold it. Every figure carries ``data-hw-figure`` (its name) and ``data-value`` (the
JSON number or string, exactly as in the report) for scripts and tests.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from hawkwatch.web import sections
from hawkwatch.web._html import esc, json_script, ms, num, tag

#: The keys of the report the scripts draw (embedded as JSON).
DRAWN_KEYS = ("timeline", "flame", "network", "launch")


def render_session_view(report: Mapping[str, Any]) -> str:
    """The session's views as an HTML fragment (no ``<html>``/``<head>``), for a page that loads
    ``session.css`` and ``session.js`` (``hawkwatch.web.assets``)."""
    data = {key: report.get(key) for key in DRAWN_KEYS}
    parts = [
        _header(report),
        _figures(report),
        _view("Timeline", "timeline", _timeline_note(report)),
        sections.launch(report.get("launch")),
        _view("CPU flame graph", "flame", _flame_note(report.get("flame")), reset=True),
        sections.cpu(report.get("cpu")),
        _view("Network waterfall", "network", _network_note(report.get("network"))),
        sections.stalls(report.get("stalls"), _get(report, "timeline", "stalls")),
        sections.crashes(report.get("crashes") or []),
        sections.io_issues(report.get("io_issues") or []),
        sections.memory(report.get("memory")),
        sections.exit_state(report.get("exit")),
        sections.timings(report),
        json_script(data, data_hw_data=""),
    ]
    return tag("section", "".join(parts), class_="hw-session", data_hw_session="")


def figures(report: Mapping[str, Any]) -> list[tuple[str, str, Any, str]]:
    """(name, label, value as in the report, text shown) of the session's key figures."""
    stalls = report.get("stalls") or {}
    launch = report.get("launch") or {}
    exit_state = report.get("exit") or {}
    network = report.get("network") or {}
    gc = report.get("gc") or {}
    memory = _peak_memory(report.get("resources") or [])
    cpu = _series(report.get("resources") or [], "cpu")
    return [
        ("launch-ms", "launch", launch.get("duration_ms"), ms(launch.get("duration_ms"))),
        ("stall-count", "stalls", stalls.get("count", 0), f"{stalls.get('count', 0):,}"),
        ("stall-max-ms", "longest stall", stalls.get("max_ms"), ms(stalls.get("max_ms"))),
        ("peak-memory-mb", memory[0], memory[1], f"{num(memory[1])} MB"),
        ("cpu-p95", "CPU p95", cpu.get("p95"), f"{num(cpu.get('p95'))} %"),
        ("crash-count", "crashes", len(report.get("crashes") or []),
         f"{len(report.get('crashes') or []):,}"),
        ("gc-pause-count", "GC pauses", gc.get("count", 0), f"{gc.get('count', 0):,}"),
        ("request-count", "HTTP requests", network.get("total", 0),
         f"{network.get('total', 0):,}"),
        ("exit-kind", "exit", exit_state.get("kind"), str(exit_state.get("kind") or "–")),
    ]  # fmt: skip


def _header(report: Mapping[str, Any]) -> str:
    session = report.get("session") or {}
    title = session.get("app_name") or session.get("command") or session.get("name") or "session"
    facts = [
        ("session", session.get("name")),
        ("started", _when(session.get("start_time"))),
        ("observed", ms(_times(session.get("duration_s"), 1000))),
        ("version", session.get("app_version")),
        ("pid", session.get("pid")),
        ("python", session.get("python")),
        ("host", session.get("hostname")),
        ("command", session.get("command")),
    ]
    items = "".join(
        f"<div><dt>{esc(label)}</dt><dd>{esc(value)}</dd></div>"
        for label, value in facts
        if value not in (None, "")
    )
    return tag("header", tag("h2", esc(title)) + tag("dl", items, class_="hw-facts"),
               class_="hw-head")  # fmt: skip


def _figures(report: Mapping[str, Any]) -> str:
    items = "".join(
        tag(
            "div",
            tag("dt", esc(label)) + tag("dd", esc(text)),
            class_="hw-figure",
            data_hw_figure=name,
            data_value=_raw(value),
        )
        for name, label, value, text in figures(report)
    )
    return tag("dl", items, class_="hw-figures")


def _view(title: str, name: str, note: str, *, reset: bool = False) -> str:
    tools = ""
    if reset:  # the flame graph's zoom and search
        tools = tag("button", "Reset zoom", type="button", class_="hw-reset")
        tools += (
            '<input type="search" class="hw-search" placeholder="highlight frames…" '
            'aria-label="highlight frames whose name contains">'
        )
    body = tag("h3", esc(title) + tools) + tag("p", esc(note), class_="hw-note")
    body += tag("div", "", class_="hw-canvas", data_hw_view=name)
    return tag("section", body, class_=f"hw-view hw-{name}")


def _timeline_note(report: Mapping[str, Any]) -> str:
    timeline = report.get("timeline")
    if not timeline:
        return "No timeline: the session's start is unknown."
    counts = [
        (timeline.get("stalls_total", 0), "stall"),
        (timeline.get("gc_pauses_total", 0), "GC pause"),
        (timeline.get("spans_total", 0), "span"),
        (timeline.get("events_total", 0), "event"),
        (len(timeline.get("crashes") or []), "crash"),
    ]
    said = ", ".join(f"{n:,} {noun}{'' if n == 1 else ('es' if noun == 'crash' else 's')}"
                     for n, noun in counts)  # fmt: skip
    return f"{_times(timeline.get('duration_s'), 1) or 0.0:.3f} s observed: {said}."


def _flame_note(flame: Mapping[str, Any] | None) -> str:
    if not flame:
        return "No CPU profile in this session (record one with 'hawkwatch run --profile')."
    sampler = f" by the {flame['sampler']} sampler" if flame.get("sampler") else ""
    pruned = flame.get("pruned", 0)
    left = f"; {pruned:,} small subtrees left out" if pruned else ""
    source = f" from {flame['source']}" if flame.get("source") else ""
    return (
        f"{flame.get('total', 0):,} {flame.get('mode', 'cpu')} samples{sampler}{source}{left}. "
        "Click a frame to zoom into it."
    )


def _network_note(network: Mapping[str, Any] | None) -> str:
    if not network:
        return "No HTTP requests recorded."
    shown = len(network.get("requests") or [])
    total = network.get("total", shown)
    more = f" (the first {shown:,} shown)" if shown < total else ""
    return f"{total:,} requests, {network.get('failed', 0):,} failed{more}."


def _peak_memory(resources: Sequence[Mapping[str, Any]]) -> tuple[str, Any]:
    for collection, label in (("r-mem", "peak footprint"), ("mem", "peak resident")):
        found = _series(resources, collection)
        if found:
            return label, found.get("max")
    return "peak memory", None


def _series(resources: Sequence[Mapping[str, Any]], collection: str) -> Mapping[str, Any]:
    return next((s for s in resources if s.get("collection") == collection), {})


def _get(report: Mapping[str, Any], *keys: str) -> Any:
    value: Any = report
    for key in keys:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def _raw(value: Any) -> str:
    """A figure's value as the report JSON writes it ("" when absent)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    return value if isinstance(value, str) else json.dumps(value)


def _times(value: Any, factor: float) -> float | None:
    return value * factor if isinstance(value, int | float) else None


def _when(value: Any) -> str | None:
    if not isinstance(value, int | float) or value <= 0:
        return None
    return datetime.fromtimestamp(value, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
