"""Debug files and symbolication: a store of SymCaches keyed by debug id, and atos's arithmetic.

Imports only ``model`` (and ``errors``); PyPI ``symbolic`` (the ``symbols`` extra) is imported
on first use, and its absence is reported as ``SymbolsExtraMissing`` naming the extra.
"""

from __future__ import annotations

from hawkwatch.symbols._symbolic import SymbolsExtraMissing, symbolic
from hawkwatch.symbols.calltree import symbolicate_roots
from hawkwatch.symbols.store import AddResult, DebugFile, SymbolStore, symbols_root
from hawkwatch.symbols.symbolicate import (
    Symbolicator,
    images_without_debug_files,
    previous_instruction,
    symbolicate,
)

__all__ = [
    "AddResult",
    "DebugFile",
    "SymbolStore",
    "Symbolicator",
    "SymbolsExtraMissing",
    "images_without_debug_files",
    "previous_instruction",
    "symbolic",
    "symbolicate",
    "symbolicate_roots",
    "symbols_root",
]
