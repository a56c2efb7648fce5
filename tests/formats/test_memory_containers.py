"""MTHawkeye Allocations folders and `.memgraph` files written byte for byte, read back."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hawkwatch.errors import FormatError
from hawkwatch.formats.allocations import read_allocations
from hawkwatch.formats.hawkeye_allocations import parse_stacks, parse_tree
from hawkwatch.formats.memgraph import parse_memgraph
from tests.formats.memory_artifacts import (
    HawkeyeStacksWriter,
    MslTableWriter,
    memgraph_bytes,
    splay_file,
)
from tests.formats.test_msl import observed

APP = 0x104A00000
A = [0x104A04F10, 0x104A03A2C, 0x1A0001000]
B = [0x104A05004, 0x104A03A2C, 0x1A0001000]
C = [0x1A0002000, 0x1A0001000]


def _dyld_images(folder):
    images = [
        {"name": "/var/containers/Bundle/Application/X/Demo.app/Demo", "uuid": "ab" * 16,
         "base_addr": hex(APP), "addr_slide": hex(APP - 0x100000000)},
        {"name": "/usr/lib/system/libsystem_malloc.dylib", "uuid": "cd" * 16,
         "base_addr": "0x1a0000000", "addr_slide": "0x0"},
    ]  # fmt: skip
    (folder / "dyld-images").write_text(json.dumps({"arch": "arm64 v8", "dyld_images": images}))


@pytest.fixture
def hawkeye_session(tmp_path):
    folder = tmp_path / "2019-04-03_08-32-42+052" / "allocations"
    folder.mkdir(parents=True)
    stacks = HawkeyeStacksWriter()
    a, b, c = stacks.add(A), stacks.add(B), stacks.add(C)
    type_name = APP + 0x8123  # a class-name C string inside the app image
    malloc = [
        (0x280010000, 4096, 0, a, 0, 2),
        (0x280011000, 4096, 0, a, 0, 2),
        (0x280020000, 700_000, type_name, b, 0, 2),
        (0x280030000, 64, 0, c, 0, 2),
    ]
    vm = [(0x300000000, 0x200000, 0, b, 88, 16), (0x310000000, 0x8000, 0, c, 0, 16 | 128)]
    (folder / "malloc_records_raw").write_bytes(splay_file(malloc, freed=3))
    (folder / "vm_records_raw").write_bytes(splay_file(vm))
    (folder / "stacks_records_raw").write_bytes(stacks.file_bytes())
    _dyld_images(folder)
    return folder.parent


def test_mthawkeye_allocations_are_read_exactly(hawkeye_session):
    live = read_allocations(hawkeye_session).value
    assert live.source == "mthawkeye-allocations"
    assert observed(live) == {
        (tuple(A), "malloc"): (8192, 2),
        (tuple(B), "type at Demo+0x8123"): (700_000, 1),
        (tuple(C), "malloc"): (64, 1),
        (tuple(B), "VM: IOSURFACE"): (0x200000, 1),
        (tuple(C), "VM: mapped file"): (0x8000, 1),
    }  # the three freed slots (address 0, stack word kept) are not live
    assert live.arch == "arm64"
    assert [image.name for image in live.images] == ["Demo", "libsystem_malloc.dylib"]


def test_a_truncated_splay_file_keeps_the_whole_nodes(hawkeye_session):
    path = hawkeye_session / "allocations" / "malloc_records_raw"
    path.write_bytes(path.read_bytes()[: 48 + 40 * 3 + 17])
    parsed = read_allocations(hawkeye_session)
    assert parsed.value.total_count == 2 + 2  # two malloc nodes left, two VM regions
    assert "the file holds 2" in parsed.skipped[0].reason


@settings(max_examples=150, deadline=None)
@given(data=st.binary(max_size=400))
def test_arbitrary_mthawkeye_bytes_parse_or_raise_format_error(data):
    for parse in (parse_tree, parse_stacks):
        try:
            result = parse(data)
        except FormatError:
            continue
        assert result is not None


IMAGES_TEXT = """Binary Images:
       0x104a00000 -        0x104a07fff Demo arm64  <abababababababababababababababab> /private/var/containers/Bundle/Application/X/Demo.app/Demo
       0x1a0000000 -        0x1a0ffffff libsystem_malloc.dylib arm64e  <cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd> /usr/lib/system/libsystem_malloc.dylib
