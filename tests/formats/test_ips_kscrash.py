""".ips (bug_type 309) and KSCrash JSON: addresses, inline frames, recrash, odd inputs."""

from __future__ import annotations

import json

import pytest

from hawkwatch.errors import FormatError
from hawkwatch.formats.crash import parse_crash, read_crash
from hawkwatch.formats.ips import parse_ips
from hawkwatch.formats.kscrash import parse_kscrash
from tests.formats.crash_fixtures import FIXTURES, kscrash_pairs

IPS = FIXTURES / "ips"
SENTRY = FIXTURES / "sentry-cocoa"
KSCRASH = FIXTURES / "kscrash"


def _body(name: str) -> dict:
    text = (IPS / name).read_text()
    decoder = json.JSONDecoder()
    _header, end = decoder.raw_decode(text)
    body, _ = decoder.raw_decode(text, end + text[end:].index("{"))
    return body


@pytest.mark.parametrize(
    "name", sorted(p.name for p in IPS.glob("*.ips") if p.name != "AppleDemo.ips")
)
def test_ips_frame_address_is_image_base_plus_offset(name):
    body = _body(name)
    report = read_crash(IPS / name).value
    images = body["usedImages"]
    for thread, raw in zip(report.threads, body["threads"], strict=True):
        assert len(thread.frames) == len(raw["frames"])
        for frame, want in zip(thread.frames, raw["frames"], strict=True):
            assert frame.address == images[want["imageIndex"]]["base"] + want["imageOffset"]
            assert frame.inlined == want.get("inline", False)
            assert frame.symbol == want.get("symbol")
    assert report.crashed_thread is report.threads[body["faultingThread"]]  # fmt: skip


def test_ips_fields():
    report = read_crash(IPS / "AppleJson.ips").value
    assert report.crashed_thread is not None and report.crashed_thread.index == 1
    assert report.crashed_thread.queue == "com.apple.root.default-qos"
    assert report.os_version == "iPhone OS 15.2.1 (19C63)"
    assert report.hardware_model == "iPhone13,4"
    assert report.arch == "arm64"
    assert report.incident_id == "4904A8AF-6173-4A1B-B354-0A9C4FB1F673"
    assert report.timestamp is not None and report.timestamp.startswith("2022-03-16T11:45:14")
    assert report.metadata["Termination Reason"].startswith("Namespace TCC, Code 0")
    assert "NSCameraUsageDescription" in report.metadata["Termination Reason"]
    image = report.images[0]
    assert (image.name, image.uuid) == ("Foundation", "9618b2f2-a4c2-3e07-b7ee-d8d9e1bdeaec")
    assert image.end_address == image.load_address + 3174400 - 1
    assert report.crashed_thread.registers["x0"] == 11


def test_ips_trailing_text_inline_frames_and_asi():
    report = read_crash(IPS / "DuckDuckGo-ExampleCrash.ips").value  # "System Profile:" after it
    inlined = [f for t in report.threads for f in t.frames if f.inlined]
    assert len(inlined) == 12
    assert report.application_specific_info is not None
    assert "MainMenuActions.swift:437: Fatal error" in report.application_specific_info
    assert report.bundle_id == "com.duckduckgo.macos.browser"


def test_ips_header_trap_and_last_exception_backtrace():
    xctest = read_crash(IPS / "xctest-concated-json-crash.ips").value
    assert xctest.process == "xctest3"  # the body's procName wins over the header's name
    assert xctest.metadata["ips.app_name"] == 'x{cte"st'
    frames = xctest.crashed_thread.frames  # type: ignore[union-attr]
    assert (frames[0].file, frames[0].line, frames[1].line) == ("TpxUnitTests.m", 15, 14)
    nsexc = read_crash(IPS / "nsexcrash.ips").value
    assert len(nsexc.last_exception_backtrace) == 7
    assert nsexc.last_exception_backtrace[0].symbol == "__exceptionPreprocess"
    assert nsexc.application_specific_info == "abort() called"


def test_ips_and_its_text_twin_agree():
    ips = read_crash(IPS / "MemoryLeakingApp-2022-08-05-132419.ips").value
    text = read_crash(IPS / "MemoryLeakingApp-2022-08-05-132419.crash").value
    assert [[f.address for f in t.frames] for t in ips.threads] == [
        [f.address for f in t.frames] for t in text.threads
    ]
    assert {i.debug_id for i in ips.images} == {i.debug_id for i in text.images}
    assert ips.crashed_thread.registers["rip"] == text.crashed_thread.registers["rip"]  # type: ignore[union-attr]


@pytest.mark.parametrize("name", kscrash_pairs())
def test_kscrash_json_and_its_text_twin_agree(name):
    from_json = read_crash(KSCRASH / f"{name}.json").value
    from_text = read_crash(KSCRASH / f"{name}.txt").value
    assert from_json.incident_id == from_text.incident_id
    assert [[f.address for f in t.frames] for t in from_json.threads] == [
        [f.address for f in t.frames] for t in from_text.threads
    ]
    json_crashed, text_crashed = from_json.crashed_thread, from_text.crashed_thread
    assert json_crashed is not None and text_crashed is not None
    assert json_crashed.index == text_crashed.index
    assert [f.symbol for f in json_crashed.frames] == [f.symbol for f in text_crashed.frames]
    assert [(i.load_address, i.debug_id) for i in from_json.images] == [
        (i.load_address, i.debug_id) for i in from_text.images
    ]


