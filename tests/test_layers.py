"""Imports point down the stack only; the agent side needs nothing but stdlib, psutil, msgspec.

Walks every module's imports with ``ast`` (STYLE.md §1); an upward edge fails with its place.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "hawkwatch"

# layer -> the hawkwatch layers it may import (itself always allowed)
ALLOWED: dict[str, set[str]] = {
    "_version": set(),
    "_lazylog": set(),  # logging imported at the first message (agent start-up)
    "_runtime_typing": set(),  # typing's Protocol, Generic, NamedTuple without typing (start-up)
    "errors": set(),
    "home": {"errors"},
    "model": {"_runtime_typing"},
    "options": set(),  # the config's option-group base
    "config_sources": set(),  # where the config comes from (variables, files), with os alone
    "config": {"errors", "options", "config_sources"},
    "store": {"model", "errors", "_version", "home", "_lazylog", "_runtime_typing"},
    "formats": {"model", "errors", "store"},
    "analysis": {"model", "_runtime_typing"},
    "symbols": {"model", "errors", "home"},
    "api": {"model", "errors", "store", "formats", "analysis", "symbols", "config", "home"},
    "report": {"model", "api", "analysis", "symbols", "errors", "web"},
    "web": set(),
    "runenv": set(),
    "agent": {"model", "errors", "_version", "store", "config", "analysis", "runenv", "uploader",
              "_lazylog", "_runtime_typing"},
    "launcher": {"config", "config_sources", "errors", "model", "store", "runenv", "pyspy",
                 "pyspy_store", "agent", "uploader", "home"},
    "pyspy": {"model"},
    "pyspy_store": {"model", "store", "formats", "analysis", "pyspy"},
    "cli": {"*"},
    "server": {"*"},
    "uploader": {"model", "errors", "store", "home"},
    "__main__": {"cli"},
    "_public": {"agent"},
    "__init__": {"agent", "api", "report", "errors", "_version", "_public"},
}
AGENT_SIDE = (
    "agent", "store", "model", "config", "config_sources", "options", "errors", "_version",
    "runenv", "home", "uploader", "_lazylog", "_runtime_typing",
)  # fmt: skip


def _layer(path: Path) -> str:
    relative = path.relative_to(SRC)
    return relative.parts[0].removesuffix(".py")


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


MODULES = sorted(SRC.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_imports_point_down_the_stack(path: Path) -> None:
    layer = _layer(path)
    allowed = ALLOWED[layer]
    for line, name in _imports(path):
        parts = name.split(".")
        if parts[0] != "hawkwatch" or len(parts) < 2:
            continue
        target = parts[1]
        assert "*" in allowed or target == layer or target in allowed, (
            f"{path.relative_to(SRC)}:{line}: layer {layer!r} imports {name!r}"
        )


@pytest.mark.parametrize(
    "path", [p for p in MODULES if _layer(p) in AGENT_SIDE], ids=lambda p: str(p.relative_to(SRC))
)
def test_agent_side_needs_only_the_standard_library_psutil_and_msgspec(path: Path) -> None:
    for line, name in _imports(path):
        top = name.split(".")[0]
        assert top in sys.stdlib_module_names or top in {"hawkwatch", "psutil", "msgspec"}, (
            f"{path.relative_to(SRC)}:{line}: imports {name!r}"
        )


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_no_private_module_of_a_dependency_is_imported(path: Path) -> None:
    """A dependency's private module (``symbolic._lowlevel``) may change in any release."""
    for line, name in _imports(path):
        parts = name.split(".")
        if parts[0] == "hawkwatch" or parts[0] in sys.stdlib_module_names:
            continue
        assert not any(part.startswith("_") for part in parts[1:]), (
            f"{path.relative_to(SRC)}:{line}: imports the private module {name!r}"
        )
