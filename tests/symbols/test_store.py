"""The symbol store: what it indexes, by which id, what it keeps, and ad-hoc folders."""

from __future__ import annotations

import shutil
import struct
import sys
import zipfile
from pathlib import Path

import pytest

from hawkwatch.model.crash import CrashFrame, CrashImage, CrashReport, CrashThread
from hawkwatch.symbols import SymbolsExtraMissing, SymbolStore, symbolicate, symbols_root
from hawkwatch.symbols.objects import read_headers
from tests.symbols.debug_files import LIB_LOAD, disassembly, make_fat

ARM64, X86_64 = 0x0100000C, 0x01000007


def _ids(store: SymbolStore) -> set[str]:
    return {info.debug_id for info in store.entries()}


def _undashed(uuid: str) -> str:
    return uuid.replace("-", "").lower()


def _one_frame(uuid: str, address: int, arch: str = "arm64", load: int = LIB_LOAD) -> CrashReport:
    image = CrashImage("libcrash.dylib", load, load + 0xFFFF, arch, uuid)
    thread = CrashThread(0, crashed=True, frames=[CrashFrame(address)])
    return CrashReport(format="test", arch=arch, images=[image], threads=[thread])


def test_root_follows_hawkwatch_home(monkeypatch, tmp_path):
    monkeypatch.setenv("HAWKWATCH_HOME", str(tmp_path / "home"))
    assert symbols_root() == tmp_path / "home" / "symbols"
    assert SymbolStore().root == tmp_path / "home" / "symbols"
    assert symbols_root(tmp_path / "x") == tmp_path / "x"


def test_dsym_bundles_are_indexed_by_uuid_with_their_link_address(built, tmp_path):
    store = SymbolStore(tmp_path / "s")
    added = store.add([built.app_dsym, built.lib_dsym]).added
    by_name = {info.name: info for info in added}
    assert by_name["app"].debug_id == _undashed(built.app_uuid)
    assert by_name["app"].text_vmaddr == 0x100000000
    assert by_name["libcrash.dylib"].text_vmaddr == 0
    assert all(info.has_debug_info and info.arch == "arm64" for info in added)
    # a new store object on the same folder sees the same entries (they are on disk)
    assert _ids(SymbolStore(tmp_path / "s")) == {
        _undashed(built.app_uuid),
        _undashed(built.lib_uuid),
    }


def test_the_symcache_is_enough_once_added(built, tmp_path):
    """The original dSYM may vanish: symbolication reads only the stored SymCache."""
    copy = tmp_path / "libcrash.dylib.dSYM"
    shutil.copytree(built.lib_dsym, copy)
    SymbolStore(tmp_path / "s").add([copy])
    shutil.rmtree(copy)
    report = _one_frame(built.lib_uuid, LIB_LOAD + built.crash_pc)
    frame = symbolicate(report, SymbolStore(tmp_path / "s")).threads[0].frames[0]
    assert frame.symbol == "hawk::crash_here(int*, int)"
    assert frame.line == built.lines["call-deep"]


def test_a_dsym_beats_a_binary_with_only_a_symbol_table(built, tmp_path):
    store = SymbolStore(tmp_path / "s")
    first = store.add([built.lib])  # the dylib: symbol table, DWARF was left in the .o files
    assert [info.has_debug_info for info in first.added] == [False]
    assert store.add([built.lib_dsym]).added  # replaces it
    later = store.add([built.lib])
    assert not later.added and "already stored with debug info" in later.skipped[0][1]
    frame = symbolicate(_one_frame(built.lib_uuid, LIB_LOAD + built.crash_pc), store)
    assert frame.threads[0].frames[0].line == built.lines["call-deep"]


def test_a_binary_without_dwarf_still_gives_function_names(built, tmp_path):
    store = SymbolStore(tmp_path / "s")
    store.add([built.lib])
    frame = symbolicate(_one_frame(built.lib_uuid, LIB_LOAD + built.crash_pc), store)
    resolved = frame.threads[0].frames[0]
    assert resolved.symbol == "hawk::crash_here(int*, int)"
    assert resolved.file is None


def test_fat_binaries_index_every_slice(built, tmp_path):
    fat = make_fat([(ARM64, 0, built.lib), (X86_64, 3, built.lib_x86_64)], tmp_path / "fat")
    headers = read_headers(fat.read_bytes())
    assert [h.arch for h in headers] == ["arm64", "x86_64"]
    store = SymbolStore(tmp_path / "s")
    added = store.add([fat]).added
    assert sorted(info.arch for info in added) == ["arm64", "x86_64"]
    (x86,) = [h for h in headers if h.arch == "x86_64"]
    assert x86.debug_id
    # the x86_64 slice answers for its own UUID (symbol table only: no DWARF in this slice)
    entry = disassembly(built.lib_x86_64)["_lib_entry"][0][0]
    report = _one_frame(x86.debug_id or "", LIB_LOAD + entry + 4, arch="x86_64")
    assert symbolicate(report, store).threads[0].frames[0].symbol == "lib_entry"


