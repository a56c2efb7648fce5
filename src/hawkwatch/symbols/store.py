"""The symbol store: debug files indexed by debug id, each with a prebuilt SymCache.

Root: ``$HAWKWATCH_HOME/symbols`` (default ``~/.hawkwatch/symbols``). ``add`` takes dSYM bundles,
Mach-O files (thin or fat), ELF files with a build id, folders holding any of these and zip
archives of them; every object found is written as ``<debug id>.symcache`` plus
``<debug id>.json`` (what it is and where it came from). Only the SymCache is needed to
symbolicate, so the original file may move or vanish afterwards. When two files carry the same
debug id, one with DWARF (a dSYM) beats one with a symbol table only (a stripped executable).

Ad-hoc folders (``--symbols DIR``) are scanned the same way but kept in memory, never written.
Debug ids match regardless of case, dashes and braces (``normalize_debug_id``).
"""

from __future__ import annotations

import io
import json
import mmap
import os
import tempfile
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hawkwatch.errors import FormatError
from hawkwatch.home import hawkwatch_home
from hawkwatch.model.crash import normalize_debug_id
from hawkwatch.symbols._symbolic import symbolic
from hawkwatch.symbols.objects import ZIP_MAGIC, Data, looks_like_object, read_headers
from hawkwatch.symbols.symcache_file import SymCacheFile

INDEX_SUFFIX = ".json"
CACHE_SUFFIX = ".symcache"


def symbols_root(root: str | os.PathLike[str] | None = None) -> Path:
    """The store folder: ``root``, else ``$HAWKWATCH_HOME/symbols`` (``~/.hawkwatch/symbols``)."""
    if root is not None:
        return Path(root).expanduser()
    return hawkwatch_home() / "symbols"


@dataclass(frozen=True, slots=True)
class DebugFile:
    """One object that can symbolicate the image with its debug id.

    ``code_id`` is the ELF build id (for Mach-O the same as the UUID); ``text_vmaddr`` is the
    address the object was linked at (``__TEXT`` vmaddr, lowest ELF ``PT_LOAD``);
    ``has_debug_info`` is False for a symbol table only (function names, no files or lines).
    """

    debug_id: str
    code_id: str | None
    arch: str
    name: str
    source: str
    has_debug_info: bool
    text_vmaddr: int


@dataclass(slots=True)
class AddResult:
    """What ``add`` indexed, and each path or archive member it could not use, with why."""

    added: list[DebugFile] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


@dataclass(slots=True)
class _Found:
    """An object found while scanning; its SymCache is built on first use.

    Building costs about a second per 50 MB of DWARF, so a ``--symbols`` folder full of dSYMs
    only pays for the ones a report needs. ``archive`` keeps the object's file alive until then.
    """

    info: DebugFile
    obj: Any  # symbolic.Object
    archive: Any  # symbolic.Archive
    cache: Any = None

    def symcache(self) -> Any:
        """The ``symbolic.SymCache``; raises ``symbolic.SymbolicError`` when it cannot be built."""
        if self.cache is None:
            self.cache = self.obj.make_symcache()
            self.obj = self.archive = None
        return self.cache


def _better(new: DebugFile, old: DebugFile | None) -> bool:
    return old is None or new.has_debug_info or not old.has_debug_info


