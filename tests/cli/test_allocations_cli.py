"""``hawkwatch allocations`` end to end on a MallocStackLogging folder written byte for byte."""

from __future__ import annotations

import json
import subprocess
import sys

import jsonschema
import pytest

from hawkwatch.cli import main
from tests.formats.memory_artifacts import MslTableWriter, Process, scenario
from tests.formats.test_profile_exports import speedscope_schema

INDEX = "stack-logs.426.1016bc000.Demo.Kplvj1.index"


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HAWKWATCH_HOME", str(tmp_path / "home"))  # an empty symbol store
    process = Process("msl-166-64", MslTableWriter("full166"), thread_frame=0x16F603001)
    scenario(process)
    out = tmp_path / "msl"
    out.mkdir()
    (out / INDEX).write_bytes(process.index_bytes())
    (out / "mytable").write_bytes(process.table.serialized())
    return out


def test_console_report(folder, capsys):
    assert main(["allocations", str(folder)]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0] == (
        "msl-166-64 at record 13: 1.7 MiB live in 6 allocations, 3 categories, 3 stacks"
    )
    assert (
        "note: layout: MallocStackLogging libmalloc 116-166, 64-bit, 24-byte records "
        "(detected)" in lines
    )
    assert "note: coldest frames are thread ids (libmalloc full mode): dropped" in lines
    assert "+ VM: IOSURFACE: 960.0 KiB, 2 allocations, 1 stacks" in lines
    assert "  > 590.8 KiB, 2 allocations !" in lines  # 605,000 B ≥ 500 KiB: flagged
    assert "      0x100005004" in lines


def test_json_and_time_travel(folder, capsys):
    assert main(["allocations", str(folder), "--at", "3", "--format", "json"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["source"] == "msl-166-64"
    assert (report["total_live_bytes"], report["live_count"]) == (603_000, 3)
    assert report["position"] == 3
    stacks = {
        tuple(frame["address"] for frame in stack["frames"]): (stack["bytes"], stack["count"])
        for category in report["categories"]
        for stack in category["stacks"]
    }
    assert stacks == {
        ("0x100004f10", "0x100003a2c", "0x1a0001000"): (3000, 2),
        ("0x100005004", "0x100003a2c", "0x1a0001000"): (600_000, 1),
    }
    assert "hawkwatch: wrote stdout: 603,000 live bytes in 3 allocations" in captured.err


def test_speedscope_in_bytes_validates(folder, tmp_path, capsys):
    out = tmp_path / "live.speedscope.json"
    assert main(["allocations", str(folder), "--format", "speedscope", "-o", str(out)]) == 0
    document = json.loads(out.read_text())
    jsonschema.validate(document, speedscope_schema())
    profile = document["profiles"][0]
    assert profile["unit"] == "bytes"
    assert sum(profile["weights"]) == 600_000 + 5000 + 48 + 0xF0000 + 0x30000


def test_svg_flame_graph(folder, capsys):
    assert main(["allocations", str(folder), "--format", "svg", "--weight", "count"]) == 0
    assert capsys.readouterr().out.lstrip().startswith(("<?xml", "<svg"))


def test_bad_inputs_give_one_line_errors(tmp_path, capsys):
    assert main(["allocations", str(tmp_path / "missing")]) == 1
    assert capsys.readouterr().err.strip().endswith("no such file or folder")
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "x.index").write_bytes(bytes(range(256)) * 4)
    assert main(["allocations", str(junk)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no record layout fits" in err
    (junk / "x.index").unlink()
    assert main(["allocations", str(junk)]) == 1
    assert "no allocation data here" in capsys.readouterr().err


def test_python_dash_m_runs_it(folder):
    done = subprocess.run(
        [sys.executable, "-m", "hawkwatch", "allocations", str(folder), "--json"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["live_count"] == 6


def test_debug_dump_lists_index_records(folder, capsys):
    assert main(["debug", "dump", str(folder / INDEX)]) == 0
    lines = capsys.readouterr().out.splitlines()
    layout = next(line for line in lines if "layout:" in line)
    assert "libmalloc 116-166, 64-bit" in layout and "13 records" in layout
    # each record: "<line> @ <record number>  <index> <kind> <address> ..."
    entries = [line.split("@", 1)[1].split()[1:] for line in lines if " @ " in line]
    records = [entry for entry in entries if entry and entry[0] != "layout:"]
    assert records[0][:3] == ["0", "alloc", "0x600000010000"]
    assert any("vm_allocate" in line and "tag 88" in line for line in lines)


def test_growth_between_two_records(folder, capsys):
    assert main(["allocations", str(folder), "--since", "3", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["baseline_position"] == 3
    growth = {
        (g["category"], tuple(f["address"] for f in g["frames"])): (
            g["bytes_delta"],
            g["count_delta"],
        )
        for g in report["growth"]
    }
    a = ("0x100004f10", "0x100003a2c", "0x1a0001000")
    b = ("0x100005004", "0x100003a2c", "0x1a0001000")
    c = ("0x100006008", "0x1a0001000")
    assert growth == {
        ("VM: IOSURFACE", a): (0xF0000, 2),
        ("VM: anonymous", b): (0x30000, 1),
        ("malloc", b): (5000, 1),
        ("malloc", c): (48, 1),
        ("malloc", a): (-3000, -2),
    }
    assert main(["allocations", str(folder), "--since", "3"]) == 0
    assert "growth since record 3:" in capsys.readouterr().out


def test_without_numpy_the_error_names_the_extra(folder):
    code = (
        "import sys; sys.modules['numpy'] = None\n"
        "from hawkwatch.cli import main\n"
        f"sys.exit(main(['allocations', {str(folder)!r}]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 2
    assert "pip install 'hawkwatch[ios-memory]'" in done.stderr
    assert "Traceback" not in done.stderr
