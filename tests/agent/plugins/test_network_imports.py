"""``once_imported``: the network monitor instruments each client library once, on the agent's
``AfterImport`` finder, whether it was imported before the agent started or after."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from hawkwatch.agent.plugins.network import once_imported


@pytest.fixture
def modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on ``sys.path`` for modules the tests write; they leave ``sys.modules`` after."""
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [n for n in sys.modules if n.startswith("hw_netimp_")]:
        del sys.modules[name]


def test_modules_are_instrumented_once_whenever_they_are_imported(modules: Path) -> None:
    for name in ("hw_netimp_early", "hw_netimp_late"):
        (modules / f"{name}.py").write_text("VALUE = 1\n")
    importlib.import_module("hw_netimp_early")
    seen: list[tuple[str, int]] = []
    errors: list[Exception] = []

    def note(module: ModuleType) -> None:
        seen.append((module.__name__, module.VALUE))

    hook = once_imported({"hw_netimp_early": note, "hw_netimp_late": note}, errors.append)
    assert seen == [("hw_netimp_early", 1)]  # already imported: at once
    assert hook is not None and hook in sys.meta_path
    importlib.import_module("hw_netimp_late")
    assert seen == [("hw_netimp_early", 1), ("hw_netimp_late", 1)]
    assert hook not in sys.meta_path  # nothing left to wait for
    del sys.modules["hw_netimp_late"]
    importlib.import_module("hw_netimp_late")  # imported again: not instrumented twice
    assert len(seen) == 2 and errors == []


def test_a_failing_callback_is_reported_and_the_import_succeeds(modules: Path) -> None:
    (modules / "hw_netimp_odd.py").write_text("VALUE = 2\n")
    errors: list[Exception] = []

    def broken(module: ModuleType) -> None:
        raise AttributeError("an unknown version of the library")

    hook = once_imported({"hw_netimp_odd": broken}, errors.append)
    assert importlib.import_module("hw_netimp_odd").VALUE == 2
    assert [str(e) for e in errors] == ["an unknown version of the library"]
    assert hook not in sys.meta_path


def test_nothing_waits_when_every_module_is_already_imported() -> None:
    seen: list[str] = []
    before = list(sys.meta_path)
    assert once_imported({"json": lambda m: seen.append(m.__name__)}, print) is None
    assert seen == ["json"] and sys.meta_path == before
