"""The I/O canary as a monitor of the running agent: installed at start, gone at stop, and
disabled (real functions back, one hawkwatch-error) when its bookkeeping fails."""

from __future__ import annotations

import builtins
import io
import json
import os
from pathlib import Path

import pytest

import hawkwatch
from hawkwatch.agent.api import current_agent
from hawkwatch.agent.plugins import io_hooks
from hawkwatch.agent.plugins.io_canary import IoMonitor
from hawkwatch.model import collections as c
from tests.builders import agent_records, wait_for

pytestmark = pytest.mark.usefixtures("stopped_agent")
QUIET = {"resources_enabled": False, "stall_enabled": False, "cpu_enabled": False}
ON = {"io_enabled": True, **QUIET}


def test_start_installs_the_canary_and_stop_restores_open(hawkwatch_home: Path) -> None:
    assert hawkwatch.start(**ON)
    assert builtins.open is io_hooks.OPEN and os.write is io_hooks.OS_WRITE
    hawkwatch.stop()
    assert builtins.open is io.open is io_hooks.REAL_OPEN and os.write is io_hooks.REAL_OS_WRITE


def test_the_canary_is_on_by_default_and_io_enabled_false_turns_it_off(
    hawkwatch_home: Path,
) -> None:
    assert hawkwatch.start(**QUIET)
    assert builtins.open is io_hooks.OPEN and os.write is io_hooks.OS_WRITE
    agent = current_agent()
    assert agent is not None and [m.name for m in agent.monitors if m.name == "io"] == ["io"]
    hawkwatch.stop()
    assert builtins.open is io_hooks.REAL_OPEN
    assert hawkwatch.start(io_enabled=False, **QUIET)
    assert builtins.open is io.open is io_hooks.REAL_OPEN and os.write is io_hooks.REAL_OS_WRITE
    agent = current_agent()
    assert agent is not None and "io" not in [m.name for m in agent.monitors]


def test_a_bad_redaction_pattern_disables_the_canary_with_a_reason(hawkwatch_home: Path) -> None:
    assert hawkwatch.start(io_redact="([", **ON)
    assert builtins.open is io_hooks.REAL_OPEN
    errors = [json.loads(r.value) for r in agent_records(c.HAWKWATCH_ERROR)]
    assert any("io.redact is not a regular expression" in e["error"] for e in errors), errors


def test_a_failure_in_the_bookkeeping_disables_the_monitor(
    hawkwatch_home: Path, tmp_path: Path
) -> None:
    assert hawkwatch.start(**ON)
    agent = current_agent()
    assert agent is not None
    [monitor] = [m for m in agent.monitors if isinstance(m, IoMonitor)]
    collector = monitor._collector
    assert collector is not None
    path = tmp_path / "data.txt"
    path.write_text("hello")
    with open(path, encoding="utf-8") as f:
        f.buffer.raw._hw_ops = None  # type: ignore[attr-defined]  # the next op's count fails
        assert f.read() == "hello"  # the app got its data
    assert wait_for(lambda: builtins.open is io_hooks.REAL_OPEN)
    errors = [json.loads(r.value) for r in agent_records(c.HAWKWATCH_ERROR)]
    assert [e["plugin"] for e in errors] == ["io"]
    assert "TypeError" in errors[0]["error"]
    assert monitor not in agent.monitors
