"""The one place that imports PyPI ``symbolic``: lazily, naming the extra when it is missing."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

from hawkwatch.errors import HawkwatchError

EXTRA_HINT = "pip install 'hawkwatch[symbols]'"


class SymbolsExtraMissing(HawkwatchError):
    """The ``symbols`` extra (PyPI ``symbolic``) is not installed."""

    exit_code = 2


def symbolic() -> ModuleType:
    """The ``symbolic`` module; raises ``SymbolsExtraMissing`` with the install command."""
    try:
        import symbolic as module
    except ImportError as exc:
        raise SymbolsExtraMissing(
            f"reading debug files needs the 'symbolic' library ({EXTRA_HINT})"
        ) from exc
    return module


# One looked-up location: (symbol, full path, line, symbol start address).
Location = tuple[str, str | None, int, int]


def location_lookup(cache: Any) -> Callable[[int], list[Location]]:
    """``cache.lookup`` through symbolic's public API: the fallback for caches whose format the
    own reader (``symcache_file``) does not know. No private module of ``symbolic`` is used, so a
    new ``symbolic`` release cannot break this silently."""

    def run(address: int) -> list[Location]:
        return [
            (entry.symbol, entry.full_path or None, entry.line, entry.sym_addr)
            for entry in cache.lookup(address)
        ]

    return run
