"""The HTML report of a real session, opened in headless Chromium: offline, error-free, drawn,
zoomable, hostile names kept as text, and the same numbers as ``hawkwatch report --json``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import hawkwatch
from tests.pages import WatchedPage
from tests.web.session_app import HOSTILE

HAWKWATCH = Path(sys.executable).with_name("hawkwatch")
APP = Path(__file__).with_name("session_app.py")
SCHEMAS = Path(hawkwatch.__file__).parent / "report" / "schemas"


def hawkwatch(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HAWKWATCH_", "_HAWKWATCH"))}
    env["HAWKWATCH_HOME"] = str(home)
    return subprocess.run(
        [str(HAWKWATCH), *args], capture_output=True, text=True, encoding="utf-8", env=env,
        cwd=home, timeout=180,
    )  # fmt: skip


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One real session of ``session_app.py`` under the agent with the profiler on, its report
    as JSON and as an HTML file."""
    home = tmp_path_factory.mktemp("home")
    run = hawkwatch(
        home, "run", "--app-name", "html-test", "--profile", "-c", "profiler.rate_hz=100",
        "-c", "profiler.budget=0.05", "-c", "profiler.engine=in-process",
        "--", sys.executable, str(APP),
    )  # fmt: skip
    assert run.returncode == 1, run.stderr  # the app dies of its uncaught exception
    report = hawkwatch(home, "report", "--json")
    assert report.returncode == 0, report.stderr
    target = home / "session.html"
    written = hawkwatch(home, "report", "--format", "html", "-o", str(target))
    assert written.returncode == 0, written.stderr
    assert written.stdout == ""
    assert f"wrote {target}" in written.stderr
    return {"home": home, "json": json.loads(report.stdout), "html": target}


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The demo's asyncio service (``scripts/demo.sh`` step 2), run the way the demo runs it."""
    home = tmp_path_factory.mktemp("demo-home")
    app = Path(__file__).parents[2] / "examples" / "stall_demo.py"
    run = hawkwatch(home, "run", "--app-name", "stall-demo", "--profile", "--",
                    sys.executable, str(app))  # fmt: skip
    assert run.returncode == 0, run.stderr
    report = hawkwatch(home, "report", "--json")
    target = home / "stall-demo-report.html"
    written = hawkwatch(home, "report", "--format", "html", "-o", str(target))
    assert written.returncode == 0, written.stderr
    return {"json": json.loads(report.stdout), "html": target}


def opened(page: WatchedPage, path: Path) -> WatchedPage:
    page.page.set_viewport_size({"width": 1200, "height": 900})
    page.page.goto(path.as_uri())
    page.page.wait_for_selector("[data-hw-session][data-hw-ready='1']")
    return page


def figure(page: WatchedPage, name: str) -> str:
    value = page.page.get_attribute(f"[data-hw-figure='{name}']", "data-value")
    assert value is not None, name
    return value


def test_the_session_filled_every_view(recorded) -> None:
    report = recorded["json"]
    schema = SCHEMAS / "hawkwatch-report.schema.json"
    jsonschema.validate(report, json.loads(schema.read_text()))
    assert report["stalls"]["count"] >= 1
    assert report["network"]["total"] == 1
    assert report["network"]["requests"][0]["status"] == 200
    assert report["network"]["requests"][0]["ttfb_ms"] >= 40  # the server waits 50 ms
    assert report["exit"]["kind"] == "exception"
    assert len(report["crashes"]) == 1
    assert report["flame"]["total"] > 0
    assert report["timeline"]["spans_total"] == 1
    assert any(e["name"] == HOSTILE for e in report["timeline"]["events"])
    assert any(HOSTILE in frame for frame in report["timeline"]["stalls"][0]["stack"])


def test_report_opens_offline_without_errors_and_draws_every_view(recorded, page) -> None:
    opened(page, recorded["html"])

    assert page.requests == [recorded["html"].as_uri()]
    assert page.foreign_requests(recorded["html"].as_uri()) == []
    assert page.errors == []
    for view in ("timeline", "flame", "network", "launch"):
        box = page.page.locator(f"svg[data-hw-drawn='{view}']").bounding_box()
        assert box is not None, view
        assert box["width"] > 300 and box["height"] > 20, (view, box)
    marks = page.page.locator("[data-lane='stalls'] rect.hw-mark")
    assert marks.count() == len(recorded["json"]["timeline"]["stalls"])
    phases = page.page.locator("svg[data-hw-drawn='network'] rect.hw-phase")
    assert phases.count() >= 2  # dns/connect/send/ttfb/receive that were non-zero
    assert page.page.locator("details.hw-stall[open]").count() == 0
    marks.first.click()  # a stall on the timeline opens its blocking stack
    opened_stack = page.page.locator("details.hw-stall[open] li.hw-blocking")
    assert HOSTILE in opened_stack.inner_text()