class SymbolStore:
    """Persistent debug files under ``root`` plus ad-hoc folders searched without adding."""

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        extra: Iterable[str | os.PathLike[str]] = (),
    ) -> None:
        self.root = symbols_root(root)
        self._extra = [Path(path) for path in extra]
        self._index: dict[str, DebugFile] | None = None
        self._adhoc: dict[str, _Found] | None = None
        self._caches: dict[str, Any] = {}
        self._files: dict[str, SymCacheFile | None] = {}

    # -- adding -------------------------------------------------------------------------------

    def add(self, paths: Iterable[str | os.PathLike[str]]) -> AddResult:
        """Index every object found under ``paths``; build and write its SymCache."""
        symbolic()  # fail early, naming the extra, when it is not installed
        result = AddResult()
        self.root.mkdir(parents=True, exist_ok=True)
        index = self._load_index()
        for path in paths:
            for found in _scan(Path(path), result.skipped):
                info = found.info
                if not _better(info, index.get(info.debug_id)):
                    result.skipped.append(
                        (info.source, f"{info.debug_id} already stored with debug info")
                    )
                    continue
                try:
                    self._write(found)
                except (OSError, symbolic().SymbolicError) as exc:
                    result.skipped.append((info.source, f"cannot build SymCache: {exc}"))
                    continue
                index[info.debug_id] = info
                if info.code_id:
                    index[info.code_id] = info
                result.added.append(info)
        return result

    def _write(self, found: _Found) -> None:
        info = found.info
        cache = found.symcache()
        self._write_atomic(info.debug_id + CACHE_SUFFIX, cache.dump_into)
        text = json.dumps(asdict(info), indent=1).encode()
        self._write_atomic(info.debug_id + INDEX_SUFFIX, lambda out: out.write(text))
        self._caches.pop(info.debug_id, None)
        self._files.pop(info.debug_id, None)
        if info.code_id:
            self._files.pop(info.code_id, None)

    def _write_atomic(self, name: str, write: Any) -> None:
        handle, temp = tempfile.mkstemp(dir=self.root, prefix=".tmp-")
        try:
            with os.fdopen(handle, "wb") as out:
                write(out)
            os.replace(temp, self.root / name)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise

    # -- reading ------------------------------------------------------------------------------

    def entries(self) -> list[DebugFile]:
        """Every stored debug file, sorted by name then debug id."""
        unique = {info.debug_id: info for info in self._load_index().values()}
        return sorted(unique.values(), key=lambda info: (info.name, info.debug_id))

    def find(self, debug_id: str) -> DebugFile | None:
        """The debug file for an image's UUID / build id: ad-hoc folders first, then the store."""
        key = normalize_debug_id(debug_id)
        adhoc = self._load_adhoc().get(key)
        if adhoc is not None:
            return adhoc.info
        return self._load_index().get(key)

    def symcache(self, debug_id: str) -> Any:
        """The opened ``symbolic.SymCache`` for a debug id (None when there is none)."""
        key = normalize_debug_id(debug_id)
        adhoc = self._load_adhoc().get(key)
        if adhoc is not None:
            try:
                return adhoc.symcache()
            except symbolic().SymbolicError:
                return None
        info = self._load_index().get(key)
        if info is None:
            return None
        cache = self._caches.get(info.debug_id)
        if cache is None:
            path = self.root / (info.debug_id + CACHE_SUFFIX)
            try:
                cache = symbolic().SymCache.open(str(path))
            except (OSError, symbolic().SymbolicError):
                return None
            self._caches[info.debug_id] = cache
        return cache

    def symcache_file(self, debug_id: str) -> SymCacheFile | None:
        """The debug id's SymCache read in place by hawkwatch's own reader.

        None when there is no SymCache, or when its version is one the reader does not know or
        the file is damaged: ``symcache`` (symbolic itself) is then the one to ask.
        """
        key = normalize_debug_id(debug_id)
        if key in self._files:
            return self._files[key]
        reader = None
        adhoc = self._load_adhoc().get(key)
        info = self._load_index().get(key)
        if adhoc is not None:
            cache = self.symcache(key)  # built by symbolic in memory: read a copy of its bytes
            if cache is not None:
                buffer = io.BytesIO()
                cache.dump_into(buffer)
                reader = _read_or_none(buffer.getbuffer(), adhoc.info.source)
        elif info is not None:
            try:
                reader = SymCacheFile.open(self.root / (info.debug_id + CACHE_SUFFIX))
            except (OSError, FormatError):
                reader = None
        self._files[key] = reader
        return reader

    def _load_index(self) -> dict[str, DebugFile]:
        if self._index is None:
            self._index = {}
            for path in sorted(self.root.glob("*" + INDEX_SUFFIX)):
                try:
                    info = DebugFile(**json.loads(path.read_text()))
                except (OSError, ValueError, TypeError):
                    continue  # a damaged entry only loses that one debug file
                self._index[info.debug_id] = info
                if info.code_id:
                    self._index.setdefault(info.code_id, info)
        return self._index

    def _load_adhoc(self) -> dict[str, _Found]:
        if self._adhoc is None:
            self._adhoc = {}
            ignored: list[tuple[str, str]] = []
            for folder in self._extra:
                for found in _scan(folder, ignored):
                    info = found.info
                    old = self._adhoc.get(info.debug_id)
                    if _better(info, old.info if old else None):
                        self._adhoc[info.debug_id] = found
                        if info.code_id:
                            self._adhoc[info.code_id] = found
        return self._adhoc


def _read_or_none(data: bytes | memoryview, source: str) -> SymCacheFile | None:
    try:
        return SymCacheFile(data, source)
    except FormatError:
        return None


# -- scanning -----------------------------------------------------------------------------------


