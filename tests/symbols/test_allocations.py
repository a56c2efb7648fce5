"""Allocation stacks from an iPhone symbolicated against the real arm64 test binaries and dSYMs.

The stacks hold return addresses into the dylib built by ``debug_files.py`` (one of them right
after the store inside the inlined ``hawk::deep``), the executable and dyld (no debug file);
``llvm-symbolizer`` on the previous instruction is the oracle, as atos would be.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hawkwatch.cli import main
from hawkwatch.formats.allocations import read_allocations
from hawkwatch.symbols import Symbolicator, SymbolStore
from hawkwatch.symbols.allocations import symbolicate_allocations
from tests.formats.memory_artifacts import (
    HawkeyeStacksWriter,
    MslTableWriter,
    Process,
    splay_file,
)
from tests.symbols.debug_files import APP_LOAD, DYLD_LOAD, LIB_LOAD, Built, symbolizer
from tests.symbols.reports import APP_PATH, DYLD_START, DYLD_UUID, LIB_PATH


def _stack(built: Built) -> list[int]:
    """Innermost first: inside inlined deep (as a return address), lib_entry, caller, dyld."""
    return [
        LIB_LOAD + built.crash_pc + 4 - built.lib_vmaddr,
        LIB_LOAD + built.lib_entry_return - built.lib_vmaddr,
        APP_LOAD + built.caller_return - built.app_vmaddr,
        DYLD_START,
    ]


def _dyld_images(built: Built) -> dict:
    images = [
        (APP_PATH, built.app_uuid, APP_LOAD, APP_LOAD - built.app_vmaddr),
        (LIB_PATH, built.lib_uuid, LIB_LOAD, LIB_LOAD - built.lib_vmaddr),
        ("/usr/lib/dyld", DYLD_UUID, DYLD_LOAD, 0),
    ]
    return {
        "arch": "arm64 v8",
        "dyld_images": [
            {"name": name, "uuid": uuid.replace("-", "").lower(), "base_addr": hex(base),
             "addr_slide": hex(slide)}
            for name, uuid, base, slide in images
        ],
    }  # fmt: skip


@pytest.fixture
def hawkeye_folder(built: Built, tmp_path: Path) -> Path:
    folder = tmp_path / "2019-04-03_08-32-42+052" / "allocations"
    folder.mkdir(parents=True)
    stacks = HawkeyeStacksWriter()
    stack_id = stacks.add(_stack(built))
    short = stacks.add(_stack(built)[2:])
    malloc = [(0x280010000, 600_000, 0, stack_id, 0, 2), (0x280020000, 64, 0, short, 0, 2)]
    (folder / "malloc_records_raw").write_bytes(splay_file(malloc))
    (folder / "stacks_records_raw").write_bytes(stacks.file_bytes())
    (folder / "dyld-images").write_text(json.dumps(_dyld_images(built)))
    return folder.parent


def _oracle(built: Built) -> list[tuple[str, str, int]]:
    """llvm-symbolizer's frames (inlined first) for the three return addresses with dSYMs."""
    pc, lib_return, app_return, _dyld = _stack(built)
    lib_slide, app_slide = LIB_LOAD - built.lib_vmaddr, APP_LOAD - built.app_vmaddr
    lib_dwarf, app_dwarf = built.dwarf(built.lib_dsym), built.dwarf(built.app_dsym)
    frames = []
    frames += symbolizer(lib_dwarf, lib_slide, pc - 4)[0]
    frames += symbolizer(lib_dwarf, lib_slide, lib_return - 4)[0]
    frames += symbolizer(app_dwarf, app_slide, app_return - 4)[0]
    return frames


def test_allocation_stacks_match_llvm_symbolizer(built, hawkeye_folder, tmp_path):
    store = SymbolStore(tmp_path / "symbols")
    store.add([built.app_dsym, built.lib_dsym])
    live = read_allocations(hawkeye_folder).value
    named = symbolicate_allocations(live, Symbolicator(store))
    big = max(named.groups, key=lambda group: group.bytes)
    frames = named.stacks.stack(big.stack_id)
    resolved = [(f.symbol, Path(f.file).name, f.line) for f in frames if f.symbol]
    oracle = _oracle(built)
    assert resolved == oracle
    assert [f.inlined for f in frames[:2]] == [True, False]  # hawk::deep inlined in crash_here
    assert frames[-1].address == DYLD_START and not frames[-1].symbol  # no debug file
    assert frames[-1].image == "dyld"
    assert {frame.image for frame in frames[:3]} == {"libcrash.dylib"}


def test_cli_json_report_is_symbolicated(built, hawkeye_folder, capsys):
    argv = ["allocations", str(hawkeye_folder), "--json", "--symbols", str(built.folder)]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["source"] == "mthawkeye-allocations"
    assert report["total_live_bytes"] == 600_064 and report["live_count"] == 2
    (category,) = report["categories"]
    assert category["name"] == "malloc"
    top = category["stacks"][0]
    assert (top["bytes"], top["count"]) == (600_000, 1)
    functions = [(f["function"], f["line"]) for f in top["frames"]]
    assert functions[:4] == [(name, line) for name, _file, line in _oracle(built)][:4]
    assert top["frames"][0]["address"] == hex(_stack(built)[0])
    assert top["caller"]["image"] == "libcrash.dylib"  # first frame inside the app bundle
    assert top["over_threshold"] is True  # ≥ MTHawkeye's 500 KiB malloc threshold


def test_msl_folder_with_a_binary_images_file_is_symbolicated(built, tmp_path, capsys):
    folder = tmp_path / "msl"
    folder.mkdir()
    process = Process("msl-framework-64", MslTableWriter("framework"))
    frames = tuple(_stack(built))
    process.alloc(0x600000010000, 4096, frames)
    process.alloc(0x600000020000, 8192, frames)
    process.free(0x600000010000, frames)
    (folder / "stack-logs.426.1016bc000.app.Kplvj1.index").write_bytes(process.index_bytes())
    (folder / "mytable").write_bytes(process.table.serialized())
    lines = [f"Path: {APP_PATH}", "Binary Images:"]
    for name, uuid, base, _slide in [
        (APP_PATH, built.app_uuid, APP_LOAD, 0),
        (LIB_PATH, built.lib_uuid, LIB_LOAD, 0),
        ("/usr/lib/dyld", DYLD_UUID, DYLD_LOAD, 0),
    ]:
        short = Path(name).name
        lines.append(f"{base:#x} - {base + 0x7FFF:#x} {short} arm64 <{uuid}> {name}")
    (folder / "images.txt").write_text("\n".join(lines) + "\n")
    argv = ["allocations", str(folder), "--format", "collapsed", "--symbols", str(built.folder)]
    assert main(argv) == 0
    (line,) = capsys.readouterr().out.splitlines()
    stack_text, weight = line.rsplit(" ", 1)
    assert weight == "8192"
    names = [frame.split(" (")[0] for frame in stack_text.split(";")]
    expected = [name for name, _f, _l in reversed(_oracle(built))]
    assert names == [hex(DYLD_START), *expected]
