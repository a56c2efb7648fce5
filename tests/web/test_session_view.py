"""``render_session_view`` and the standalone file on hand-built report JSON: escaping, the
embedded data, absent sections, and the assets a server serves."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

from hawkwatch.web.assets import asset_files, asset_tags
from hawkwatch.web.session_view import render_session_view
from hawkwatch.web.standalone import render_standalone_html

KINDS = {"css": "text/css", "js": "text/javascript"}
HOSTILE = "</script><script>document.title='pwned'</script>\"'<b>&amp;"


def hostile_report() -> dict[str, Any]:
    frame = f"{HOSTILE} (/app/{HOSTILE}.py:3)"
    return {
        "format": "hawkwatch-report",
        "format_version": 1,
        "session": {"name": f"s-{HOSTILE}", "app_name": HOSTILE, "start_time": 1.7e9,
                    "duration_s": 2.0, "command": HOSTILE},
        "launch": {"layout": "hawkwatch", "origin_time": 1.7e9, "duration_ms": 120.5,
                   "phases": [{"name": "ready", "label": HOSTILE, "time": 1.7e9,
                               "offset_ms": 120.5, "delta_ms": 120.5}],
                   "not_captured": [], "end_label": "ready"},
        "resources": [{"collection": "r-mem", "label": "memory footprint", "unit": "MB",
                       "max": 42.25, "p95": 40.0}],
        "events": [{"time": 1.7e9, "offset_s": 0.5, "name": HOSTILE, "extra": HOSTILE}],
        "stalls": {"count": 1, "total_ms": 300.0, "p50_ms": 300.0, "p95_ms": 300.0,
                   "max_ms": 300.0, "groups": [{"fingerprint": "f", "count": 1,
                   "total_ms": 300.0, "max_ms": 300.0, "loop": "asyncio", "frame": frame,
                   "source_line": HOSTILE}], "longest": []},
        "crashes": [{"kind": "exception", "fatal": True, "type": "ValueError",
                     "message": HOSTILE, "thread": "MainThread", "title": HOSTILE,
                     "frames": [{"function": HOSTILE, "file": "/app/x.py", "line": 3,
                                 "source": HOSTILE}], "threads": [], "breadcrumbs": [],
                     "fingerprint": "x", "offset_s": 1.5, "causes": []}],
        "io_issues": [{"type": "small-buffer", "path": HOSTILE, "thread": HOSTILE, "ops": 3,
                       "bytes": 10, "buffer_size": 1, "cost_ms": 1.0, "count": 1,
                       "frames": [{"function": HOSTILE, "file": "/a.py", "line": 1}]}],
        "exit": {"kind": "exception", "clean": False, "exit_code": 1, "signal": None,
                 "offset_s": 2.0, "source": "supervisor", "evidence": [HOSTILE]},
        "timeline": {"duration_s": 2.0, "series": [], "stalls": [
            {"offset_s": 0.2, "duration_ms": 300.0, "thread": HOSTILE, "loop": "asyncio",
             "frame": frame, "stack": [frame, "main (/app/main.py:1)"], "blocking": 0}],
            "stalls_total": 1, "gc_pauses": [], "gc_pauses_total": 0,
            "spans": [{"name": HOSTILE, "offset_s": 0.1, "duration_ms": 50.0}],
            "spans_total": 1, "events": [{"name": HOSTILE, "offset_s": 0.5}],
            "events_total": 1, "crashes": [{"title": HOSTILE, "offset_s": 1.5, "fatal": True}],
            "exit_offset_s": 2.0},
        "flame": {"mode": "cpu", "sampler": HOSTILE, "total": 10, "interval_s": 0.01,
                  "frames": ["main (/app/main.py:1)", frame, "other (/app/main.py:9)"],
                  "nodes": [[-1, 0, 10], [0, 1, 7], [0, 2, 3]], "pruned": 0,
                  "min_share": 0.001},
        "network": {"requests": [{"offset_s": 0.3, "method": "GET", "url": f"http://h/{HOSTILE}",
                                  "host": "h", "status": 500, "error": HOSTILE,
                                  "total_ms": 20.0, "ttfb_ms": 15.0, "receive_ms": 5.0}],
                    "total": 1, "failed": 1},
    }  # fmt: skip


def test_user_text_is_escaped_everywhere() -> None:
    fragment = render_session_view(hostile_report())

    assert "<script>document" not in fragment
    assert "<b>" not in fragment
    assert fragment.count("<script") == 1  # only the embedded data
    assert "&lt;/script&gt;&lt;script&gt;document.title=&#x27;pwned&#x27;" in fragment
    assert "&amp;amp;" in fragment  # an entity in a name is shown, not decoded


def test_embedded_data_cannot_close_its_element_and_reads_back_unchanged() -> None:
    report = hostile_report()
    fragment = render_session_view(report)
    found = re.search(
        r'<script type="application/json" data-hw-data="">(.*?)</script>', fragment, re.S
    )
    assert found is not None
    text = found.group(1)
    assert "<" not in text and ">" not in text and "&" not in text
    data = json.loads(text)
    assert data["flame"] == report["flame"]
    assert data["timeline"] == report["timeline"]
    assert data["network"] == report["network"]


def test_figures_carry_the_reports_values() -> None:
    fragment = render_session_view(hostile_report())

    assert 'data-hw-figure="stall-count" data-value="1"' in fragment
    assert 'data-hw-figure="stall-max-ms" data-value="300.0"' in fragment
    assert 'data-hw-figure="launch-ms" data-value="120.5"' in fragment
    assert 'data-hw-figure="peak-memory-mb" data-value="42.25"' in fragment
    assert 'data-hw-figure="exit-kind" data-value="exception"' in fragment


def test_a_report_with_no_sections_still_renders_every_part() -> None:
    fragment = render_session_view({"session": {"name": "bare"}})

    for part in ("launch", "cpu", "stalls", "crashes", "io", "memory", "exit", "timings"):
        assert f'data-hw-part="{part}"' in fragment
    assert "No stalls" in fragment
    assert 'data-hw-figure="exit-kind" data-value=""' in fragment


def test_standalone_inlines_the_assets_and_links_nothing() -> None:
    page = render_standalone_html(hostile_report(), f"title {HOSTILE}")
    assets = asset_files()

    assert page.startswith("<!doctype html>")
    assert assets["session.js"].decode() in page
    assert assets["session.css"].decode() in page
    assert "<title>title &lt;/script&gt;" in page
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", page)
    assert "@import" not in page and "url(" not in page
    assert "default-src 'none'" in page


def test_assets_are_what_a_server_serves() -> None:
    assets = asset_files()

    assert sorted(assets) == ["session.css", "session.js"]
    assert b"hawkwatchSession" in assets["session.js"]
    assert b".hw-session" in assets["session.css"]


def test_hand_built_hostile_report_draws_as_text_in_a_browser(page, tmp_path) -> None:
    target = tmp_path / "hostile.html"
    target.write_text(render_standalone_html(hostile_report(), "hostile"), encoding="utf-8")
    page.page.goto(target.as_uri())
    page.page.wait_for_selector("[data-hw-session][data-hw-ready='1']")

    assert page.page.title() == "hostile"
    assert page.errors == []
    assert page.requests == [target.as_uri()]
    labels = page.page.locator("svg[data-hw-drawn='flame'] g.hw-frame title").all_text_contents()
    assert any(label.startswith(HOSTILE) for label in labels)
    marks = page.page.locator("svg[data-hw-drawn='timeline'] title").all_text_contents()
    assert any(HOSTILE in mark for mark in marks)
    rows = page.page.locator("svg[data-hw-drawn='network'] g.hw-failed").count()
    assert rows == 1


class _Page(BaseHTTPRequestHandler):
    """A dashboard-like page: the fragment in a page of its own, the assets under /static/,
    and a Content Security Policy that allows no inline script or style."""

    routes: ClassVar[dict[str, tuple[str, bytes]]] = {}

    def do_GET(self) -> None:
        found = self.routes.get(self.path)
        self.send_response(200 if found else 404)
        kind, body = found or ("text/plain", b"not found")
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", "default-src 'self'; img-src data:")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_fragment_works_in_a_served_page_under_a_strict_policy(page) -> None:
    fragment = render_session_view(hostile_report())
    head = f'<meta charset="utf-8"><link rel="icon" href="data:,"><title>d</title>{asset_tags()}'
    html = f"<!doctype html><html><head>{head}</head><body>{fragment}</body></html>"
    _Page.routes = {
        "/session": ("text/html; charset=utf-8", html.encode()),
        **{f"/static/{name}": (KINDS[name.rsplit('.', 1)[1]], body)
           for name, body in asset_files().items()},
    }  # fmt: skip
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    origin = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        page.page.goto(f"{origin}/session")
        page.page.wait_for_selector("[data-hw-session][data-hw-ready='1']")
        for view in ("timeline", "flame", "network", "launch"):
            box = page.page.locator(f"svg[data-hw-drawn='{view}']").bounding_box()
            assert box is not None and box["width"] > 300, view
        assert page.errors == []  # a policy violation would be a console error
        assert page.foreign_requests(origin) == []
        assert sorted(page.requests) == sorted(
            [f"{origin}/session", f"{origin}/static/session.css", f"{origin}/static/session.js"]
        )
    finally:
        server.shutdown()
        server.server_close()


def test_flame_search_highlights_and_keyboard_zooms(page, tmp_path) -> None:
    target = tmp_path / "flame.html"
    target.write_text(render_standalone_html(hostile_report(), "flame"), encoding="utf-8")
    page.page.goto(target.as_uri())
    page.page.wait_for_selector("[data-hw-session][data-hw-ready='1']")

    page.page.fill("input.hw-search", "OTHER")

    matched = page.page.locator("svg[data-hw-drawn='flame'] g.hw-match title")
    assert matched.all_text_contents() == ["other (/app/main.py:9)\n3 samples, 30.0 %"]
    assert page.page.locator("svg[data-hw-drawn='flame'] g.hw-dim").count() == 3  # all, 2 more
    other = page.page.locator("svg[data-hw-drawn='flame'] g.hw-frame[data-node='2']")
    narrow = float(other.locator("rect").get_attribute("width") or 0)
    other.focus()
    page.page.keyboard.press("Enter")
    zoomed = page.page.locator("svg[data-hw-drawn='flame'] g.hw-frame[data-node='2'] rect")
    assert float(zoomed.get_attribute("width") or 0) > narrow * 2
    assert page.errors == []