def test_the_demos_report_opens_offline_and_shows_the_numbers_of_report_json(demo, page) -> None:
    report = demo["json"]
    opened(page, demo["html"])

    assert page.requests == [demo["html"].as_uri()]
    assert page.errors == []
    assert report["stalls"]["count"] >= 3  # the demo's three blocking handlers
    assert int(figure(page, "stall-count")) == report["stalls"]["count"]
    assert float(figure(page, "stall-max-ms")) == report["stalls"]["max_ms"]
    assert figure(page, "exit-kind") == report["exit"]["kind"] == "clean"
    footprint = next(s for s in report["resources"] if s["collection"] == "r-mem")
    assert float(figure(page, "peak-memory-mb")) == footprint["max"]
    groups = page.page.locator("[data-hw-part='stalls'] tbody tr").count()
    assert groups == len(report["stalls"]["groups"])
    for view in ("timeline", "launch"):
        box = page.page.locator(f"svg[data-hw-drawn='{view}']").bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 20, view
    if report["flame"] is not None:  # the sampler may see no CPU in a short busy run
        assert page.page.locator("svg[data-hw-drawn='flame'] g.hw-frame").count() >= 1


def test_report_shows_the_numbers_of_report_json(recorded, page) -> None:
    report = recorded["json"]
    opened(page, recorded["html"])

    assert int(figure(page, "stall-count")) == report["stalls"]["count"]
    assert float(figure(page, "stall-max-ms")) == report["stalls"]["max_ms"]
    assert float(figure(page, "launch-ms")) == report["launch"]["duration_ms"]
    assert figure(page, "exit-kind") == report["exit"]["kind"] == "exception"
    footprint = next(s for s in report["resources"] if s["collection"] == "r-mem")
    assert float(figure(page, "peak-memory-mb")) == footprint["max"]
    assert int(figure(page, "crash-count")) == len(report["crashes"])
    assert int(figure(page, "request-count")) == report["network"]["total"]
    shown = page.page.inner_text("[data-hw-figure='stall-count'] dd")
    assert shown == f"{report['stalls']['count']:,}"
    assert page.page.get_attribute("[data-hw-exit-kind]", "data-hw-exit-kind") == "exception"
    top = report["cpu"]["profiler"]["top_frames"]
    cells = page.page.locator("[data-hw-part='cpu'] tbody tr td:first-child").all_inner_texts()
    assert cells == [f["frame"] for f in top]


def test_clicking_a_flame_frame_zooms_into_it_and_reset_zooms_out(recorded, page) -> None:
    opened(page, recorded["html"])
    svg = page.page.locator("svg[data-hw-drawn='flame']")
    full = float(svg.get_attribute("width") or 0)
    frames = page.page.locator("svg[data-hw-drawn='flame'] g.hw-frame")
    widths = [float(frames.nth(i).locator("rect").get_attribute("width") or 0)
              for i in range(frames.count())]  # fmt: skip
    narrow = next(i for i, w in enumerate(widths) if 5 < w < full * 0.9)
    node = frames.nth(narrow).get_attribute("data-node")

    frames.nth(narrow).click()

    zoomed = page.page.locator(f"svg[data-hw-drawn='flame'] g.hw-frame[data-node='{node}'] rect")
    assert float(zoomed.get_attribute("width") or 0) > widths[narrow] * 1.05
    assert page.page.get_attribute("svg[data-hw-drawn='flame']", "data-focus") == node
    page.page.click("button.hw-reset")
    again = page.page.locator(f"svg[data-hw-drawn='flame'] g.hw-frame[data-node='{node}'] rect")
    assert float(again.get_attribute("width") or 0) == pytest.approx(widths[narrow])
    assert page.errors == []


def test_hostile_names_render_as_text(recorded, page) -> None:
    opened(page, recorded["html"])

    assert page.page.title().startswith("hawkwatch: html-test")  # the name's script never ran
    assert page.page.locator("script").count() == 2  # the data and the view's own script
    assert page.page.locator("b").count() == 0
    summary = page.page.inner_text("details.hw-stall summary")
    assert HOSTILE in summary
    events = page.page.inner_text("[data-hw-part='timings']")
    assert HOSTILE in events
    crash = page.page.inner_text("[data-hw-part='crashes']")
    assert HOSTILE in crash
    assert page.errors == []


def test_hovering_the_timeline_reads_the_series_value_at_that_moment(recorded, page) -> None:
    timeline = recorded["json"]["timeline"]
    footprint = next(s for s in timeline["series"] if s["collection"] == "r-mem")
    assert len(footprint["offsets_s"]) >= 2
    moment = (footprint["offsets_s"][-2] + footprint["offsets_s"][-1]) / 2
    opened(page, recorded["html"])
    svg = page.page.locator("svg[data-hw-drawn='timeline']")
    box = svg.bounding_box()
    assert box is not None
    label_w, plot = 150, box["width"] - 150 - 10
    x = label_w + moment / timeline["duration_s"] * plot

    page.page.mouse.move(box["x"] + x, box["y"] + 20)

    readouts = page.page.locator("svg[data-hw-drawn='timeline'] .hw-readout").all_text_contents()
    shown = f"{footprint['values'][-2]:.2f}".rstrip("0").rstrip(".")  # as JS prints it
    assert f"{shown} MB" in readouts
    assert page.errors == []
