"""Apple text reports: the header, frame, thread-state and image variants of apple-crash.md §2."""

# ruff: noqa: E501  (report lines are as long as Apple writes them)

from __future__ import annotations

import pytest

from hawkwatch.errors import FormatError
from hawkwatch.formats.apple_crash import parse_apple_crash, parse_frame_line, parse_image_line
from hawkwatch.formats.crash import parse_crash
from tests.formats.crash_fixtures import FIXTURES

# Written for these tests in the iOS 14 device layout (tab before the address, right-aligned).
IOS_REPORT = """\
Incident Identifier: 6156848E-344E-4D9E-84E0-87AFD0D0AE7B
CrashReporter Key:   76f2fb60060d6a7f814973377cbdc866fffd521f
Hardware Model:      iPhone12,1
Process:             TouchCanvas [1052]
Path:                /private/var/containers/Bundle/Application/1A3D/TouchCanvas.app/TouchCanvas
Identifier:          com.example.apple-samplecode.TouchCanvas
Version:             1 (3.0)
Code Type:           ARM-64 (Native)
Role:                Foreground
Parent Process:      launchd [1]

Date/Time:           2020-03-27 18:06:51.4969 -0700
Launch Time:         2020-03-27 18:06:31.7593 -0700
OS Version:          iPhone OS 13.3.1 (17D50)
Release Type:        User
Report Version:      104

Exception Type:  EXC_BREAKPOINT (SIGTRAP)
Exception Codes: 0x0000000000000001, 0x0000000102afb3d0
Termination Signal: Trace/BPT trap: 5
Termination Reason: Namespace SIGNAL, Code 0x5
Terminating Process: exc handler [1052]
Triggered by Thread:  0

Application Specific Information:
*** Terminating app due to uncaught exception 'NSRangeException', reason: 'index 3 beyond bounds'

Last Exception Backtrace:
(0x1a1c4d4c8 0x1a1b2d1c4 0x102afb3d0)

Thread 0 name:  Dispatch queue: com.apple.main-thread
Thread 0 Crashed:
0   TouchCanvas                   \t0x0000000102afb3d0 CanvasView.updateEstimatedPropertiesForTouches(_:) + 62416 (CanvasView.swift:231)
1   TouchCanvas                   \t       0x102afb3d4 0x102ae8000 + 0x133d4
2   CoreFoundation                \t0x00000001a1c4d4c8 0x1a1b9a000 + 0xb34c8\t// __CFRUNLOOP_IS_CALLING_OUT_TO_AN_OBSERVER_CALLBACK_FUNCTION__ + 0x24
3   libdyld.dylib                 \t0x00000001a1a2d1c4 start + 4

Thread 1:
0   libsystem_pthread.dylib       \t0x00000001a1b2d1c4 start_wqthread + 0

Thread 0 crashed with ARM Thread State (64-bit):
    x0: 0x0000000000000001   x1: 0x0000000000000002   x2: 0x0000000000000003   x3: 0x0000000000000004
    fp: 0x000000016d31b9a0   lr: 0x0000000102afb3a8
    sp: 0x000000016d31b940   pc: 0x0000000102afb3d0 cpsr: 0x60000000
   esr: 0xf2000001  Address size fault

Binary Images:
0x102ae8000 - 0x102b0bfff TouchCanvas arm64  <fe7a4b8ae4b93b47a9fd0c3a9b2b5c6d> /var/containers/Bundle/Application/1A3D/TouchCanvas.app/TouchCanvas
0x1a1b9a000 - 0x1a1f1ffff CoreFoundation arm64e  <1A2B3C4D-5E6F-7081-92A3-B4C5D6E7F809> /System/Library/Frameworks/CoreFoundation.framework/CoreFoundation
0x1a1a2c000 - 0x1a1a2ffff libdyld.dylib arm64e  <(null)> /usr/lib/system/libdyld.dylib

EOF
"""


