"""The output registry: every result type's outputs render real results; every JSON output
carries ``format``/``format_version`` and matches its JSON Schema; binary refuses a terminal."""

from __future__ import annotations

import gzip
import io
import json
import os
import sys
from pathlib import Path

import jsonschema
import pytest

import hawkwatch
from hawkwatch.errors import UsageError
from hawkwatch.model.profile import CallNode, CallTree, PyFrame
from hawkwatch.report.outputs import OUTPUTS, output_for, render, write_output
from tests.cli.test_profile_cli import ios_folder
from tests.cli.test_report_cli import make_session
from tests.formats.jetsam_sample import jetsam_bytes
from tests.report.test_console import small_report

SCHEMAS = Path(hawkwatch.__file__).parent / "report" / "schemas"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "crash"


def schema(name: str) -> dict:
    return json.loads((SCHEMAS / f"{name}.schema.json").read_text())


def hawkwatch_memory_report(tmp: Path) -> object:
    """A session holding one allocation snapshot, read through the library call."""
    from hawkwatch.api.memory import memory_report
    from hawkwatch.model.records.memory import MemFrame, MemorySnapshot, StackBytes
    from hawkwatch.store import Session as Folder

    folder = Folder.create(root=tmp / "mem", start_time=1_700_000_000.0)
    stack = StackBytes((MemFrame("grow", "/app/cache.py", 7), MemFrame("main", "/app/m.py", 2)),
                       4096, 8)  # fmt: skip
    with folder.open_store() as store:
        store.write(MemorySnapshot(time=1_700_000_001.0, index=0, total_bytes=4096, count=8,
                                   stack_count=1, stacks=(stack,)))  # fmt: skip
    return memory_report(hawkwatch.load_session(folder.path))


def allocation_result(tmp: Path) -> object:
    """An MSL log written byte by byte, read through the library call."""
    from hawkwatch.api.allocations import allocations
    from tests.formats.memory_artifacts import MslTableWriter, Process, scenario

    process = Process("msl-166-64", MslTableWriter("full166"), thread_frame=0x16F603001)
    scenario(process)
    folder = tmp / "msl"
    folder.mkdir()
    (folder / "stack-logs.1.index").write_bytes(process.index_bytes())
    (folder / "mytable").write_bytes(process.table.serialized())
    return allocations(folder)


def network_session(tmp: Path) -> hawkwatch.Session:
    """A session with two requests, one failed, written through the real store."""
    from hawkwatch.model.records import NetworkTransaction, Phases
    from hawkwatch.store import Session as Folder

    folder = Folder.create(root=tmp / "net", start_time=1_700_000_000.0)
    with folder.open_store() as store:
        for index, error in ((1, None), (2, "ConnectionRefusedError")):
            record = NetworkTransaction(
                start=1_700_000_000.0 + index, index=index, method="GET",
                url="http://api.test/x", host="api.test:80", library="requests",
                status=None if error else 200, error=error,
                failed_phase="tcp" if error else None,
                phases_ms=Phases(queue=0.1, total=2.0),
            ).to_record()  # fmt: skip
            store.store(record.collection, record.key, record.value)
    return hawkwatch.load_session(folder.path)


