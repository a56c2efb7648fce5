"""Hypothesis properties of every reader: any input gives a result or one clear error."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hawkwatch.errors import FormatError
from hawkwatch.formats.apple_crash import parse_apple_crash
from hawkwatch.formats.crash import parse_crash
from hawkwatch.formats.hawkeye import parse_dyld_images, parse_network_transactions
from hawkwatch.formats.hawkeye_cpu import parse_highload
from hawkwatch.formats.ips import parse_ips
from hawkwatch.formats.jetsam import parse_jetsam
from hawkwatch.formats.kscrash import parse_kscrash
from hawkwatch.model import Record
from hawkwatch.report.crash_json import crash_to_json
from hawkwatch.report.crash_text import render_crash_text
from hawkwatch.store.appender_read import parse_appender
from hawkwatch.store.records import parse_records
from tests.fuzz.strategies import (
    crash_text_lines,
    deep_json,
    dumps,
    ips_header,
    json_values,
)

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _read_or_reject(parse, data: bytes) -> None:
    try:
        parsed = parse(data, source="prop")
    except FormatError as exc:
        assert "\n" not in str(exc) and len(str(exc)) < 400  # one short line
        return
    report = parsed.value
    if hasattr(report, "threads"):  # a crash report: everything downstream must cope too
        render_crash_text(report)
        crash_to_json(report)


@FAST
@given(document=json_values)
def test_kscrash_and_any_json(document):
    _read_or_reject(parse_kscrash, dumps(document).encode())
    _read_or_reject(parse_crash, dumps({"report": {}, "crash": document}).encode())


@FAST
@given(header=ips_header, body=json_values)
def test_ips_and_jetsam_with_any_body(header, body):
    data = (dumps(header) + "\n" + dumps(body)).encode()
    for parse in (parse_ips, parse_jetsam, parse_crash):
        _read_or_reject(parse, data)


@FAST
@given(nesting=deep_json, where=st.sampled_from(["ips", "kscrash", "jetsam", "truncated"]))
def test_deeply_nested_json_is_a_format_error_or_read(nesting, where):
    data = {
        "ips": '{"bug_type":"309"}\n{"threads":' + nesting + "}",
        "kscrash": '{"report":{},"crash":' + nesting + "}",
        "jetsam": '{"bug_type":"298"}\n{"processes":' + nesting + "}",
        "truncated": '{"report":{},"crash":' + nesting[: len(nesting) // 2],
    }[where].encode()
    for parse in (parse_crash, parse_jetsam):
        _read_or_reject(parse, data)


@FAST
@given(lines=st.lists(crash_text_lines, max_size=12))
def test_apple_text_with_hostile_fields(lines):
    data = "\n".join(["Incident Identifier: X", *lines]).encode()
    _read_or_reject(parse_apple_crash, data)
    _read_or_reject(parse_crash, data)


@FAST
@given(log=st.binary(max_size=400), buffer=st.binary(max_size=400))
def test_records_from_any_bytes_account_for_every_line(log, buffer):
    content = parse_appender(log, buffer)
    result = parse_records(content.lines, content.skipped)
    assert all(isinstance(r.value, str) for r in result.records)
    assert len(result.records) <= len(content.lines)


@FAST
@given(data=st.one_of(st.binary(max_size=200), json_values.map(lambda v: dumps(v).encode())))
def test_dyld_images_of_any_bytes(data):
    with contextlib.suppress(FormatError):
        parse_dyld_images(data, source="prop")


@FAST
@given(
    lines=st.lists(st.one_of(st.binary(max_size=80), json_values.map(lambda v: dumps(v).encode()))),
    huge=st.binary(max_size=200),
)
def test_network_transactions_of_any_lines(lines, huge):
    parse_network_transactions([line.replace(b"\n", b"") for line in lines], huge)


@FAST
@given(
    values=st.lists(json_values.map(dumps), max_size=4),
    ext=st.binary(max_size=200),
    base=st.sampled_from(["unix", "cfabsolute"]),
)
def test_highload_episodes_of_any_values(values, ext, base):
    records = []
    for i, value in enumerate(values):
        records += [
            Record("cpu-highload", f"{i}.5", value),
            Record("cpu-highload-stackframe", f"{i}.5", value),
        ]
    parse_highload(records, ext=ext, time_base=base)


@pytest.mark.parametrize("digits", [4_000, 4_400, 10_000])
def test_long_digit_strings_in_every_json_reader(digits):
    number = "7" * digits
    for data in (
        f'{{"report":{{"process_id":{number}}},"crash":{{}}}}',
        f'{{"bug_type":"309"}}\n{{"pid":{number},"threads":[]}}',
        f'{{"bug_type":"298"}}\n{{"memoryStatus":{{"pageSize":{number}}},"processes":[]}}',
    ):
        for parse in (parse_crash, parse_jetsam):
            _read_or_reject(parse, data.encode())