def test_kscrash_fields():
    report = read_crash(SENTRY / "crash-report-1.json").value
    assert report.timestamp == "2017-04-03T09:13:17+00:00"  # 3.2.0: integer seconds
    image = report.images[0]
    assert (image.name, image.text_vmaddr, image.arch) == ("CrashProbeiOS", 0x100000000, "arm64")
    assert image.load_address == 4295180288
    frame = report.crashed_thread.frames[0]  # type: ignore[union-attr]
    assert frame.symbol == "_ZNK16kaboom_exception4whatEv"
    assert frame.symbol_offset == 4296329892 - 4296327660
    old = read_crash(KSCRASH / "Abort.json").value
    assert old.timestamp == "1970-01-17T18:47:06+00:00"  # 2.0: ISO-8601 text
    assert old.os_version == "iPhone OS 4.3.3 (8J2)"
    assert old.images[0].arch == "armv7"
    nx = read_crash(SENTRY / "NX-Page.json").value
    assert nx.crashed_thread.frames[-1].symbol is None  # type: ignore[union-attr]  # <redacted>


def test_kscrash_exceptions():
    cpp = read_crash(SENTRY / "CPPException.json").value.exception
    assert (cpp.name, cpp.reason) == ("MyException", "Something bad happened...")
    ns = read_crash(KSCRASH / "NSException.json").value
    assert ns.exception.name == "NSInvalidArgumentException"
    assert ns.application_specific_info is not None
    assert "uncaught exception 'NSInvalidArgumentException'" in ns.application_specific_info
    new_ns = read_crash(SENTRY / "sentry-ios-cocoapods-report-0000000053800000.json").value
    assert (new_ns.exception.name, new_ns.exception.reason) == ("ablblblblb", "this is the reason")
    swift = read_crash(SENTRY / "fatal-error-binary-images-iphone.json").value
    assert swift.exception.signal == "SIGTRAP"  # given only as the number 5
    assert "Hello fatal" in (swift.application_specific_info or "")
    deadlock = read_crash(KSCRASH / "MainThreadDeadlock.json").value
    assert deadlock.exception.type == "deadlock"


def test_kscrash_recrash_old_layout():
    report = read_crash(KSCRASH / "CrashInHandler.json").value
    assert report.exception.signal == "SIGSEGV"
    assert report.recrash is not None
    assert report.recrash.exception.signal == "SIGBUS"
    assert report.recrash.crashed_thread is not None


def test_kscrash_recrash_minimal_outer_report():
    report = read_crash(SENTRY / "UnknownTypeException.json").value
    assert report.process == "SomeBuggyApp"  # the original, from recrash_report
    assert (report.exception.type, report.exception.signal) == ("EXC_CRASH", "SIGABRT")
    assert report.recrash is not None
    assert report.recrash.exception.signal == "SIGBUS"
    crashed = report.recrash.crashed_thread
    assert crashed is not None and crashed.frames[0].symbol == "objc_msgSend"


def test_kscrash_only_recrash_report_and_string_threads():
    incomplete = read_crash(SENTRY / "incomplete.json").value
    assert incomplete.process == "CrashProbeiOS"
    assert incomplete.images
    parsed = read_crash(SENTRY / "recrash-report.json")
    assert any("not a JSON object" in s.reason for s in parsed.skipped)
    assert parsed.value.exception.codes == f"{3657279596:#018x}, {8:#018x}"


def test_kscrash_faulty_image_is_skipped_not_fatal():
    parsed = read_crash(SENTRY / "Crash-faulty-report.json")
    assert len(parsed.value.images) == 1
    assert [s.reason for s in parsed.skipped] == ["binary_images entry is not an image object"]


def test_recrash_report_as_truncated_json_string():
    inner = (KSCRASH / "Abort.json").read_text()
    document = {"recrash_report": inner[: len(inner) // 2], "report": {"type": "minimal"}}
    parsed = parse_kscrash(json.dumps(document).encode())
    full = read_crash(KSCRASH / "Abort.json").value.images
    recovered = parsed.value.images  # the file's first key: binary_images, cut half-way
    assert 0 < len(recovered) < len(full)
    assert recovered[:-1] == full[: len(recovered) - 1]  # the last one may be cut short
    assert any("truncated" in s.reason for s in parsed.skipped)


def test_jetsam_and_other_bug_types_are_refused_by_the_crash_reader():
    jetsam = b'{"bug_type":"298","os_version":"iPhone OS 14.0"}\n{"memoryStatus":{}}'
    with pytest.raises(FormatError, match="hawkwatch jetsam"):
        parse_crash(jetsam)
    with pytest.raises(FormatError, match="bug_type 202"):
        parse_ips(b'{"bug_type":"202"}\n{"foo": 1}')
    with pytest.raises(FormatError, match="no report body"):
        parse_ips(b'{"bug_type":"309"}\n')
    with pytest.raises(FormatError, match="not a crash report"):
        parse_crash(b'{"name": "package.json", "version": "1.0"}')


def test_ips_header_and_body_on_one_line_or_with_a_bom():
    text = (IPS / "nullderef.ips").read_text()
    header, _, body = text.partition("\n")
    expected = parse_ips(text.encode()).value
    for variant in (header + body, "\ufeff" + text, header + " \r\n" + body):
        report = parse_crash(variant.encode(), source="v").value
        assert report.format == "ips"
        assert [[f.address for f in t.frames] for t in report.threads] == [
            [f.address for f in t.frames] for t in expected.threads
        ]
