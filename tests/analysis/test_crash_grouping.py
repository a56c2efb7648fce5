"""Crash fingerprints: same bug → same group whatever the addresses, format or recursion depth."""

from __future__ import annotations

import copy

import pytest

from hawkwatch.analysis.crash_grouping import (
    GroupingConfig,
    app_bundle,
    fingerprint,
    group_crashes,
    in_app_images,
    trim_function,
)
from hawkwatch.formats.crash import read_crash
from hawkwatch.model.crash import CrashFrame, CrashImage, CrashReport, CrashThread, SourceLocation
from tests.formats.crash_fixtures import FIXTURES, kscrash_pairs

KSCRASH = FIXTURES / "kscrash"
# The text twin says less or other things than the JSON for these two.
DIFFERENT_EXCEPTION_TEXT = {
    "MainThreadDeadlock",  # "0 (0)" in text, error.type "deadlock" in JSON
    "ZombieNSException",  # the exception class only appears in the text's ASI
}


def _read(relative: str) -> CrashReport:
    return read_crash(FIXTURES / relative).value


@pytest.mark.parametrize("name", kscrash_pairs())
def test_text_and_json_of_one_crash_share_a_fingerprint(name):
    from_json = fingerprint(_read(f"kscrash/{name}.json"))
    from_text = fingerprint(_read(f"kscrash/{name}.txt"))
    assert from_json.variant == from_text.variant == "app"
    assert from_json.components[1:] == from_text.components[1:]
    if name not in DIFFERENT_EXCEPTION_TEXT:
        assert from_json == from_text


def test_ips_and_its_text_twin_share_a_fingerprint():
    ips = fingerprint(_read("ips/MemoryLeakingApp-2022-08-05-132419.ips"))
    text = fingerprint(_read("ips/MemoryLeakingApp-2022-08-05-132419.crash"))
    assert ips == text  # text frames are labelled by bundle id; the image file name decides


def _slid(report: CrashReport, slide: int) -> CrashReport:
    moved = copy.deepcopy(report)
    for image in moved.images:
        image.load_address += slide
        if image.end_address is not None:
            image.end_address += slide
    for thread in moved.threads:
        for frame in thread.frames:
            frame.address += slide
            frame.line = (frame.line or 0) + 7
    return moved


def test_addresses_and_line_numbers_do_not_count():
    report = _read("kscrash/BadPointer.json")
    assert fingerprint(_slid(report, 0x4000)) == fingerprint(report)


def test_the_same_crash_in_another_incident_groups_together():
    # CrashInHandler crashed in the same function as BadPointer before the handler crashed
    assert fingerprint(_read("kscrash/CrashInHandler.json")) == fingerprint(
        _read("kscrash/BadPointer.json")
    )
    assert fingerprint(_read("kscrash/Abort.json")) != fingerprint(_read("kscrash/BadPointer.json"))


def test_recursion_collapses():
    report = _read("kscrash/StackOverflow.json")
    key = fingerprint(report)
    assert key.components[1] == "Crash-Tester -[Crasher causeStackOverflow]"
    assert key.components.count("Crash-Tester -[Crasher causeStackOverflow]") == 1
    assert len(report.crashed_thread.frames) == 50  # type: ignore[union-attr]


def _report(*frames: tuple[str, str | None], path: str = "/var/x/App.app/App") -> CrashReport:
    images = [
        CrashImage(name="App", load_address=0x1000, end_address=0x1FFF, path=path),
        CrashImage(
            name="Kit",
            load_address=0x2000,
            end_address=0x2FFF,
            path="/var/x/App.app/Frameworks/Kit.framework/Kit",
        ),
        CrashImage(
            name="libswiftCore.dylib",
            load_address=0x3000,
            end_address=0x3FFF,
            path="/var/x/App.app/Frameworks/libswiftCore.dylib",
        ),
        CrashImage(name="UIKit", load_address=0x4000, end_address=0x4FFF, path="/System/UIKit"),
    ]
    bases = {image.name: image.load_address for image in images}
    thread = CrashThread(
        index=0,
        crashed=True,
        frames=[
            CrashFrame(address=bases[image] + 0x10 * n, image=image, symbol=symbol)
            for n, (image, symbol) in enumerate(frames)
        ],
    )
    report = CrashReport(format="test", process="App", process_path=path, images=images)
    report.threads = [thread]
    report.exception.type, report.exception.signal = "EXC_BAD_ACCESS", "SIGSEGV"
    return report


