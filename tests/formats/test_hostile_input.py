"""Hostile input to the crash and jetsam readers: one clear error or skipped lines, never an
internal error, and a folder with one bad file still groups the rest."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from hawkwatch.cli import main
from hawkwatch.errors import FormatError
from hawkwatch.formats.crash import MAX_BYTES, parse_crash, read_crash
from hawkwatch.formats.jetsam import parse_jetsam, read_jetsam
from tests.formats.crash_fixtures import FIXTURES
from tests.formats.jetsam_sample import HEADER, jetsam_body, jetsam_bytes

DEEP = "[" * 100_000 + "]" * 100_000
HEADER_LINE = json.dumps(HEADER).encode() + b"\n"


@pytest.mark.parametrize(
    "data",
    [
        b'{"bug_type":"309"}\n{"threads":' + DEEP.encode() + b"}",  # .ips JSON body
        b'{"report":{},"crash":' + DEEP.encode() + b"}",  # KSCrash
        b'{"report":{},"crash":' + b"[" * 100_000,  # KSCrash, truncated
    ],
    ids=["ips", "kscrash", "kscrash-truncated"],
)
def test_deeply_nested_json_is_a_format_error(data: bytes) -> None:
    with pytest.raises(FormatError, match="nested too deeply"):
        parse_crash(data, source="x")


def test_a_deeply_nested_jetsam_body_is_a_format_error() -> None:
    with pytest.raises(FormatError, match="nested too deeply"):
        parse_jetsam(HEADER_LINE.replace(b'"309"', b'"298"') + DEEP.encode(), source="x")


def test_numbers_thousands_of_digits_long_skip_their_lines_in_apple_text() -> None:
    text = (FIXTURES / "apple-text" / "XCDYouTubeKit-54.txt").read_text()
    big = "9" * 5_000
    lines = text.splitlines()
    frame = next(i for i, line in enumerate(lines) if line.startswith("0 "))
    lines.insert(frame + 1, f"1   libfoo.dylib   0x{big} bar + {big} (x.c:{big})")
    lines.insert(frame + 1, f"Thread {big} Crashed:")
    parsed = parse_crash("\n".join(lines).encode(), source="x")
    reasons = [s.reason for s in parsed.skipped]
    assert "a number too long to be one" in reasons
    assert parsed.value.threads  # the rest of the report is read
    json.dumps(parsed.value.threads[0].frames[0].address)  # all numbers stay printable


def test_jetsam_with_absurd_numbers_formats_without_error(tmp_path: Path, capsys) -> None:
    body = jetsam_body()
    body["processes"][0]["rpages"] = int("9" * 4_000)  # JSON allows it; x page size would not
    body["memoryStatus"]["memoryPages"] = {"free": int("9" * 4_000), "active": 5}
    path = tmp_path / "JetsamEvent.ips"
    path.write_bytes(jetsam_bytes(body))
    event = read_jetsam(path).value
    assert event.processes[0].rpages is None and event.processes[0].footprint_bytes is None
    assert event.memory_pages == {"active": 5}
    for args in (["jetsam", str(path)], ["jetsam", "--json", str(path)]):
        assert main(args) == 0
    assert "internal error" not in capsys.readouterr().err


@pytest.mark.parametrize("reader", [read_crash, read_jetsam])
def test_inputs_over_the_cap_are_refused_before_parsing(tmp_path: Path, reader) -> None:
    path = tmp_path / "huge.ips"
    with path.open("wb") as f:
        f.write(HEADER_LINE)
        f.truncate(MAX_BYTES + 10)  # sparse: no disk needed
    with pytest.raises(FormatError, match=r"larger than 16 MiB"):
        reader(path)


@pytest.mark.parametrize("reader", [read_crash, read_jetsam])
def test_a_fifo_given_as_the_input_is_refused_without_blocking(tmp_path: Path, reader) -> None:
    path = tmp_path / "report.ips"
    os.mkfifo(path)
    with pytest.raises(FormatError, match="not a regular file"):
        reader(path)


def test_one_bad_file_is_listed_under_not_read_and_the_rest_are_grouped(
    tmp_path: Path, capsys
) -> None:
    folder = tmp_path / "crashes"
    folder.mkdir()
    for name in ("xcode16.txt", "XCDYouTubeKit-54.txt"):
        shutil.copy(FIXTURES / "apple-text" / name, folder / name)
    (folder / "deep.json").write_bytes(b'{"report":{},"crash":' + DEEP.encode() + b"}")
    (folder / "huge-number.ips").write_bytes(b'{"bug_type":"309"}\n{"pid":' + b"9" * 5_000 + b"}")
    assert main(["crashes", "--json", str(folder)]) == 0
    out, err = capsys.readouterr()
    document = json.loads(out)
    assert document["reports"] == 2
    not_read = {entry["path"]: entry["reason"] for entry in document["not_read"]}
    assert set(not_read) == {"deep.json", "huge-number.ips"}
    assert "nested too deeply" in not_read["deep.json"]
    assert "internal error" not in err


def test_errors_quote_at_most_a_short_excerpt_of_the_input(capsys, tmp_path: Path) -> None:
    path = tmp_path / "odd.ips"
    path.write_bytes(b'{"bug_type":"' + b"7" * 5_000 + b'"}\n{"x":1}')
    assert main(["symbolicate", str(path)]) != 0
    assert main(["jetsam", str(path)]) != 0
    err = capsys.readouterr().err
    assert "7" * 81 not in err
    assert "… (5,000 characters)" in err
    assert all(len(line) < 400 for line in err.splitlines())