def test_header_fields():
    report = parse_apple_crash(IOS_REPORT.encode()).value
    assert report.format == "apple-text"
    assert report.incident_id == "6156848E-344E-4D9E-84E0-87AFD0D0AE7B"
    assert (report.process, report.pid) == ("TouchCanvas", 1052)
    assert report.bundle_id == "com.example.apple-samplecode.TouchCanvas"
    assert report.app_version == "1 (3.0)"
    assert report.arch == "arm64"
    assert report.hardware_model == "iPhone12,1"
    assert report.os_version == "iPhone OS 13.3.1 (17D50)"
    assert report.timestamp == "2020-03-27T18:06:51.496900-07:00"
    assert report.metadata["Role"] == "Foreground"
    assert report.metadata["Termination Reason"] == "Namespace SIGNAL, Code 0x5"
    exception = report.exception
    assert (exception.type, exception.signal) == ("EXC_BREAKPOINT", "SIGTRAP")
    assert exception.codes == "0x0000000000000001, 0x0000000102afb3d0"
    assert (exception.name, exception.reason) == ("NSRangeException", "index 3 beyond bounds")


def test_threads_frames_and_registers():
    report = parse_apple_crash(IOS_REPORT).value
    assert [t.index for t in report.threads] == [0, 1]
    crashed = report.crashed_thread
    assert crashed is not None and crashed.index == 0
    assert crashed.queue == "com.apple.main-thread"
    first, second, third, fourth = crashed.frames
    assert first.address == 0x102AFB3D0
    assert first.symbol == "CanvasView.updateEstimatedPropertiesForTouches(_:)"
    assert (first.symbol_offset, first.file, first.line) == (62416, "CanvasView.swift", 231)
    assert (second.address, second.symbol) == (0x102AFB3D4, None)  # right-aligned, hex offset
    assert third.symbol == "__CFRUNLOOP_IS_CALLING_OUT_TO_AN_OBSERVER_CALLBACK_FUNCTION__"
    assert third.symbol_offset == 0x24
    assert (fourth.image, fourth.symbol, fourth.symbol_offset) == ("libdyld.dylib", "start", 4)
    assert crashed.registers["x3"] == 4
    assert crashed.registers["pc"] == 0x102AFB3D0
    assert crashed.registers["esr"] == 0xF2000001
    assert crashed.registers["cpsr"] == 0x60000000


def test_last_exception_backtrace_bare_address_list():
    report = parse_apple_crash(IOS_REPORT).value
    assert [f.address for f in report.last_exception_backtrace] == [
        0x1A1C4D4C8,
        0x1A1B2D1C4,
        0x102AFB3D0,
    ]


def test_last_exception_backtrace_frame_lines():
    text = IOS_REPORT.replace(
        "(0x1a1c4d4c8 0x1a1b2d1c4 0x102afb3d0)",
        "0   CoreFoundation   \t0x1a1c4d4c8 __exceptionPreprocess + 220\n"
        "1   libobjc.A.dylib  \t0x1a1b2d1c4 objc_exception_throw + 56",
    )
    frames = parse_apple_crash(text).value.last_exception_backtrace
    assert [(f.image, f.symbol, f.symbol_offset) for f in frames] == [
        ("CoreFoundation", "__exceptionPreprocess", 220),
        ("libobjc.A.dylib", "objc_exception_throw", 56),
    ]


def test_binary_images_uuid_forms():
    images = parse_apple_crash(IOS_REPORT).value.images
    assert [i.name for i in images] == ["TouchCanvas", "CoreFoundation", "libdyld.dylib"]
    assert images[0].debug_id == "fe7a4b8ae4b93b47a9fd0c3a9b2b5c6d"
    assert images[1].debug_id == "1a2b3c4d5e6f708192a3b4c5d6e7f809"  # dashed uppercase
    assert images[2].uuid is None  # <(null)>
    assert images[0].end_address == 0x102B0BFFF
    assert images[1].arch == "arm64e"