"""  # noqa: E501
DESCRIPTION = """Process:         Demo [426]
Path:            /private/var/containers/Bundle/Application/X/Demo.app/Demo
Identifier:      com.example.demo
Version:         1.0 (1)
Code Type:       ARM-64
OS Version:      iOS 14.2 (18B92)
Report Version:  7
"""


def _memgraph() -> tuple[bytes, dict]:
    table = MslTableWriter("framework", num_pages=2)
    a, b, c = table.add(A), table.add(B), table.add(C)
    node_stacks = [a, a, a, b, 0xFFFFFFFF, c, b, 0xFFFFFFFF]
    expected = {
        (tuple(A), "malloc"): (0, 3),
        (tuple(B), "malloc"): (0, 2),
        (tuple(C), "malloc"): (0, 1),
    }
    return memgraph_bytes(table, node_stacks, IMAGES_TEXT, DESCRIPTION), expected


def test_memgraph_container_is_read(tmp_path):
    data, expected = _memgraph()
    path = tmp_path / "demo.memgraph"
    path.write_bytes(data)
    parsed = read_allocations(path)
    live = parsed.value
    assert parsed.skipped == []
    assert live.source == "memgraph"
    assert observed(live) == expected
    assert live.arch == "arm64"
    assert live.process_path == "/private/var/containers/Bundle/Application/X/Demo.app/Demo"
    assert [image.name for image in live.images] == ["Demo", "libsystem_malloc.dylib"]
    assert live.metadata["physFootprint"] == "52428800"
    assert live.metadata["Identifier"] == "com.example.demo"


def test_memgraph_rejects_time_travel(tmp_path):
    path = tmp_path / "demo.memgraph"
    path.write_bytes(_memgraph()[0])
    with pytest.raises(FormatError, match="need an MSL log"):
        read_allocations(path, at=3)


@settings(max_examples=60, deadline=None)
@given(cut=st.integers(0, 4000), flips=st.lists(st.integers(0, 1 << 16), max_size=6))
def test_truncated_or_bit_flipped_memgraphs_never_raise_other_errors(cut, flips):
    data = bytearray(_MEMGRAPH)
    for flip in flips:
        data[flip % len(data)] ^= 1 << (flip % 8)
    data = bytes(data[: len(data) - cut])
    try:
        parsed = parse_memgraph(data)
    except FormatError:
        return
    assert parsed.value.total_count <= 6


_MEMGRAPH = _memgraph()[0]


def _hawkeye_files() -> dict[str, bytes]:
    stacks = HawkeyeStacksWriter()
    a, b = stacks.add(A), stacks.add(B)
    malloc = [(0x280010000, 4096, 0, a, 0, 2), (0x280020000, 700, APP + 0x10, b, 0, 2)]
    return {
        "malloc_records_raw": splay_file(malloc, freed=2),
        "vm_records_raw": splay_file([(0x300000000, 0x4000, 0, b, 88, 16)]),
        "stacks_records_raw": stacks.file_bytes(),
    }


_HAWKEYE = _hawkeye_files()


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(sorted(_HAWKEYE)),
    cut=st.integers(0, 20000),
    flips=st.lists(st.integers(0, 1 << 20), max_size=8),
)
def test_corrupt_mthawkeye_folders_read_or_raise_format_error(name, cut, flips):
    with tempfile.TemporaryDirectory() as root:
        folder = Path(root) / "allocations"
        folder.mkdir()
        for file, original in _HAWKEYE.items():
            data = bytearray(original)
            if file == name:
                for flip in flips:
                    data[flip % len(data)] ^= 1 << (flip % 8)
                del data[max(len(data) - cut, 0) :]
            (folder / file).write_bytes(data)
        try:
            live = read_allocations(folder).value
        except FormatError:
            return
        for group in live.groups:
            assert len(live.stacks.stack(group.stack_id)) <= 512
