"""``hawkwatch symbols`` and ``hawkwatch symbolicate`` on reports in all three device formats."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hawkwatch.cli import main
from tests.symbols.reports import WRITERS

FORMATS = sorted(WRITERS)


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("HAWKWATCH_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    return tmp_path / "home"


def _write(built, tmp_path, kind: str, text: str | None = None):
    path = tmp_path / f"report.{kind}"
    path.write_text(text if text is not None else WRITERS[kind](built))
    return path


def _json_frames(capsys, argv):
    assert main(argv) == 0
    document = json.loads(capsys.readouterr().out)
    (thread,) = document["threads"]
    return document, thread["frames"]


@pytest.mark.parametrize("kind", FORMATS)
def test_symbolicate_json_with_an_adhoc_folder(built, tmp_path, home, capsys, kind):
    report = _write(built, tmp_path, kind)
    document, frames = _json_frames(
        capsys, ["symbolicate", str(report), "--symbols", str(built.folder), "--format", "json"]
    )
    summary = [
        (f["image"], f["symbol"], (f["file"] or "").rsplit("/", 1)[-1], f["line"], f["inlined"])
        for f in frames
    ]
    lines = built.lines
    assert summary == [
        ("libcrash.dylib", "hawk::deep(int*, int)", "crashlib.cpp", lines["deep-store"], True),
        (
            "libcrash.dylib",
            "hawk::crash_here(int*, int)",
            "crashlib.cpp",
            lines["call-deep"],
            False,
        ),
        ("libcrash.dylib", "lib_entry", "crashlib.cpp", lines["call-crash-here"], False),
        ("app", "caller", "app.c", lines["call-lib-entry"], False),
        ("dyld", None, "", None, False),
    ]
    assert frames[0]["address"] == frames[1]["address"]  # an inlined call shares its address
    assert [f["symbolicated"] for f in frames] == [True, True, True, True, False]
    (missing,) = document["missing_debug_files"]
    assert missing["name"] == "dyld"
    assert missing["debug_id"] == "044cd67e3a0a3ca48bb3a9687d5328fe"
    assert not (home / "symbols").exists()  # --symbols searches, never adds


@pytest.mark.parametrize("kind", FORMATS)
def test_symbolicate_text_is_the_classic_layout(built, tmp_path, home, capsys, kind):
    assert main(["symbols", "add", str(built.app_dsym), str(built.lib_dsym)]) == 0
    capsys.readouterr()
    report = _write(built, tmp_path, kind)
    assert main(["symbolicate", str(report)]) == 0
    captured = capsys.readouterr()
    out = captured.out
    assert "Exception Type:  EXC_BAD_ACCESS (SIGSEGV)" in out
    assert "Thread 0 Crashed:" in out
    deep = built.lines["deep-store"]
    offset = built.crash_pc - built.crash_here_start
    assert re.search(
        rf"^0   libcrash\.dylib +\t0x[0-9a-f]{{16}} hawk::deep\(int\*, int\) "
        rf"\(crashlib\.cpp:{deep}\) \[inlined\]$",
        out,
        re.M,
    )
    assert re.search(
        rf"^1   libcrash\.dylib +\t0x[0-9a-f]{{16}} hawk::crash_here\(int\*, int\) \+ {offset} "
        rf"\(crashlib\.cpp:{built.lines['call-deep']}\)$",
        out,
        re.M,
    )
    assert re.search(
        rf"^3   app +\t0x[0-9a-f]{{16}} caller \+ \d+ \(app\.c:{built.lines['call-lib-entry']}\)$",
        out,
        re.M,
    )
    assert re.search(r"^4   dyld +\t0x0000000180de5c80 0x180de1000 \+ 19584$", out, re.M)
    assert "Binary Images:" in out
    assert "Images without debug files:\ndyld  <044cd67e3a0a3ca48bb3a9687d5328fe>" in out
    assert captured.err.strip() == "hawkwatch: no debug files for 1 image(s): dyld"


def test_symbols_list_and_json(built, home, capsys):
    assert main(["symbols", "add", str(built.folder)]) == 0
    captured = capsys.readouterr()
    assert "debug file(s) added to" in captured.err
    assert main(["symbols", "list", "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert (document["format"], document["format_version"]) == ("hawkwatch-debug-files", 1)
    by_id = {entry["debug_id"]: entry for entry in document["files"]}
    app = by_id[built.app_uuid.replace("-", "").lower()]
    assert app["has_debug_info"] and app["text_vmaddr"] == "0x100000000"
    assert main(["symbols", "list"]) == 0
    assert built.lib_uuid.replace("-", "").lower() in capsys.readouterr().out


def test_a_symbols_folder_that_does_not_exist_is_a_usage_error(tmp_path, home, capsys):
    crash = Path(__file__).resolve().parents[1] / "fixtures" / "crash" / "ips" / "nullderef.ips"
    for command in (["symbolicate", str(crash)], ["crashes", str(crash.parent)]):
        assert main([*command, "--symbols", str(tmp_path / "typo")]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err == f"hawkwatch: --symbols {tmp_path / 'typo'}: no such folder or file\n"


def test_symbols_add_of_nothing_usable_is_one_line_and_non_zero(tmp_path, home, capsys):
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x00" * 64)
    assert main(["symbols", "add", str(junk)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == "hawkwatch: no debug file with a UUID or build id found in the given paths"
    assert "Traceback" not in "".join(err)


def test_a_zip_without_debug_files_says_what_it_holds(tmp_path, home, capsys):
    import zipfile

    empty, notes = tmp_path / "empty.zip", tmp_path / "notes.zip"
    zipfile.ZipFile(empty, "w").close()
    with zipfile.ZipFile(notes, "w") as archive:
        archive.writestr("README.txt", "hello")
    assert main(["symbols", "add", str(empty), str(notes)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert f"hawkwatch: skipped {empty}: empty zip archive: it holds no files" in err
    assert f"hawkwatch: skipped {notes}: zip archive of 1 file(s), none Mach-O or ELF" in err


def test_a_report_without_any_debug_files_is_printed_unsymbolicated(built, tmp_path, home, capsys):
    report = _write(built, tmp_path, "ips")
    _document, frames = _json_frames(capsys, ["symbolicate", str(report), "--format", "json"])
    assert [f["symbolicated"] for f in frames] == [False] * 4
    assert main(["symbolicate", str(report)]) == 0
    captured = capsys.readouterr()
    assert "0x105c40000 + " in captured.out
    assert captured.err.strip() == (
        "hawkwatch: no debug files for 3 image(s): app, libcrash.dylib, dyld"
    )


# where each report is cut: inside its last binary image (text, .ips) or in the middle of
# the crashed thread's backtrace (KSCrash writes binary_images first)
CUTS = {"crash": "dyld arm64e", "ips": '"name": "dyld"', "json": '"object_name": "app"'}


@pytest.mark.parametrize("kind", FORMATS)
def test_a_truncated_report_symbolicates_what_survived(built, tmp_path, home, capsys, kind):
    text = WRITERS[kind](built)
    report = _write(built, tmp_path, kind, text[: text.index(CUTS[kind])])
    assert main(["symbolicate", str(report), "--symbols", str(built.folder)]) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert re.search(
        r"^1   libcrash\.dylib .* hawk::crash_here\(int\*, int\) \+ \d+ ", captured.out, re.M
    )


def test_a_file_that_is_not_a_crash_report_is_one_line(tmp_path, home, capsys):
    notes = tmp_path / "notes.txt"
    notes.write_text("just some notes\nnothing to see\n")
    assert main(["symbolicate", str(notes)]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"hawkwatch: {notes}")


def test_a_missing_file_is_one_line(tmp_path, home, capsys):
    assert main(["symbolicate", str(tmp_path / "nope.ips")]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nope.ips" in err[0]


def test_symbols_root_option_picks_another_store(built, tmp_path, home, capsys):
    other = tmp_path / "other-store"
    assert main(["symbols", "add", "--root", str(other), str(built.lib_dsym)]) == 0
    assert main(["symbols", "list", "--root", str(other)]) == 0
    assert built.lib_uuid.replace("-", "").lower() in capsys.readouterr().out
    assert main(["symbols", "list"]) == 0
    assert capsys.readouterr().out == ""
