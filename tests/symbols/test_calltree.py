"""MTHawkeye CPU high-load trees from an iPhone: address frames become functions and lines.

The session folder is what MTHawkeye writes (``records`` with ``cpu-highload`` and
``cpu-highload-stackframe``, ``dyld-images``), for the arm64 binaries the tests build; the tree
is the crash stack of ``tests/symbols/reports.py`` seen as samples: dyld → caller → lib_entry
→ the sampled pc, where ``hawk::deep`` is inlined into ``hawk::crash_here``.
"""

from __future__ import annotations

import json

import pytest

from hawkwatch.cli import main
from hawkwatch.formats.hawkeye import read_dyld_images
from hawkwatch.formats.hawkeye_cpu import read_highload
from hawkwatch.formats.hawkeye_stacks import crash_images
from hawkwatch.model.profile import CallNode
from hawkwatch.model.stack import PyFrame
from hawkwatch.store import Session
from hawkwatch.symbols import Symbolicator, SymbolStore, symbolicate_roots
from tests.builders import write_hawkeye_records
from tests.symbols.debug_files import APP_LOAD, DYLD_LOAD, LIB_LOAD, Built
from tests.symbols.reports import DYLD_UUID, stack

KEY = "575944400.50"


def _tree(built: Built) -> list[dict]:
    pc, lib_return, app_return, dyld = (address for _name, _load, address in stack(built))
    leaf = {"frame": hex(pc), "count": 8, "proportion": 0.8}
    lib = {"frame": hex(lib_return), "count": 8, "proportion": 0.8, "children": [leaf]}
    app = {"frame": hex(app_return), "count": 10, "proportion": 1.0, "children": [lib]}
    return [{"frame": hex(dyld), "count": 10, "proportion": 1.0, "children": [app]}]


@pytest.fixture
def session(built: Built, tmp_path):
    folder = tmp_path / "2019-04-03_08-32-42+052"
    average = {"start": KEY, "lasting": "65.00", "average": "97.00"}
    write_hawkeye_records(
        folder,
        [
            f"cpu-highload,{KEY},{json.dumps(average)}",
            f"cpu-highload-stackframe,{KEY},{json.dumps(_tree(built))}",
        ],
    )
    images = [
        ("App.app/app", built.app_uuid, APP_LOAD, APP_LOAD - built.app_vmaddr),
        (
            "App.app/Frameworks/libcrash.dylib",
            built.lib_uuid,
            LIB_LOAD,
            LIB_LOAD - built.lib_vmaddr,
        ),
        ("/usr/lib/dyld", DYLD_UUID, DYLD_LOAD, 0),
    ]
    dyld_images = {
        "arch": "arm64 v8",
        "dyld_images": [
            {"name": name, "uuid": uuid, "base_addr": hex(base), "addr_slide": hex(slide)}
            for name, uuid, base, slide in images
        ],
    }
    (folder / "dyld-images").write_text(json.dumps(dyld_images))
    return folder


def _chain(node: CallNode) -> list[tuple[object, int]]:
    out = []
    while True:
        frame = node.frame
        out.append((frame if isinstance(frame, int) else (frame.func, frame.line), node.count))
        if not node.children:
            return out
        (node,) = node.children


def test_address_frames_become_functions_with_inlined_calls_as_callees(built, session, tmp_path):
    opened = Session.open(session)
    (episode,) = read_highload(session, opened.records().records, is_hawkwatch=False).value
    store = SymbolStore(tmp_path / "symbols")
    store.add([built.app_dsym, built.lib_dsym])
    images = crash_images(read_dyld_images(session).value)

    (root,) = symbolicate_roots(episode.roots, images, Symbolicator(store), "arm64")

    dyld_address = stack(built)[3][2]
    assert _chain(root) == [
        (dyld_address, 10),  # no debug file: stays an address
        (("caller", built.lines["call-lib-entry"]), 10),  # return address: the call's line
        (("lib_entry", built.lines["call-crash-here"]), 8),
        (("hawk::crash_here(int*, int)", built.lines["call-deep"]), 8),  # the sampled pc...
        (("hawk::deep(int*, int)", built.lines["deep-store"]), 8),  # ...inside an inlined call
    ]
    leaf = root.children[0].children[0].children[0].children[0].frame
    assert isinstance(leaf, PyFrame) and leaf.module == "libcrash.dylib"
    assert leaf.file.endswith("crashlib.cpp")


def test_hawkwatch_profile_exports_the_symbolicated_tree(built, session, tmp_path, capsys):
    argv = ["profile", str(session), "--format", "collapsed", "--symbols", str(built.folder)]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    stacks = {}
    for line in lines:
        stack_text, count = line.rsplit(" ", 1)
        functions = tuple(frame.split(" (")[0] for frame in stack_text.split(";"))
        assert functions[0].startswith("0x")  # dyld: no debug file anywhere
        stacks[functions[1:]] = int(count)
    assert stacks == {
        ("caller",): 2,  # samples that stopped in caller itself
        ("caller", "lib_entry", "hawk::crash_here(int*, int)", "hawk::deep(int*, int)"): 8,
    }


def test_without_debug_files_frames_stay_addresses(session, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HAWKWATCH_HOME", str(tmp_path / "empty-home"))
    assert main(["profile", str(session), "--format", "collapsed"]) == 0
    out = capsys.readouterr().out
    assert all(frame.startswith("0x") for frame in out.split(" ")[0].split(";"))
