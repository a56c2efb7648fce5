"""Import timing: real modules that take known time to import, nested, with self time."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

import hawkwatch
from hawkwatch.agent.plugins import imports as imports_plugin
from hawkwatch.model import collections as c
from tests.builders import agent_records

pytestmark = pytest.mark.usefixtures("stopped_agent")


@pytest.fixture
def slow_modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """``hwslow_outer`` sleeps 30 ms and imports ``hwslow_inner``, which sleeps 60 ms."""
    folder = tmp_path / "mods"
    folder.mkdir()
    (folder / "hwslow_inner.py").write_text("import time\ntime.sleep(0.06)\n")
    (folder / "hwslow_outer.py").write_text("import time\ntime.sleep(0.03)\nimport hwslow_inner\n")
    monkeypatch.syspath_prepend(str(folder))
    yield "hwslow_outer"
    for name in ("hwslow_outer", "hwslow_inner"):
        sys.modules.pop(name, None)


def test_nested_imports_get_self_and_cumulative_time(
    hawkwatch_home: Path, slow_modules: str
) -> None:
    hawkwatch.start(imports_threshold_ms=5.0, resources_enabled=False, gc_enabled=False)
    importlib.import_module(slow_modules)
    timings = {r.key: json.loads(r.value) for r in agent_records(c.IMPORT_TIME)}
    outer, inner = timings["hwslow_outer"], timings["hwslow_inner"]
    assert inner["parent"] == "hwslow_outer" and outer["parent"] is None
    assert inner["cumulative_us"] >= 60_000
    assert outer["cumulative_us"] >= 90_000
    assert 30_000 <= outer["self_us"] < outer["cumulative_us"] - 55_000
    assert outer["thread"] == "MainThread"


def test_what_hawkwatch_modules_import_is_the_agents_not_the_programs(
    hawkwatch_home: Path, slow_modules: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A monitor loads the typed model (and msgspec) at its first record, maybe on the
    program's thread: those nested imports stay out of import-time, the program's do not."""
    own = tmp_path / "own"
    own.mkdir()
    (own / "hwlazy.py").write_text(f"import {slow_modules}\n")
    monkeypatch.setattr(hawkwatch, "__path__", [*hawkwatch.__path__, str(own)])
    hawkwatch.start(imports_threshold_ms=5.0, resources_enabled=False, gc_enabled=False)
    try:
        importlib.import_module("hawkwatch.hwlazy")
    finally:
        sys.modules.pop("hawkwatch.hwlazy", None)
    assert {r.key for r in agent_records(c.IMPORT_TIME)} & {"hwslow_outer", "hwslow_inner"} == set()
    sys.modules.pop("hwslow_outer")
    sys.modules.pop("hwslow_inner")
    importlib.import_module(slow_modules)  # the program's own import of them is recorded
    assert {"hwslow_outer", "hwslow_inner"} <= {r.key for r in agent_records(c.IMPORT_TIME)}


def test_fast_imports_stay_under_the_threshold(
    hawkwatch_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "hwquick.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    hawkwatch.start(imports_threshold_ms=50.0, resources_enabled=False, gc_enabled=False)
    try:
        import hwquick  # noqa: F401
    finally:
        sys.modules.pop("hwquick", None)
    assert "hwquick" not in {r.key for r in agent_records(c.IMPORT_TIME)}


def test_stop_restores_the_import_machinery(hawkwatch_home: Path) -> None:
    original = imports_plugin._bootstrap._find_and_load
    hawkwatch.start(resources_enabled=False, gc_enabled=False)
    assert imports_plugin._bootstrap._find_and_load is not original
    hawkwatch.stop()
    assert imports_plugin._bootstrap._find_and_load is original
