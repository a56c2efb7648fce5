"""The names each layer promises; changing one is a visible diff here."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import hawkwatch
import hawkwatch.agent
import hawkwatch.store

API_DOC = Path(__file__).resolve().parents[1] / "docs" / "api.md"

AGENT = [
    "event", "heartbeat", "mark_loop_thread", "mark_ready", "span", "start", "stop", "watch_loop",
]  # fmt: skip
LIBRARY = [
    "AllocationResult",
    "CrashGroups",
    "JetsamResult",
    "NetworkReport",
    "ProfileResult",
    "Session",
    "SessionList",
    "SymbolicatedCrash",
    "add_debug_files",
    "allocations",
    "dump_file",
    "effective_options",
    "formats_for",
    "group_crashes",
    "jetsam",
    "list_debug_files",
    "list_sessions",
    "load_session",
    "network_report",
    "open_symbol_store",
    "profile",
    "profile_listing",
    "read_crash_folder",
    "session_records",
    "session_report",
    "symbolicate",
    "write_output",
]


def test_the_whole_public_surface() -> None:
    assert sorted(hawkwatch.__all__) == sorted(["HawkwatchError", "__version__", *AGENT, *LIBRARY])
    for name in hawkwatch.__all__:
        assert hasattr(hawkwatch, name), name
    assert set(dir(hawkwatch)) >= set(hawkwatch.__all__)


def test_docs_api_documents_exactly_the_public_names() -> None:
    documented = set(re.findall(r"^#{3} `(?:hawkwatch\.)?(\w+)", API_DOC.read_text(), re.M))
    assert documented == set(hawkwatch.__all__)


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        hawkwatch.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no attribute 'no_such_name'" in str(exc)
    else:
        raise AssertionError("no AttributeError")


def test_the_agents_import_path_stays_light(tmp_path: Path) -> None:
    """``import hawkwatch; hawkwatch.start()`` imports no rich, CLI, library or symbolic code."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import hawkwatch; hawkwatch.start()"],
        capture_output=True,
        text=True,
        env={"HAWKWATCH_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
        timeout=60,
        check=True,
    )
    imported = {
        line.rsplit("|", 1)[-1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    assert "hawkwatch.agent.api" in imported  # the measurement saw the agent start
    heavy = sorted(
        name
        for name in imported
        if name.split(".")[0] in {"rich", "symbolic", "jsonschema"}
        or name.startswith(("hawkwatch.cli", "hawkwatch.api", "hawkwatch.report"))
    )
    assert heavy == []


def test_store_layer_exports() -> None:
    assert {"AppenderFile", "RecordStore", "Session", "read_records", "list_sessions"} <= set(
        hawkwatch.store.__all__
    )
    for name in hawkwatch.store.__all__:
        assert hasattr(hawkwatch.store, name)


def test_agent_layer_exports() -> None:
    assert {"start", "stop", "register_monitor", "Monitor", "AgentContext"} <= set(
        hawkwatch.agent.__all__
    )
