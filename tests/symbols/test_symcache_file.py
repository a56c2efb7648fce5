"""hawkwatch's own SymCache reader against symbolic's, on caches symbolic built for real binaries.

Every address of every test binary must get the same answer from both readers (function,
full path, line, function start — the whole inline chain); damaged files and versions the
reader does not know must either fall back to symbolic or end in a clear ``FormatError``.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest

from hawkwatch.errors import FormatError, UnsupportedVersion
from hawkwatch.model.crash import CrashFrame, CrashImage, CrashReport, CrashThread
from hawkwatch.symbols import SymbolStore, symbolic, symbolicate
from hawkwatch.symbols import symcache_file as reader_module
from hawkwatch.symbols._symbolic import location_lookup
from hawkwatch.symbols.symbolicate import _symbolic_resolver, mapped_resolver
from hawkwatch.symbols.symcache_file import NONE, SymCacheFile, clean_path, join_path
from tests.symbols.debug_files import LIB_LOAD, Built

_VERSION_AT, _LOCATIONS = 4, struct.Struct("<4I")


@pytest.fixture(scope="module")
def caches(built: Built, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """name -> stored SymCache path, for every kind of debug file the tests build."""
    store = SymbolStore(tmp_path_factory.mktemp("symcaches"))
    result = store.add([built.app_dsym, built.lib_dsym, built.elf, built.lib_x86_64])
    assert not result.skipped
    return {
        f"{info.name}-{info.arch}": store.root / f"{info.debug_id}.symcache"
        for info in result.added
    }


def _symbolic_answers(cache: Any, address: int) -> list[tuple[str, str | None, int, int]]:
    return [
        (entry.symbol, entry.full_path or None, entry.line, entry.sym_addr)
        for entry in cache.lookup(address)
    ]


def _addresses(reader: SymCacheFile) -> range:
    ranges = reader.ranges
    return range(max(0, ranges[0] - 16), ranges[len(ranges) - 1] + 64)


def test_every_address_answers_as_symbolic_does(caches):
    inlined = 0
    for name, path in caches.items():
        reader = SymCacheFile.open(path)
        theirs = symbolic().SymCache.open(str(path))
        assert reader.version == theirs.version == 9
        addresses = _addresses(reader)
        assert len(addresses) > 100, name
        for address in addresses:
            mine = reader.lookup(address)
            assert mine == _symbolic_answers(theirs, address), (name, hex(address))
            inlined += len(mine) > 1
        assert reader.lookup(NONE + 1) == _symbolic_answers(theirs, NONE + 1) == []
        reader.close()
    assert inlined, "the test binaries hold inlined code: chains must have been compared"


def test_frames_are_the_same_through_either_reader(caches):
    """The fast resolver (own reader) and the fallback (symbolic's lookup) build equal frames."""
    for name, path in caches.items():
        reader = SymCacheFile.open(path)
        fast = mapped_resolver(reader)
        slow = _symbolic_resolver(location_lookup(symbolic().SymCache.open(str(path))))
        for key in _addresses(reader):
            offset = key + 8
            assert fast(key, offset) == slow(key, offset), (name, hex(key))


def test_names_come_back_demangled(caches):
    reader = SymCacheFile.open(caches["libcrash.dylib-arm64"])
    fast = mapped_resolver(reader)
    symbols = {loc.symbol for key in _addresses(reader) for loc in fast(key, key)}
    assert any(symbol.startswith("hawk::") for symbol in symbols), symbols
    assert not any(symbol.startswith("__Z") for symbol in symbols), symbols


def test_the_store_reads_stored_and_adhoc_caches_itself(built, tmp_path):
    stored = SymbolStore(tmp_path / "s")
    stored.add([built.lib_dsym])
    adhoc = SymbolStore(tmp_path / "empty", extra=[built.lib_dsym])
    first, second = stored.symcache_file(built.lib_uuid), adhoc.symcache_file(built.lib_uuid)
    assert first is not None and second is not None
    assert [first.lookup(a) for a in _addresses(first)] == [
        second.lookup(a) for a in _addresses(first)
    ]


# -- versions it does not know, damaged files --------------------------------------------------


def _copy_store(built: Built, tmp_path: Path) -> tuple[SymbolStore, Path]:
    store = SymbolStore(tmp_path / "s")
    store.add([built.lib_dsym])
    (path,) = store.root.glob("*.symcache")
    return SymbolStore(store.root), path


def _crash_at(built: Built, file_address: int) -> CrashReport:
    image = CrashImage("libcrash.dylib", LIB_LOAD, LIB_LOAD + 0xFFFF, "arm64", built.lib_uuid)
    thread = CrashThread(0, frames=[CrashFrame(LIB_LOAD + file_address)])
    return CrashReport(format="test", arch="arm64", images=[image], threads=[thread])


def test_a_version_the_reader_does_not_know_goes_to_symbolic(built, tmp_path, monkeypatch):
    store, path = _copy_store(built, tmp_path)
    expected = symbolicate(_crash_at(built, built.crash_pc), store).threads[0].frames[0]
    assert store.symcache_file(built.lib_uuid) is not None  # that was the reader's answer

    monkeypatch.setattr(reader_module, "VERSIONS", (10,))  # as if the reader knew only v10
    with pytest.raises(UnsupportedVersion, match="SymCache version 9"):
        SymCacheFile.open(path)
    fresh = SymbolStore(store.root)
    assert fresh.symcache_file(built.lib_uuid) is None
    fallback = symbolicate(_crash_at(built, built.crash_pc), fresh).threads[0].frames[0]
    assert fallback == expected
    assert len(fallback.symbolicated) > 1  # the inlined hawk::deep came through symbolic too


def test_a_newer_version_on_disk_is_refused_clearly_and_symbolication_goes_on(built, tmp_path):
    store, path = _copy_store(built, tmp_path)
    data = bytearray(path.read_bytes())
    struct.pack_into("<I", data, _VERSION_AT, 10)
    path.write_bytes(data)
    with pytest.raises(UnsupportedVersion, match="version 10"):
        SymCacheFile.open(path)
    report = symbolicate(_crash_at(built, built.crash_pc), store)  # symbolic refuses it too
    assert report.threads[0].frames[0].symbolicated == []


@pytest.mark.parametrize("cut", [0, 3, 8, 79, 80, 200, "half", "last"])
def test_truncated_files_are_format_errors(built, tmp_path, cut):
    store, path = _copy_store(built, tmp_path)
    data = path.read_bytes()
    size = {"half": len(data) // 2, "last": len(data) - 1}[cut] if isinstance(cut, str) else cut
    path.write_bytes(data[:size])
    with pytest.raises(FormatError):
        SymCacheFile.open(path)
    assert store.symcache_file(built.lib_uuid) is None
    frame = symbolicate(_crash_at(built, built.crash_pc), store).threads[0].frames[0]
    assert frame.symbolicated == [] and frame.symbol is None


def test_not_a_symcache_at_all(tmp_path):
    path = tmp_path / "x.symcache"
    path.write_bytes(b"\x7fELF" + bytes(200))
    with pytest.raises(FormatError, match="not a SymCache"):
        SymCacheFile.open(path)
    path.write_bytes(b"CMYS" + bytes(200))
    with pytest.raises(FormatError, match="big-endian"):
        SymCacheFile.open(path)


def test_a_looping_inline_chain_stops(built, tmp_path):
    """A damaged inlined-into index must not hang a lookup: the chain is cut off."""
    _store, path = _copy_store(built, tmp_path)
    reader = SymCacheFile.open(path)
    index = reader.source_location(built.crash_pc)
    assert index >= 0
    offset = _locations_offset(path.read_bytes()) + 16 * index
    data = bytearray(path.read_bytes())
    file_index, line, function_index, _parent = _LOCATIONS.unpack_from(data, offset)
    _LOCATIONS.pack_into(data, offset, file_index, line, function_index, index)  # itself
    damaged = SymCacheFile(bytes(data))
    found = damaged.lookup(built.crash_pc)
    assert 1 < len(found) <= 256
    assert mapped_resolver(damaged)(built.crash_pc, built.crash_pc)


def test_damaged_string_and_index_references_give_placeholders(built, tmp_path):
    _store, path = _copy_store(built, tmp_path)
    reader = SymCacheFile.open(path)
    assert reader.string(NONE) is None
    assert reader.string(10**9) is None
    assert reader.function(10**9) == ("?", NONE)
    assert reader.file_path(10**9) is None
    assert reader.record(-5) == (NONE, 0, NONE, NONE)


def _locations_offset(data: bytes) -> int:
    files, functions = struct.unpack_from("<2I", data, 44)
    at = 80 + 24 * files
    at = (at + 7) & ~7
    return ((at + 16 * functions) + 7) & ~7


# -- symbolic_common's path rules, as its documentation states them ----------------------------


@pytest.mark.parametrize(
    ("base", "other", "joined"),
    [
        ("/a/b", "c/d", "/a/b/c/d"),
        ("/a/b/", "c", "/a/b/c"),
        ("/a/b", "/c/d", "/c/d"),
        ("C:\\a", "b\\c", "C:\\a\\b\\c"),
        ("C:\\a", "\\b", "C:\\b"),
        ("", "x.c", "x.c"),
        ("/a", "", "/a"),
        ("/a", "<stdin>", "<stdin>"),
    ],
)
def test_join_path(base, other, joined):
    assert join_path(base, other) == joined


@pytest.mark.parametrize(
    ("path", "cleaned"),
    [
        ("/a/./b", "/a/b"),
        ("/a/b/../c", "/a/c"),
        ("/foo/../../b", "../b"),
        ("a/b/", "a/b"),
        ("", ""),
        ("C:\\a\\.\\b", "C:\\a\\b"),
    ],
)
def test_clean_path(path, cleaned):
    assert clean_path(path) == cleaned