def tree() -> CallTree:
    leaf = CallNode(PyFrame("work", "/app/main.py", 12, "main"), 3)
    root = CallNode(PyFrame("main", "/app/main.py", 3, "main"), 4, (leaf,))
    return CallTree((root,), name="t", interval_s=0.01)


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, object]:
    """One real result of every registered type, made through the public library calls."""
    tmp = tmp_path_factory.mktemp("results")
    root = tmp / "sessions"
    made = make_session(root)
    session = hawkwatch.load_session(made.name, root=root)
    jetsam_file = tmp / "jetsam.ips"
    jetsam_file.write_bytes(jetsam_bytes())
    ios = hawkwatch.load_session(ios_folder(tmp))
    return {
        "SessionReport": small_report(),
        "CallTree": tree(),
        "ProfileListing": hawkwatch.profile_listing(ios),
        "CrashGroups": hawkwatch.group_crashes(FIXTURES / "ips"),
        "SymbolicatedCrash": hawkwatch.symbolicate(
            FIXTURES / "ips" / "nullderef.ips", hawkwatch.open_symbol_store(tmp / "symbols")
        ),
        "JetsamResult": hawkwatch.jetsam(jetsam_file),
        "SessionList": hawkwatch.list_sessions(root),
        "RecordListing": hawkwatch.session_records(session),
        "OptionTable": hawkwatch.effective_options({"gc.threshold_ms": "5"}),
        # this interpreter is a real ELF file with a build id
        "DebugFileList": hawkwatch.add_debug_files([Path(sys.executable).resolve()], tmp / "st"),
        "FileDump": hawkwatch.dump_file(made.path / "records.mtlog"),
        "NetworkReport": hawkwatch.network_report(network_session(tmp)),
        "AllocationResult": allocation_result(tmp),
        "MemoryReport": hawkwatch_memory_report(tmp),
    }


def test_every_result_type_has_a_real_result(results) -> None:
    assert set(results) == set(OUTPUTS)
    for name, result in results.items():
        assert type(result).__name__ == name


@pytest.mark.parametrize(
    ("kind", "format"), [(kind, name) for kind, formats in OUTPUTS.items() for name in formats]
)
def test_every_output_renders_its_result(results, kind, format) -> None:
    output = OUTPUTS[kind][format]
    stream = io.BytesIO() if output.is_binary else io.StringIO()
    render(results[kind], format, stream)
    data = stream.getvalue()
    assert len(data) > 0
    if format == "json":
        document = json.loads(data)
        assert document["format"].startswith("hawkwatch-")
        assert document["format_version"] == 1
        jsonschema.validate(document, schema(document["format"]))


def test_every_schema_belongs_to_an_output_and_is_valid(results) -> None:
    produced = set()
    for kind, formats in OUTPUTS.items():
        if "json" in formats:
            stream = io.StringIO()
            render(results[kind], "json", stream)
            produced.add(json.loads(stream.getvalue())["format"])
    on_disk = {path.name.removesuffix(".schema.json") for path in SCHEMAS.glob("*.json")}
    assert produced == on_disk
    for name in on_disk:
        jsonschema.Draft202012Validator.check_schema(schema(name))


def test_a_schema_rejects_a_document_of_the_wrong_shape(results) -> None:
    stream = io.StringIO()
    render(results["SessionList"], "json", stream)
    document = json.loads(stream.getvalue())
    document["sessions"][0]["records"] = "many"
    with pytest.raises(jsonschema.ValidationError, match="'many' is not of type 'integer'"):
        jsonschema.validate(document, schema("hawkwatch-sessions"))


def test_binary_output_refuses_a_terminal_and_goes_to_a_file(tmp_path) -> None:
    primary, secondary = os.openpty()
    try:
        with open(primary, "w", closefd=False) as terminal:
            assert terminal.isatty()
            with pytest.raises(UsageError, match="pprof output is binary and stdout is a terminal"):
                write_output(tree(), "pprof", stdout=terminal)
    finally:
        os.close(primary)
        os.close(secondary)
    target = tmp_path / "out.pb.gz"
    assert write_output(tree(), "pprof", target) == str(target)
    assert gzip.decompress(target.read_bytes())  # a real gzip member


def test_text_output_to_a_file_is_what_the_stream_gets(tmp_path) -> None:
    stream = io.StringIO()
    render(tree(), "collapsed", stream)
    target = tmp_path / "out.txt"
    write_output(tree(), "collapsed", target)
    assert target.read_text() == stream.getvalue()
    assert stream.getvalue() == (
        "main (/app/main.py:3) 1\nmain (/app/main.py:3);work (/app/main.py:12) 3\n"
    )


def test_an_unknown_format_names_the_choices() -> None:
    choices = "console, json, html"
    with pytest.raises(UsageError, match=f"unknown format 'pdf'; choose one of: {choices}"):
        output_for(small_report(), "pdf")
