"""``hawkwatch profile`` on an MTHawkeye folder from iOS: address frames, CFAbsoluteTime keys."""

from __future__ import annotations

from pathlib import Path

from tests.builders import (
    cpu_highload_records,
    stackframe_ext,
    stackframe_node,
    write_hawkeye_records,
)
from tests.cli.test_report_cli import hawkwatch

KEY = "585734400.25"


def ios_folder(tmp_path: Path) -> Path:
    tree = [
        stackframe_node(
            "0x1a2b3c4d0",
            10,
            stackframe_node("0x100e4c3c4", 7, total=10),
            stackframe_node("0x100e4c9f0", 3, total=10),
            total=10,
        )
    ]
    lines = [
        f"{r.collection},{r.key},{r.value}" for r in cpu_highload_records(KEY, 64.3, 93.5, tree)
    ]
    big = [
        f"{r.collection},{r.key},{r.value}"
        for r in cpu_highload_records("585734500.00", 70, 99, [])
    ][:1]
    folder = write_hawkeye_records(
        tmp_path / "ios",
        ["collection,key,value", "launch-time,1554251562.052403,1554251562.052403", *lines, *big],
    )
    (folder / "cpu-highload-stackframe-ext").write_bytes(
        stackframe_ext(("585734500.00", [stackframe_node("0xdead", 4)]))
    )
    return folder


def test_an_ios_episode_exports_with_address_frames(tmp_path: Path) -> None:
    folder = ios_folder(tmp_path)
    result = hawkwatch(tmp_path, "profile", str(folder), "--episode", "585734400.25")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "0x1a2b3c4d0;0x100e4c3c4 7\n0x1a2b3c4d0;0x100e4c9f0 3\n"
    merged = hawkwatch(tmp_path, "profile", str(folder), module=True)
    assert "0xdead 4" in merged.stdout  # the episode whose tree is in the ext side file
    assert "2 cpu-highload episodes" in merged.stderr


def test_the_report_lists_ios_episodes_with_unix_times(tmp_path: Path) -> None:
    import json

    folder = ios_folder(tmp_path)
    result = hawkwatch(tmp_path, "report", str(folder), "--json")
    assert result.returncode == 0, result.stderr
    cpu = json.loads(result.stdout)["cpu"]
    assert cpu["episodes_total"] == 2
    first = next(e for e in cpu["episodes"] if e["key"] == KEY)
    assert first["time"] == 585734400.25 + 978_307_200
    assert first["lasting_s"] == 64.3 and first["average_percent"] == 93.5
    assert first["top_frames"][0] == {
        "frame": "0x100e4c3c4",
        "self_percent": 70.0,
        "total_percent": 70.0,
        "self_low_percent": 39.68,  # Wilson 95 % of 7 samples in 10
        "self_high_percent": 89.22,
    }
