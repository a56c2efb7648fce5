"""MTHawkeye ANR samples and CPU high-load trees read as a crash model (hawkeye.md §4, §5)."""

from __future__ import annotations

import json

import pytest

from hawkwatch.errors import FormatError
from hawkwatch.formats.crash import read_crash
from tests.builders import write_hawkeye_records

APP_BASE, APP_SLIDE = 0x100E28000, 0xE28000
OBJC_BASE = 0x1B2E6C000
DYLD_IMAGES = {
    "os_version": "12.1",
    "arch": "arm64 v8",
    "model": "16B92",
    "name": "Meitu",
    "dyld_images": [
        {
            "uuid": "5d3c1c5e7b1a3b0c9f2e4d6a8b0c2e4f",
            "base_addr": hex(APP_BASE),
            "addr_slide": hex(APP_SLIDE),
            "name": "/var/containers/Bundle/Application/X/Meitu.app/Meitu",
        },
        {
            "uuid": "a1b2c3d4e5f60718293a4b5c6d7e8f90",
            "base_addr": hex(OBJC_BASE),
            "addr_slide": "0x2e6c000",
            "name": "/usr/lib/libobjc.A.dylib",
        },
    ],
}


def _anr(start: float, *samples: tuple[float, list[int]]) -> str:
    stacks = [
        {
            "time": when,
            "stackframes": ",".join(hex(a) for a in frames),
            "titleframe": hex(frames[0]),
            "capturedCount": 1,
            "threadCount": 9,
        }
        for when, frames in samples
    ]
    return json.dumps(
        {"duration": 450, "startFrom": start, "inBackground": False, "stacks": stacks},
        separators=(",", ":"),
    )


@pytest.fixture
def session(tmp_path):
    folder = tmp_path / "2019-04-03_08-32-42+052"
    tree = [
        {
            "frame": hex(APP_BASE + 0x100),
            "count": 10,
            "proportion": 1.0,
            "children": [
                {"frame": hex(APP_BASE + 0x200), "count": 6, "proportion": 0.6},
                {
                    "frame": hex(OBJC_BASE + 0x40),
                    "count": 4,
                    "proportion": 0.4,
                    "children": [{"frame": hex(OBJC_BASE + 0x80), "count": 4, "proportion": 0.4}],
                },
            ],
        }
    ]
    write_hawkeye_records(
        folder,
        [
            "launch-time,1554251562.05,1554251562.05",
            # one stall stored in two parts, second part first
            "anr,1554251570_1," + _anr(1554251571.0, (1554251571.0, [APP_BASE + 0x30])),
            "anr,1554251570_0,"
            + _anr(1554251570.0, (1554251570.0, [OBJC_BASE + 0x10, APP_BASE + 0x20])),
            "anr,1554251580_0,{not json",
            "cpu-highload-stackframe,575944400.50," + json.dumps(tree),
        ],
    )
    (folder / "dyld-images").write_text(json.dumps(DYLD_IMAGES, indent=2))
    return folder


def test_anr_and_cpu_stacks_become_threads(session):
    parsed = read_crash(session)
    report = parsed.value
    assert report.format == "hawkeye"
    assert (report.process, report.os_version, report.arch) == ("Meitu", "12.1", "arm64")
    names = [thread.name for thread in report.threads]
    assert names[:2] == ["anr 1554251570 +0.00s", "anr 1554251570 +1.00s"]  # parts merged
    first = report.threads[0].frames
    assert [(f.address, f.image) for f in first] == [
        (OBJC_BASE + 0x10, "libobjc.A.dylib"),
        (APP_BASE + 0x20, "Meitu"),
    ]
    cpu = report.threads[2:]
    assert [t.name for t in cpu] == [
        "cpu-highload 575944400.50 path 0 (6 samples)",
        "cpu-highload 575944400.50 path 1 (4 samples)",
    ]
    # innermost first: the leaf, then up to the root
    assert [f.address for f in cpu[1].frames] == [
        OBJC_BASE + 0x80,
        OBJC_BASE + 0x40,
        APP_BASE + 0x100,
    ]
    assert any("not JSON" in s.reason for s in parsed.skipped)


def test_images_carry_the_text_vmaddr_for_symbolication(session):
    report = read_crash(session).value
    app = report.images[0]
    assert app.load_address == APP_BASE
    assert app.text_vmaddr == APP_BASE - APP_SLIDE == 0x100000000
    assert app.debug_id == "5d3c1c5e7b1a3b0c9f2e4d6a8b0c2e4f"
    frame = report.threads[0].frames[1]
    assert report.image_for(frame) is app


def test_cpu_ext_records_are_read(session):
    tree = [{"frame": hex(APP_BASE + 0x500), "count": 3, "proportion": 1.0}]
    (session / "cpu-highload-stackframe-ext").write_bytes(
        f"575944500.00,{json.dumps(tree)}\u00b7".encode()
    )
    report = read_crash(session).value
    assert report.threads[-1].name == "cpu-highload 575944500.00 path 0 (3 samples)"
    assert report.threads[-1].frames[0].address == APP_BASE + 0x500


def test_a_session_without_stacks_or_a_plain_folder_is_a_format_error(tmp_path):
    empty = write_hawkeye_records(tmp_path / "s", ["cpu,1554251562.5,12.0"])
    with pytest.raises(FormatError, match="no anr or cpu-highload"):
        read_crash(empty)
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(FormatError, match="not a session folder"):
        read_crash(plain)
