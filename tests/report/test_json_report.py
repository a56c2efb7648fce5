"""The JSON twin: same content as the console report, stable keys, plain JSON types."""

from __future__ import annotations

import io
import json

from hawkwatch.analysis.session_report import build_session_report
from hawkwatch.model.report import REPORT_FORMAT, REPORT_VERSION
from hawkwatch.report import json_report
from tests.report.test_console import rich_records, small_report

TOP_LEVEL_KEYS = [
    "format",
    "format_version",
    "session",
    "launch",
    "resources",
    "events",
    "events_total",
    "spans",
    "gc",
    "imports",
    "exit",
    "errors",
    "errors_total",
    "other_collections",
    "findings",
    "skipped_lines",
    "stalls",
    "cpu",
    "io_issues",
    "crashes",
    "memory",
    "timeline",
    "flame",
    "network",
]


def rich_report():
    return build_session_report(rich_records(), {"app_name": "shop", "ppid": 1}, name="run-1")


def test_top_level_keys_are_pinned():
    data = json_report.to_json_dict(rich_report())

    assert list(data) == TOP_LEVEL_KEYS
    assert (data["format"], data["format_version"]) == (REPORT_FORMAT, REPORT_VERSION)


def test_sections_keep_their_field_names():
    data = json_report.to_json_dict(rich_report())

    assert sorted(data["session"]) == sorted(
        [
            "name", "source", "start_time", "end_time", "duration_s", "record_count",
            "app_name", "app_version", "pid", "python", "platform", "hostname", "command",
            "hawkwatch_version", "details",
        ]
    )  # fmt: skip
    assert data["session"]["details"] == [{"key": "ppid", "value": "1"}]
    assert list(data["launch"]) == [
        "layout", "origin_time", "duration_ms", "phases", "not_captured", "end_label",
    ]  # fmt: skip
    assert list(data["launch"]["phases"][0]) == ["name", "label", "time", "offset_ms", "delta_ms"]
    assert list(data["resources"][0]) == [
        "collection", "label", "unit", "count", "min", "mean", "p95", "max",
        "first_time", "last_time", "last", "points", "first_offset_s",
    ]  # fmt: skip
    assert list(data["spans"]) == ["count", "group_count", "groups", "slowest"]
    assert list(data["gc"]) == ["count", "total_ms", "max_ms", "by_generation", "worst"]
    assert list(data["imports"]) == ["count", "top"]
    assert list(data["exit"]) == [
        "time", "offset_s", "clean", "exit_code", "signal", "source", "kind", "evidence",
    ]  # fmt: skip
    assert data["other_collections"] == [{"name": "view-ctrl", "count": 1}]
    assert list(data["stalls"]) == [
        "count", "total_ms", "p50_ms", "p95_ms", "max_ms", "groups", "longest", "hang_kills",
    ]  # fmt: skip
    assert list(data["stalls"]["groups"][0]) == [
        "fingerprint", "count", "total_ms", "max_ms", "loop", "frame", "file", "line",
        "source_line",
    ]  # fmt: skip
    assert data["findings"] == [
        {
            "collection": "cpu",
            "reason": "value is not a number",
            "count": 1,
            "first_key": "1700000003.000000",
        }
    ]


def test_values_match_the_report():
    report = rich_report()

    data = json_report.to_json_dict(report)

    cpu = next(s for s in data["resources"] if s["collection"] == "cpu")
    assert cpu["mean"] == next(s.mean for s in report.resources if s.collection == "cpu")
    assert cpu["points"] == list(report.resources[1].points)
    assert [e["name"] for e in data["events"]] == [e.name for e in report.events]
    assert data["exit"]["signal"] == 9
    assert data["spans"]["groups"][0]["name"] == "checkout"


def test_render_writes_the_same_dict_as_json():
    report = small_report()
    out = io.StringIO()

    json_report.render(report, out)

    assert out.getvalue().endswith("}\n")
    assert json.loads(out.getvalue()) == json_report.to_json_dict(report)


def test_absent_sections_are_null_and_lists_empty():
    data = json_report.to_json_dict(build_session_report([], {}, name="empty"))

    assert data["launch"] is None
    assert data["spans"] is None
    assert data["exit"] is None
    assert data["resources"] == []
    assert data["events"] == []
    assert data["session"]["start_time"] is None
