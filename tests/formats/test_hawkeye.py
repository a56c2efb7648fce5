"""MTHawkeye side files: ``dyld-images`` and the network transaction logs (hawkeye.md §5)."""

from __future__ import annotations

import json

import pytest

from hawkwatch.errors import FormatError
from hawkwatch.formats.hawkeye import (
    parse_dyld_images,
    parse_network_transactions,
    read_dyld_images,
    read_network_transactions,
)
from hawkwatch.model import BinaryImage
from tests.builders import lines_bytes, mmap_image, write_appender

APP_UUID = "5d3c1c5e7b1a3b0c9f2e4d6a8b0c2e4f"

# Pretty-printed as MTHawkeyeDyldImagesUtils writes it.
DYLD_IMAGES = json.dumps(
    {
        "os_version": "12.1",
        "arch": "arm64 v8",
        "model": "16B92",
        "name": "Meitu",
        "dyld_images": [
            {
                "uuid": APP_UUID,
                "base_addr": "0x100e28000",
                "addr_slide": "0xe28000",
                "name": "/var/containers/Bundle/Application/X/Meitu.app/Meitu",
            },
            {
                "uuid": "A1B2C3D4-E5F6-0718-293A-4B5C6D7E8F90",
                "base_addr": "0x1b2e6c000",
                "addr_slide": "0x2e6c000",
                "name": "/usr/lib/libobjc.A.dylib",
            },
            {"uuid": "00000000000000000000000000000000", "name": "/usr/lib/no-address.dylib"},
            {"uuid": "ff", "base_addr": "not hex", "name": "/usr/lib/bad-address.dylib"},
            {"uuid": "ee", "addr": "0x1c0000000", "name": "/usr/lib/server-style.dylib"},
        ],
    },
    indent=2,
).encode()


def test_dyld_images_are_read_with_normalised_ids_and_bad_entries_skipped(tmp_path):
    (tmp_path / "dyld-images").write_bytes(DYLD_IMAGES)
    parsed = read_dyld_images(tmp_path)
    assert parsed is not None
    images = parsed.value
    assert (images.os_version, images.arch, images.os_build, images.app_name) == (
        "12.1",
        "arm64 v8",
        "16B92",
        "Meitu",
    )
    assert images.images == [
        BinaryImage(
            name="/var/containers/Bundle/Application/X/Meitu.app/Meitu",
            debug_id=APP_UUID,
            base_address=0x100E28000,
            slide=0xE28000,
        ),
        BinaryImage(
            name="/usr/lib/libobjc.A.dylib",
            debug_id="a1b2c3d4e5f60718293a4b5c6d7e8f90",
            base_address=0x1B2E6C000,
            slide=0x2E6C000,
        ),
        BinaryImage(
            name="/usr/lib/server-style.dylib", debug_id="ee", base_address=0x1C0000000, slide=0
        ),
    ]
    assert [s.line for s in parsed.skipped] == [2, 3]


def test_a_folder_without_dyld_images_gives_none(tmp_path):
    assert read_dyld_images(tmp_path) is None


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (DYLD_IMAGES[:-40], "not JSON"),  # truncated while being written
        (b"\xff\xfe", "not JSON"),
        (b"[1, 2]", "not a dyld-images object"),
        (b"", "not JSON"),
    ],
)
def test_an_unusable_dyld_images_raises_format_error_naming_the_file(data, reason):
    with pytest.raises(FormatError, match=reason) as caught:
        parse_dyld_images(data, source="session/dyld-images")
    assert caught.value.source == "session/dyld-images"


def test_dyld_images_without_an_image_list_is_empty_not_an_error():
    parsed = parse_dyld_images(b'{"os_version": "16.0"}')
    assert parsed.value.images == []
    assert parsed.value.os_version == "16.0"


# -- network transactions --------------------------------------------------------------------


def transaction(index: int, url: str, **extra: object) -> bytes:
    body = {
        "id": f"req-{index}",
        "index": index,
        "start_time": 1554251570.0 + index,
        "duration": 0.25,
        "request": {"url": url, "http_method": "GET", "headers": {"Accept": "*/*"}},
        "response": {"status_code": 200, "recv_data_len": 512, "headers": {}},
        **extra,
    }
    return json.dumps(body, separators=(",", ":")).encode()


def test_network_transactions_are_deduped_by_index_and_listed_newest_first(tmp_path):
    flushed = [
        b"key,value",
        transaction(0, "https://a.example/0"),
        transaction(1, "https://a.example/1"),
        transaction(1, "https://a.example/1-again"),  # same index again: the first wins
        transaction(2, "https://a.example/2")[:-30],  # cut by the 16,254-byte line limit
        b"[1, 2, 3]",
    ]
    huge_body = "x" * 20_000
    huge = (
        transaction(3, "https://a.example/huge", response_body=huge_body)
        + b"hawkeyeNetwork"
        + transaction(1, "https://a.example/1-huge")  # a later copy of index 1 loses too
        + b"hawkeyeNetwork"
        + transaction(4, "https://a.example/4")[:50]  # truncated while being written
    )
    write_appender(
        tmp_path,
        "network-transactions",
        log=lines_bytes(flushed),
        buffer=mmap_image(lines_bytes([transaction(5, "https://a.example/5")])),
    )
    (tmp_path / "hugeNetworkRecords").write_bytes(huge)

    parsed = read_network_transactions(tmp_path)
    assert [t["index"] for t in parsed.value] == [5, 3, 1, 0]
    assert [t["request"]["url"] for t in parsed.value] == [
        "https://a.example/5",
        "https://a.example/huge",
        "https://a.example/1",
        "https://a.example/0",
    ]
    assert parsed.value[1]["response_body"] == huge_body
    reasons = [s.reason for s in parsed.skipped]
    assert len(reasons) == 3
    assert reasons[0].startswith("record is not JSON")
    assert reasons[1] == "record is not a JSON object"
    assert reasons[2].startswith("hugeNetworkRecords record is not JSON")


def test_a_session_without_network_files_has_no_transactions(tmp_path):
    parsed = read_network_transactions(tmp_path)
    assert parsed.value == []
    assert parsed.skipped == []


def test_parse_network_transactions_keeps_records_without_an_index():
    parsed = parse_network_transactions(
        [b"key,value", b'{"id":"a"}', b'{"id":"b","index":7}', b'{"id":"c"}']
    )
    assert [t["id"] for t in parsed.value] == ["b", "a", "c"]