def test_in_app_is_the_bundle_minus_the_swift_runtime():
    report = _report(("App", "main"))
    assert app_bundle(report) == "/var/x/App.app"
    assert in_app_images(report) == {0, 1}
    wider = GroupingConfig(in_app_include=("UIKit",), in_app_exclude=())
    assert in_app_images(report, wider) == {0, 1, 2, 3}
    moved = _report(("App", "main"), path="/private/var/x/App.app/App")
    assert in_app_images(moved) == {0, 1}


def test_only_the_top_in_app_frames_count():
    report = _report(
        ("UIKit", "-[UIView layoutSubviews]"),
        ("Kit", "Kit.render(_:)"),
        ("libswiftCore.dylib", "swift_retain"),
        ("App", "App.ViewController.viewDidLoad()"),
        ("App", "main"),
    )
    key = fingerprint(report, GroupingConfig(frames=2))
    assert key.variant == "app"
    assert key.components == (
        "EXC_BAD_ACCESS (SIGSEGV)",
        "Kit Kit.render",
        "App App.ViewController.viewDidLoad",
    )
    assert key.title == "EXC_BAD_ACCESS (SIGSEGV) in Kit Kit.render"
    changed_system = _report(
        ("UIKit", "-[UIView setNeedsLayout]"),
        ("Kit", "Kit.render(_:)"),
        ("libswiftCore.dylib", "swift_release"),
        ("App", "App.ViewController.viewDidLoad()"),
        ("App", "main"),
    )
    assert fingerprint(changed_system, GroupingConfig(frames=2)) == key


def test_symbolicated_inline_frames_count_innermost_first():
    report = _report(("App", None))
    report.threads[0].frames[0].symbolicated = [
        SourceLocation("inlined_helper", "a.c", 3, inlined=True),
        SourceLocation("caller", "a.c", 10),
    ]
    assert fingerprint(report).components[1:] == ("App inlined_helper", "App caller")


def test_fallbacks_system_frames_then_exception_reason():
    system_only = _report(("UIKit", "-[UIView layoutSubviews]"), ("UIKit", None))
    key = fingerprint(system_only)
    assert (key.variant, key.components[1:]) == ("system", ("UIKit -[UIView layoutSubviews]",))
    bare = _report()
    bare.exception.reason = "index 12 beyond bounds [0 .. 3] at 0x1e59bc50"
    other = _report()
    other.exception.reason = "index 99 beyond bounds [0 .. 7] at 0x2222"
    assert fingerprint(bare).variant == "exception"
    assert fingerprint(bare) == fingerprint(other)
    sigterm = fingerprint(_read("sentry-cocoa/crash-sigterm.json"))
    assert (sigterm.variant, sigterm.title) == ("exception", "SIGTERM")


@pytest.mark.parametrize(
    ("name", "trimmed"),
    [
        ("std::vector<int, std::allocator<int> >::push_back(int&&)", "std::vector<T>::push_back"),
        ("void ns::foo<int>(int) const", "ns::foo<T>"),
        ("MainViewController.triggerFatalError(_:)", "MainViewController.triggerFatalError"),
        ("closure #1 in Foo.bar()", "closure #1 in Foo.bar"),
        ("-[Foo bar:]", "-[Foo bar:]"),
        ("core::ptr::drop_in_place::h0123456789abcdef", "core::ptr::drop_in_place"),
        ("foo [clone .cold]", "foo"),
        ("(anonymous namespace)::run()", "(anonymous namespace)::run"),
    ],
)  # fmt: skip
def test_trim_function(name, trimmed):
    assert trim_function(name) == trimmed


def test_group_crashes_counts_and_time_range():
    items = [
        ("a.json", _read("kscrash/BadPointer.json")),
        ("b.json", _read("kscrash/Abort.json")),
        ("c.json", _read("kscrash/CrashInHandler.json")),
    ]
    groups = group_crashes(items)
    assert [g.count for g in groups] == [2, 1]
    top = groups[0]
    assert top.sources == ["a.json", "c.json"]
    assert top.representative == "a.json"
    assert top.first_seen == "1970-01-17T18:46:32+00:00"
    assert top.last_seen == "1970-01-17T19:45:51+00:00"
