"""Symbolication of real arm64 Mach-O debug files, checked against llvm-symbolizer.

The binaries come from ``sources/`` (see ``debug_files.py``): frame 0 is a store inside the
inlined ``hawk::deep`` in ``hawk::crash_here``; frames 1 and 2 are return addresses, which
must resolve to the call line (previous instruction), not the line after it.
"""

from __future__ import annotations

import gc

import pytest

from hawkwatch.model.crash import CrashFrame, CrashImage, CrashReport, CrashThread
from hawkwatch.symbols import (
    Symbolicator,
    SymbolStore,
    images_without_debug_files,
    symbolicate,
)
from hawkwatch.symbols.symbolicate import previous_instruction
from tests.symbols.debug_files import APP_LOAD, IMAGE_SIZE, LIB_LOAD, Built, symbolizer
from tests.symbols.reports import DYLD_UUID, stack


def _report(built: Built, *, app_uuid: str | None = None) -> CrashReport:
    images = [
        CrashImage("app", APP_LOAD, APP_LOAD + IMAGE_SIZE - 1, "arm64", app_uuid or built.app_uuid),
        CrashImage("libcrash.dylib", LIB_LOAD, LIB_LOAD + IMAGE_SIZE - 1, "arm64", built.lib_uuid),
        CrashImage("dyld", 0x180DE1000, 0x180DE8FFF, "arm64e", DYLD_UUID),
    ]
    frames = [CrashFrame(address, image=name) for name, _load, address in stack(built)]
    return CrashReport(
        format="test",
        arch="arm64",
        images=images,
        threads=[CrashThread(0, crashed=True, frames=frames)],
    )


@pytest.fixture
def store(built: Built, tmp_path) -> SymbolStore:
    store = SymbolStore(tmp_path / "symbols")
    result = store.add([built.app_dsym, built.lib_dsym])
    assert not result.skipped
    return store


def test_crashing_frame_expands_the_inlined_function(built, store):
    frame = symbolicate(_report(built), store).threads[0].frames[0]
    assert [(loc.symbol, loc.line, loc.inlined) for loc in frame.symbolicated] == [
        ("hawk::deep(int*, int)", built.lines["deep-store"], True),
        ("hawk::crash_here(int*, int)", built.lines["call-deep"], False),
    ]
    assert all(loc.file and loc.file.endswith("crashlib.cpp") for loc in frame.symbolicated)
    # the frame itself is the function that owns the stack frame, with atos's "+ offset"
    assert frame.symbol == "hawk::crash_here(int*, int)"
    assert frame.line == built.lines["call-deep"]
    assert frame.symbol_offset == built.crash_pc - built.crash_here_start


def test_caller_frames_resolve_to_the_call_line_not_the_line_after(built, store):
    frames = symbolicate(_report(built), store).threads[0].frames
    lib_entry, caller = frames[1], frames[2]
    assert (lib_entry.symbol, lib_entry.line) == ("lib_entry", built.lines["call-crash-here"])
    assert (caller.symbol, caller.line) == ("caller", built.lines["call-lib-entry"])
    assert caller.file and caller.file.endswith("app.c")
    assert caller.image == "app"
    # the executable's __TEXT starts at 0x100000000: the offset is from the function start
    assert caller.symbol_offset is not None and 0 < caller.symbol_offset < 0x40


def test_frames_agree_with_llvm_symbolizer(built, store):
    """Same function, file and line chain as llvm-symbolizer --adjust-vma SLIDE."""
    frames = symbolicate(_report(built), store).threads[0].frames
    lib_slide, app_slide = LIB_LOAD - built.lib_vmaddr, APP_LOAD - built.app_vmaddr
    addresses = [address for _name, _load, address in stack(built)]
    lookups = [
        (built.dwarf(built.lib_dsym), lib_slide, addresses[0]),
        (built.dwarf(built.lib_dsym), lib_slide, previous_instruction(addresses[1], "arm64")),
        (built.dwarf(built.app_dsym), app_slide, previous_instruction(addresses[2], "arm64")),
    ]
    for frame, (dwarf, slide, address) in zip(frames, lookups, strict=False):
        (oracle,) = symbolizer(dwarf, slide, address)
        ours = [
            (loc.symbol, (loc.file or "").rsplit("/", 1)[-1], loc.line)
            for loc in frame.symbolicated
        ]
        assert ours == oracle


def test_looking_up_the_return_address_itself_would_give_another_line(built):
    """The previous-instruction rule matters here: llvm-symbolizer at the raw return address."""
    (raw,) = symbolizer(built.dwarf(built.app_dsym), 0, built.caller_return)
    assert raw[-1][2] != built.lines["call-lib-entry"]


def test_images_without_debug_files_are_left_as_they_are_and_listed(built, store):
    report = symbolicate(_report(built), store)
    dyld_frame = report.threads[0].frames[3]
    assert dyld_frame.symbol is None and dyld_frame.symbolicated == []
    assert [image.name for image in images_without_debug_files(report, store)] == ["dyld"]


@pytest.mark.parametrize(
    "spelling",
    [str.upper, str.lower, lambda u: u.replace("-", ""), lambda u: "{" + u.lower() + "}"],
    ids=["upper", "lower", "undashed", "braced"],
)
def test_uuids_match_regardless_of_case_and_dashes(built, store, spelling):
    report = _report(built, app_uuid=spelling(built.app_uuid))
    assert symbolicate(report, store).threads[0].frames[2].symbol == "caller"


def test_a_uuid_that_differs_in_one_digit_does_not_match(built, store):
    wrong = built.app_uuid[:-1] + ("0" if built.app_uuid[-1] != "0" else "1")
    frame = symbolicate(_report(built, app_uuid=wrong), store).threads[0].frames[2]
    assert frame.symbol is None


def test_the_input_report_is_not_changed(built, store):
    report = _report(built)
    symbolicate(report, store)
    assert all(frame.symbol is None for frame in report.threads[0].frames)


def test_last_exception_backtrace_frames_are_all_return_addresses(built, store):
    report = _report(built)
    report.last_exception_backtrace = [CrashFrame(stack(built)[2][2], image="app")]
    (frame,) = symbolicate(report, store).last_exception_backtrace
    assert (frame.symbol, frame.line) == ("caller", built.lines["call-lib-entry"])


def test_inline_frames_a_report_already_has_are_replaced_not_doubled(built, store):
    report = _report(built)
    pc = report.threads[0].frames[0].address
    stale = CrashFrame(pc, image="libcrash.dylib", symbol="deep", inlined=True)
    report.threads[0].frames.insert(0, stale)
    frames = symbolicate(report, store).threads[0].frames
    assert len(frames) == 4
    assert len(frames[0].symbolicated) == 2


def test_previous_instruction_per_architecture():
    assert previous_instruction(0x1000, "arm64") == 0xFFC
    assert previous_instruction(0x1002, "arm64e") == 0xFFC
    assert previous_instruction(0x1000, "x86_64") == 0xFFF
    assert previous_instruction(0x1000, None) == 0xFFF


def test_bulk_lookups_equal_single_ones_and_restore_the_collector(built, store):
    image = _report(built).images[1]
    addresses = [address for name, _load, address in stack(built) if name == "libcrash.dylib"]
    single = [Symbolicator(store).locations(image, a, caller=False) for a in addresses]

    assert gc.isenabled()
    assert Symbolicator(store).locations_many(image, addresses) == single
    assert gc.isenabled()  # paused only while resolving
    gc.disable()
    try:
        symbolicate(_report(built), store)
        assert not gc.isenabled()  # a caller's own choice is kept
    finally:
        gc.enable()