def _scan(path: Path, skipped: list[tuple[str, str]]) -> Iterator[_Found]:
    """Every object under ``path`` (file, dSYM bundle, folder, zip archive)."""
    if path.is_dir():
        count = 0
        for folder, _dirs, files in sorted(os.walk(path)):
            for name in sorted(files):
                for found in _scan_file(Path(folder) / name, skipped, quiet=True):
                    count += 1
                    yield found
        if count == 0:
            skipped.append((str(path), "no Mach-O, ELF or zip file with debug ids inside"))
        return
    if not path.exists():
        skipped.append((str(path), "no such file or folder"))
        return
    yield from _scan_file(path, skipped, quiet=False)


def _scan_file(path: Path, skipped: list[tuple[str, str]], *, quiet: bool) -> Iterator[_Found]:
    if not path.is_file():  # a FIFO or a device is never opened (it could block forever)
        if not quiet:
            skipped.append((str(path), "not a regular file"))
        return
    try:
        with path.open("rb") as handle:
            head = handle.read(8)
            if head[:4] in (ZIP_MAGIC, EMPTY_ZIP_MAGIC):
                yield from _scan_zip(path, skipped)
                return
            if not looks_like_object(head):
                if not quiet:
                    skipped.append((str(path), "not a Mach-O, ELF or zip file"))
                return
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                yield from _objects(data, path.name, str(path), skipped, on_disk=True)
    except OSError as exc:
        skipped.append((str(path), exc.strerror or str(exc)))


#: an archive with no members is only its end-of-central-directory record
EMPTY_ZIP_MAGIC = b"PK\x05\x06"
MAX_MEMBER_BYTES = 2 << 30
"""Largest zip member read (2 GiB): a size a real debug file does not reach, a zip bomb does."""
_ZIP_MEMBER_ERRORS = (
    zipfile.BadZipFile,
    OSError,
    EOFError,
    NotImplementedError,
    RuntimeError,
    ValueError,
    zlib.error,
)


def _scan_zip(path: Path, skipped: list[tuple[str, str]]) -> Iterator[_Found]:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        skipped.append((str(path), f"unreadable zip archive: {exc}"))
        return
    objects = 0
    with archive:
        members = [m for m in archive.infolist() if not m.is_dir()]
        if not members:
            skipped.append((str(path), "empty zip archive: it holds no files"))
            return
        for member in members:
            if member.is_dir() or "__MACOSX/" in member.filename:
                continue
            label = f"{path}!{member.filename[:200]}"
            try:
                with archive.open(member) as handle:
                    head = handle.read(8)
                    if not looks_like_object(head):
                        continue
                    data = head + handle.read(MAX_MEMBER_BYTES)
                    if handle.read(1):
                        skipped.append((label, f"larger than {MAX_MEMBER_BYTES >> 20} MiB"))
                        continue
            except _ZIP_MEMBER_ERRORS as exc:
                # NotImplementedError: a compression method zipfile lacks; RuntimeError: encrypted
                skipped.append((label, f"unreadable zip member: {str(exc)[:200]}"))
                continue
            objects += 1
            yield from _objects(data, Path(member.filename).name, label, skipped)
    if not objects:
        skipped.append((str(path), f"zip archive of {len(members)} file(s), none Mach-O or ELF"))


def _objects(
    data: Data, name: str, source: str, skipped: list[tuple[str, str]], *, on_disk: bool = False
) -> Iterator[_Found]:
    """The objects of one file's bytes, each paired with its SymCache."""
    module = symbolic()
    headers = read_headers(data)
    try:
        # on disk, symbolic maps the file itself
        archive = module.Archive.open(source) if on_disk else module.Archive.from_bytes(bytes(data))
        objects = list(archive.iter_objects())
    except module.SymbolicError as exc:
        skipped.append((source, f"not a debug file symbolic can read: {exc}"))
        return
    for position, obj in enumerate(objects):
        debug_id = normalize_debug_id(obj.debug_id)
        code_id = normalize_debug_id(obj.code_id) if obj.code_id else None
        header = next(
            (h for h in headers if h.debug_id in (debug_id, code_id)),
            headers[position] if position < len(headers) else None,
        )
        if not debug_id.strip("0"):
            skipped.append((source, f"{obj.arch} object without a UUID or build id"))
            continue
        info = DebugFile(
            debug_id=debug_id,
            code_id=code_id if code_id and code_id != debug_id else None,
            arch=obj.arch,
            name=name,
            source=source,
            has_debug_info="debug" in obj.features,
            text_vmaddr=header.text_vmaddr if header else 0,
        )
        yield _Found(info, obj, archive)
