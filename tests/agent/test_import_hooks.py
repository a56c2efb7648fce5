"""Callbacks right after an import: once each, even with several such finders installed."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hawkwatch.agent.import_hooks import AfterImport


@pytest.fixture
def fresh_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The name of a real module on sys.path that nothing has imported yet."""
    name = f"hawkwatch_import_probe_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text("VALUE = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def test_two_finders_each_run_their_callback_once_after_the_module_ran(fresh_module: str) -> None:
    seen: list[tuple[str, int]] = []
    errors: list[Exception] = []

    def callback(who: str) -> None:
        seen.append((who, sys.modules[fresh_module].VALUE))

    first = AfterImport({fresh_module: lambda: callback("first")}, errors.append)
    second = AfterImport({fresh_module: lambda: callback("second")}, errors.append)
    first.install()
    second.install()
    try:
        __import__(fresh_module)
    finally:
        first.uninstall()
        second.uninstall()
    assert sorted(seen) == [("first", 42), ("second", 42)]
    assert errors == []
    assert first not in sys.meta_path and second not in sys.meta_path


def test_a_failing_callback_is_reported_and_the_import_still_succeeds(fresh_module: str) -> None:
    errors: list[Exception] = []

    def broken() -> None:
        raise RuntimeError("patch failed")

    hook = AfterImport({fresh_module: broken}, errors.append)
    hook.install()
    try:
        module = __import__(fresh_module)
    finally:
        hook.uninstall()
    assert module.VALUE == 42
    assert [str(error) for error in errors] == ["patch failed"]


def test_other_names_are_left_to_the_other_finders(fresh_module: str) -> None:
    hook = AfterImport({"no.such.module": lambda: None}, lambda exc: None)
    assert hook.find_spec(fresh_module, None) is None