def test_macos_11_thread_header_with_inline_queue():
    text = (
        "Process: App [1]\n\nThread 0 Crashed:: Dispatch queue: com.apple.main-thread\n"
        "0   libsystem_kernel.dylib        \t    0x7ff81a2b3c4d __pthread_kill + 10\n"
    )
    thread = parse_apple_crash(text).value.threads[0]
    assert (thread.crashed, thread.queue, thread.name) == (True, "com.apple.main-thread", None)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("0 ??? 0x0000000054485244 0x0 + 0", (0x54485244, None, None, None)),
        (
            "5 Crash-Tester 0x0002f560 0x28000 + 30048 (-[Crasher dereferenceBadPointer] + 24)",
            (0x2F560, "Crash-Tester", "-[Crasher dereferenceBadPointer]", 24),
        ),
        ("13  My App Name   0x00000000000ea004 main (main.m:16)", (0xEA004, "My App Name", "main", None)),
        ("2 Foo 0x1 specialized foo+ 2378352 (Foo.swift) + 384", (1, "Foo", "specialized foo+ 2378352 (Foo.swift)", 384)),
    ],
)  # fmt: skip
def test_frame_line_forms(line, expected):
    frame = parse_frame_line(line)
    assert frame is not None
    assert (frame.address, frame.image, frame.symbol, frame.symbol_offset) == expected


def test_image_line_macos_bundle_id_and_arch_in_parentheses():
    image = parse_image_line(
        "       0x1017ff000 -        0x101885fff +com.AlphaSoft.iTubeDownloader (x86_64)  "
        "<7B639009-221F-3815-A7A3-657098146F8A> /Users/r/iTubeDownloader.app/Contents/MacOS/X"
    )
    assert image is not None
    assert (image.name, image.arch, image.version) == (
        "com.AlphaSoft.iTubeDownloader",
        "x86_64",
        None,
    )
    assert image.debug_id == "7b639009221f3815a7a3657098146f8a"


def test_kscrash_text_recrash_section():
    report = parse_crash((FIXTURES / "kscrash" / "CrashInHandler.txt").read_bytes()).value
    assert (report.exception.type, report.exception.signal) == ("EXC_BAD_ACCESS", "SIGSEGV")
    recrash = report.recrash
    assert recrash is not None
    assert (recrash.exception.type, recrash.exception.signal) == ("EXC_BAD_ACCESS", "SIGBUS")
    crashed = recrash.crashed_thread
    assert crashed is not None and crashed.index == 7
    assert crashed.name == "KSCrash Exception Handler (Primary)"
    assert crashed.frames[3].symbol == "onCrash"
    assert crashed.registers["pc"] == 0x3625D1DC
    assert recrash.images is report.images
    assert "Attempted to dereference garbage pointer" in report.metadata["CrashDoctor Diagnosis"]


def test_multiline_blocks_and_trailing_sections_are_kept():
    report = parse_crash((FIXTURES / "kscrash" / "NSException.txt").read_bytes()).value
    assert report.application_specific_info is not None
    assert report.application_specific_info.startswith("*** Terminating app due to uncaught")
    assert "Extra Information" in report.metadata
    assert report.metadata["CrashDoctor Diagnosis"].startswith("Application threw exception")
    abort = parse_crash((FIXTURES / "kscrash" / "Abort.txt").read_bytes()).value
    assert abort.metadata["Notable Addresses"].lstrip().startswith("{")


def test_legacy_ips_with_a_text_body():
    report = parse_crash((FIXTURES / "ips" / "AppleDemo.ips").read_bytes()).value
    assert report.format == "ips"
    assert report.metadata["Beta"] == "YES"
    assert report.metadata["ips.bug_type"] == "109"
    assert report.process == "demo"
    crashed = report.crashed_thread
    assert crashed is not None
    assert any(frame.file and frame.file.endswith(".swift") for frame in crashed.frames)
    assert "Filtered syslog" in report.metadata
    assert len(report.images) > 300


@pytest.mark.parametrize(
    "data",
    [b"", b"   \n", b"hello world\nthis is not a crash\n", b"\x00\x01\x02binary", b"[1, 2, 3]"],
    ids=["empty", "blank", "prose", "binary", "json-array"],
)
def test_not_a_crash_report(data):
    with pytest.raises(FormatError) as info:
        parse_crash(data, source="x.crash")
    assert "\n" not in str(info.value)
    assert str(info.value).startswith("x.crash: ")


def test_a_text_with_other_headers_is_not_a_crash_report():
    mail = b"From: someone\nSubject: Re: crash\n\nThread 7 of the discussion, see below.\n"
    with pytest.raises(FormatError, match="not a crash report"):
        parse_crash(mail, source="mail.txt")
