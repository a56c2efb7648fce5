"""The symbol store and crash symbolication as functions: ``hawkwatch symbols`` / ``symbolicate``.

``symbols`` folders (``--symbols DIR``) are searched on the fly without being added; each must be
an existing folder or file, so a typo is an error rather than a silently unsymbolicated report.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from hawkwatch.api.session import PathLike
from hawkwatch.errors import UsageError
from hawkwatch.formats.crash import read_crash
from hawkwatch.model import Skipped
from hawkwatch.model.crash import CrashImage, CrashReport
from hawkwatch.symbols import (
    AddResult,
    DebugFile,
    SymbolStore,
    images_without_debug_files,
    symbolic,
)
from hawkwatch.symbols import symbolicate as _symbolicate


def open_symbol_store(
    root: PathLike | None = None, symbols: Iterable[PathLike] = ()
) -> SymbolStore:
    """The symbol store at ``root`` (default ``$HAWKWATCH_HOME/symbols``) plus ``symbols``
    folders searched without adding them; ``UsageError`` for one that does not exist."""
    extra = [Path(folder).expanduser() for folder in symbols]
    for folder in extra:
        if not folder.exists():
            raise UsageError(f"--symbols {folder}: no such folder or file")
    return SymbolStore(root, extra=extra)


@dataclass(frozen=True, slots=True)
class SymbolicatedCrash:
    """A crash report with function, file and line where a debug file answered."""

    report: CrashReport
    #: images no debug file was found for
    missing: tuple[CrashImage, ...]
    #: what the reader skipped in the input file
    skipped: tuple[Skipped, ...] = ()


def symbolicate(
    report: CrashReport | PathLike,
    store: SymbolStore | None = None,
    *,
    symbols: Sequence[PathLike] = (),
) -> SymbolicatedCrash:
    """Symbolicate a crash report (a ``CrashReport``, or a ``.crash``/``.ips``/KSCrash file).

    ``store`` defaults to the symbol store plus ``symbols`` folders. Needs the ``symbols`` extra.
    """
    symbolic()  # names the extra to install when it is missing
    skipped: tuple[Skipped, ...] = ()
    if not isinstance(report, CrashReport):
        parsed = read_crash(report)
        report, skipped = parsed.value, tuple(parsed.skipped)
    store = store if store is not None else open_symbol_store(None, symbols)
    result = _symbolicate(report, store)
    return SymbolicatedCrash(result, tuple(images_without_debug_files(result, store)), skipped)


@dataclass(frozen=True, slots=True)
class DebugFileList:
    """Debug files of a store: all of them, or those one ``add`` indexed."""

    root: str
    files: tuple[DebugFile, ...]
    #: paths or archive members that could not be used, with why (``add`` only)
    skipped: tuple[tuple[str, str], ...] = ()


def add_debug_files(paths: Iterable[PathLike], root: PathLike | None = None) -> DebugFileList:
    """Index dSYM bundles, Mach-O / ELF files, folders or zips of them into the store."""
    store = SymbolStore(root)
    result: AddResult = store.add(paths)
    return DebugFileList(str(store.root), tuple(result.added), tuple(result.skipped))


def list_debug_files(root: PathLike | None = None) -> DebugFileList:
    """The store's debug files, one per debug id."""
    store = SymbolStore(root)
    return DebugFileList(str(store.root), tuple(store.entries()))
