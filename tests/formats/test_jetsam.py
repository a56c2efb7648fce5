"""JetsamEvent: footprint = rpages × pageSize; the app's limit, the largest process, reasons."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hawkwatch.errors import FormatError
from hawkwatch.formats.jetsam import parse_jetsam, read_jetsam
from tests.formats.jetsam_sample import APP_UUID, jetsam_body, jetsam_bytes


def test_app_limit_is_rpages_times_page_size():
    event = parse_jetsam(jetsam_bytes()).value
    assert event.page_size == 16_384
    assert event.timestamp == "2020-10-15T17:29:58.000000+01:00"
    assert event.product == "iPhone12,1"
    app = event.app()
    assert app is not None and app.name == "TouchCanvas"
    assert app.reason == "per-process-limit"
    assert event.memory_limit_bytes(app) == 131_282 * 16_384 == 2_150_924_288
    assert app.peak_bytes == 131_300 * 16_384
    assert event.memory_pages["free"] == 3_210


def test_largest_process_is_not_necessarily_the_victim():
    event = parse_jetsam(jetsam_bytes()).value
    largest = event.largest
    assert largest is not None and largest.name == "Photos"
    assert not largest.killed
    assert event.memory_limit_bytes(largest) is None


def test_old_devices_use_4k_pages_and_apps_are_found_by_uuid_or_name():
    event = parse_jetsam(jetsam_bytes(jetsam_body(page_size=4_096))).value
    by_uuid = event.app(APP_UUID.upper().replace("-", ""))
    assert by_uuid is not None and by_uuid.footprint_bytes == 131_282 * 4_096
    # names are cut to 32 characters by the kernel
    long = event.app("com.apple.Safari.SafeBrowsing.Service")
    assert long is not None and long.reason == "vm-pageshortage"
    assert event.app("NoSuchApp") is None


def test_without_a_per_process_limit_kill_the_frontmost_app_is_chosen():
    body = jetsam_body()
    del body["processes"][1]["reason"]
    event = parse_jetsam(jetsam_bytes(body)).value
    app = event.app()
    assert app is not None and app.name == "TouchCanvas"
    assert event.memory_limit_bytes(app) is None


def test_not_a_jetsam_event(tmp_path):
    with pytest.raises(FormatError, match="not a JetsamEvent"):
        parse_jetsam(b'{"bug_type":"309"}\n{"threads":[]}')
    with pytest.raises(FormatError, match="no such file"):
        read_jetsam(tmp_path / "missing.ips")
    with pytest.raises(FormatError, match="not JSON"):
        parse_jetsam(b'{"bug_type":"298"}\nnot json at all')


def test_hand_edited_invalid_json_is_read_as_far_as_it_goes():
    data = jetsam_bytes()
    cut = data[: data.index(b'"name": "TouchCanvas"')]
    parsed = parse_jetsam(cut)
    assert parsed.skipped
    assert [p.name for p in parsed.value.processes] == ["com.apple.Safari.SafeBrowsing.Se"]


@settings(max_examples=80, deadline=None)
@given(st.integers(0, len(jetsam_bytes())))
def test_truncated_event_gives_a_result_or_a_format_error(cut):
    with contextlib.suppress(FormatError):
        parse_jetsam(jetsam_bytes()[:cut])