def test_zip_archives_of_dsyms(built, tmp_path):
    archive = tmp_path / "dSYMs.zip"
    with zipfile.ZipFile(archive, "w") as out:
        for path in built.lib_dsym.rglob("*"):
            out.write(path, path.relative_to(built.folder))
        out.writestr("README.txt", "not a debug file")
    store = SymbolStore(tmp_path / "s")
    result = store.add([archive])
    assert [info.debug_id for info in result.added] == [_undashed(built.lib_uuid)]
    assert "dSYMs.zip!libcrash.dylib.dSYM/Contents/Resources/DWARF/libcrash.dylib" in (
        result.added[0].source
    )


def test_elf_files_are_found_by_their_gnu_build_id(built, tmp_path):
    (header,) = read_headers(built.elf.read_bytes())
    assert header.arch == "x86_64" and len(header.debug_id or "") == 40
    store = SymbolStore(tmp_path / "s")
    (info,) = store.add([built.elf]).added
    assert info.has_debug_info
    assert store.find(header.debug_id or "") == info
    assert store.find(info.debug_id) == info


def test_folders_are_searched_and_other_files_ignored(built, tmp_path):
    store = SymbolStore(tmp_path / "s")
    result = store.add([built.folder])
    ids = _ids(store)
    assert {_undashed(built.app_uuid), _undashed(built.lib_uuid)} <= ids
    # app.c, .o files and Info.plist are not debug files: never reported as failures
    assert not [s for s in result.skipped if s[0].endswith((".c", ".plist"))]


def test_paths_that_hold_no_debug_file_are_skipped_with_a_reason(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    truncated = tmp_path / "truncated"
    truncated.write_bytes(bytes.fromhex("cffaedfe0c000001"))
    result = SymbolStore(tmp_path / "s").add([text, truncated, tmp_path / "missing"])
    assert not result.added
    reasons = dict(result.skipped)
    assert reasons[str(text)] == "not a Mach-O, ELF or zip file"
    assert reasons[str(tmp_path / "missing")] == "no such file or folder"
    assert str(truncated) in reasons


def test_adhoc_folders_are_searched_without_adding(built, tmp_path):
    store = SymbolStore(tmp_path / "s", extra=[built.folder])
    report = _one_frame(built.lib_uuid, LIB_LOAD + built.crash_pc)
    assert symbolicate(report, store).threads[0].frames[0].symbol == ("hawk::crash_here(int*, int)")
    assert not (tmp_path / "s").exists()
    assert store.entries() == []


def test_a_damaged_index_entry_costs_only_that_entry(built, tmp_path):
    store = SymbolStore(tmp_path / "s")
    store.add([built.app_dsym, built.lib_dsym])
    (tmp_path / "s" / f"{_undashed(built.app_uuid)}.json").write_text("{not json")
    assert _ids(SymbolStore(tmp_path / "s")) == {_undashed(built.lib_uuid)}


def test_missing_symbolic_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "symbolic", None)  # import symbolic -> ImportError
    with pytest.raises(SymbolsExtraMissing, match=r"hawkwatch\[symbols\]"):
        SymbolStore(tmp_path / "s").add([tmp_path])


def _set_compression(archive: Path, name: str, method: int) -> None:
    """Rewrite a stored member's compression method in both headers (zipfile has no API)."""
    data = bytearray(archive.read_bytes())
    with zipfile.ZipFile(archive) as z:
        info = z.getinfo(name)
    struct.pack_into("<H", data, info.header_offset + 8, method)  # local file header
    central = data.rfind(b"PK\x01\x02")
    while central >= 0:
        if data[central + 46 : central + 46 + len(name)] == name.encode():
            struct.pack_into("<H", data, central + 10, method)
        central = data.rfind(b"PK\x01\x02", 0, central)
    archive.write_bytes(bytes(data))


def test_a_zip_member_with_an_unknown_compression_method_is_skipped_with_a_reason(built, tmp_path):
    archive = tmp_path / "mixed.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.write(built.elf, "odd/libelf.so")
        out.write(built.elf, "good/libelf.so")
    _set_compression(archive, "odd/libelf.so", 99)
    result = SymbolStore(tmp_path / "s").add([archive])
    assert [info.source for info in result.added] == [f"{archive}!good/libelf.so"]
    assert result.skipped == [
        (
            f"{archive}!odd/libelf.so",
            "unreadable zip member: That compression method is not supported",
        )
    ]


def test_a_zip_with_nothing_usable_says_so_and_the_command_fails(tmp_path, capsys):
    from hawkwatch.cli import main

    archive = tmp_path / "notes.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("README.txt", "not a debug file")
    result = SymbolStore(tmp_path / "s").add([archive])
    assert result.added == []
    reason = "zip archive of 1 file(s), none Mach-O or ELF"
    assert result.skipped == [(str(archive), reason)]
    assert main(["symbols", "add", "--root", str(tmp_path / "s2"), str(archive)]) == 1
    err = capsys.readouterr().err
    assert f"{archive}: {reason}" in err
