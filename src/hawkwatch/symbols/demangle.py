"""Readable C++, Swift and Rust names; ``symbolic`` returns them mangled since its 11.0.

Uses PyPI ``demangle`` (pure Python; Itanium C++, Swift 2–5 and Rust v0/legacy), part of the
``symbols`` extra. Only those three schemes are tried, so Objective-C selectors, C names and
anything unknown come back exactly as given. Without the package names stay mangled.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

_LANGUAGES = ("itanium", "swift", "rust")


@lru_cache(maxsize=1)
def _demangler() -> Callable[[str], str] | None:
    try:
        import demangle as module
    except ImportError:
        return None

    def run(name: str) -> str:
        return str(module.demangle(name, language=_LANGUAGES))

    return run


@lru_cache(maxsize=65536)
def demangle_name(name: str) -> str:
    """``name`` demangled when it is a C++ / Swift / Rust symbol, else unchanged."""
    if not name.startswith(("_", "$")):
        return name
    run = _demangler()
    if run is None:
        return name
    try:
        return run(name)
    except Exception:  # noqa: BLE001 - a name that trips the demangler stays as written
        return name
