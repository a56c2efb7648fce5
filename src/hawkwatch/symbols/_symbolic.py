"""The one place that imports PyPI ``symbolic``: lazily, naming the extra when it is missing."""

from __future__ import annotations

import struct
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

# symbolic's C ABI ``SymbolicSourceLocation`` (symbolic-cabi symcache.rs), 96 bytes: sym_addr u64,
# instr_addr u64, line u32 (+4 padding), then lang, symbol, full_path, each a ``SymbolicStr``
# {data pointer, len usize, owned bool (+7)}. Read: sym_addr, line, symbol and full_path.
_LOCATION = struct.Struct("<Q8xI4x24xQQ8xQQ8x")
_LOCATION_SIZE = 96


def location_lookup(cache: Any) -> Callable[[int], list[Location]]:
    """A fast ``cache.lookup``: reads the result structs in one copy, decodes each name once.

    ``SymCache.lookup`` builds a Python object per field through cffi, which costs about twice
    the lookup itself. When the C ABI is not the one this was written against (another
    ``symbolic`` release), the public ``lookup`` is used instead.
    """
    try:
        from symbolic._lowlevel import ffi, lib

        pointer = cache._get_objptr()
        layout = (
            ffi.sizeof("SymbolicSourceLocation"),
            ffi.offsetof("SymbolicSourceLocation", "symbol"),
            ffi.offsetof("SymbolicSourceLocation", "full_path"),
        )
        if layout != (_LOCATION_SIZE, 48, 72):
            raise AttributeError("SymbolicSourceLocation changed")
    except (ImportError, AttributeError):
        return _public_lookup(cache)
    lookup, free = lib.symbolic_symcache_lookup, lib.symbolic_lookup_result_free
    buffer, unpack, cast, address_of = ffi.buffer, ffi.unpack, ffi.cast, ffi.addressof
    size, iter_unpack = _LOCATION_SIZE, _LOCATION.iter_unpack
    names: dict[tuple[int, int], str] = {}  # symbol names point into the mapped cache: stable

    def run(address: int, _keep_alive: Any = cache) -> list[Location]:
        # ``_keep_alive``: the SymCache object owns ``pointer``; freeing it would free the cache
        result = lookup(pointer, address)
        try:
            found = []
            for sym_addr, line, name_at, name_len, path_at, path_len in iter_unpack(
                buffer(result.items, result.len * size)[:]
            ):
                name = names.get((name_at, name_len))
                if name is None:
                    name = unpack(cast("char *", name_at), name_len).decode("utf-8", "replace")
                    names[(name_at, name_len)] = name
                path = (
                    unpack(cast("char *", path_at), path_len).decode("utf-8", "replace")
                    if path_len
                    else None
                )
                found.append((name, path, line, sym_addr))
            return found
        finally:
            free(address_of(result))  # frees the owned path strings too

    return run


def _public_lookup(cache: Any) -> Callable[[int], list[Location]]:
    def run(address: int) -> list[Location]:
        return [
            (entry.symbol, entry.full_path or None, entry.line, entry.sym_addr)
            for entry in cache.lookup(address)
        ]

    return run
