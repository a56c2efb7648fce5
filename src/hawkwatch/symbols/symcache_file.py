"""A SymCache read in place: hawkwatch's own reader for the files PyPI ``symbolic`` writes.

Why: asking ``symbolic`` through cffi costs about 2.4 µs an address before any Python object
exists; reading the file ourselves lets a lookup be one C-speed ``bisect`` over a zero-copy
``memoryview`` of the ranges, and lets names and paths be decoded once per function / file.
``symbolic`` still builds the caches (``make_symcache``) and answers for versions this reader
does not know (``UnsupportedVersion``).

Layout of version 9 (symbolic-symcache ``v9/raw.rs``), little-endian, every section starting
at the next multiple of 8 from the file start::

    header (80)   magic "SYMC", version u32, debug id (32), arch u32,
                  files, functions, source locations, ranges, string bytes (u32 each),
                  variable-header version u16, reserved
    files         24 bytes: comp dir, directory, name, 3 × source-server strings (string refs)
    functions     16 bytes: name (string ref), comp dir, entry pc, language
    source locs   16 bytes: file index, line, function index, inlined-into index
    ranges        4 bytes: start address, sorted; range ``i`` owns source location
                  ``source locations − ranges + i`` (the top-level ones sit at the end)
    strings       each a ULEB128 length, then UTF-8 bytes; a string ref is an offset in here

``u32::MAX`` means "none" for references and entry pcs; line 0 means unknown. A source location
of all ``u32::MAX`` ends the range before it (an address there resolves to nothing). Optional
variable sections may follow the strings; lookups never need them.
"""

from __future__ import annotations

import bisect
import mmap
import os
import struct
import sys
from dataclasses import dataclass
from typing import TypeAlias

from hawkwatch.errors import FormatError, UnsupportedVersion

Data: TypeAlias = bytes | bytearray | memoryview | mmap.mmap

MAGIC = b"SYMC"
VERSIONS = (9,)  # what this reader knows; anything else goes to symbolic
NONE = 0xFFFFFFFF

# One looked-up location: (symbol, full path, line, function entry address); as symbolic's lookup.
Location = tuple[str, str | None, int, int]

_HEADER = struct.Struct("<4sI16sI12xI5I")  # magic, version, uuid, appendix, (padding) arch, counts
_HEADER_SIZE = 80
_FILE = struct.Struct("<3I12x")
_FUNCTION = struct.Struct("<I4xI4x")  # name, entry pc
_SOURCE_LOCATION = struct.Struct("<4I")
MAX_INLINE_DEPTH = 256  # a corrupt inlined-into chain could loop; real ones are a few deep


def _aligned(offset: int) -> int:
    return (offset + 7) & ~7


@dataclass(frozen=True, slots=True)
class _Layout:
    """What the header says: identity, counts and where each section starts."""

    version: int
    arch: int
    debug_id: str
    files: int
    functions: int
    source_locations: int
    ranges: int
    files_at: int
    functions_at: int
    locations_at: int
    ranges_at: int
    strings_at: int
    end: int


def _layout(view: memoryview, source: str) -> _Layout:
    if len(view) < _HEADER_SIZE:
        raise FormatError(source, f"{len(view)} bytes: too short for a SymCache header")
    magic, version, uuid, appendix, arch, *counts = _HEADER.unpack_from(view)
    if magic != MAGIC:
        if magic == MAGIC[::-1]:
            raise FormatError(source, "big-endian SymCache: not readable here")
        raise FormatError(source, f"not a SymCache (magic {magic!r})")
    if version not in VERSIONS:
        known = ", ".join(map(str, VERSIONS))
        raise UnsupportedVersion(source, f"SymCache version {version} (this reader knows {known})")
    files, functions, source_locations, ranges, string_bytes = counts
    if ranges > source_locations:
        raise FormatError(source, f"{ranges} ranges but {source_locations} source locations")
    files_at = _HEADER_SIZE
    functions_at = _aligned(files_at + 24 * files)
    locations_at = _aligned(functions_at + 16 * functions)
    ranges_at = _aligned(locations_at + 16 * source_locations)
    strings_at = _aligned(ranges_at + 4 * ranges)
    end = strings_at + string_bytes
    if end > len(view):
        raise FormatError(source, f"truncated: {len(view)} bytes, the header needs {end}")
    debug_id = uuid.hex() + (f"{appendix:x}" if appendix else "")
    return _Layout(
        version, arch, debug_id, files, functions, source_locations, ranges,
        files_at, functions_at, locations_at, ranges_at, strings_at, end,
    )  # fmt: skip


class SymCacheFile:
    """One SymCache (version 9) over a buffer: ``lookup`` answers like ``symbolic``'s.

    ``data`` is kept, never copied (an ``mmap`` stays mapped while this object lives).
    Raises ``UnsupportedVersion`` for a SymCache version it does not know and ``FormatError``
    for anything else that is not a complete SymCache.
    """

    def __init__(self, data: Data, source: str = "SymCache") -> None:
        if sys.byteorder != "little":  # the u32 views below are native-endian
            raise UnsupportedVersion(source, "this reader needs a little-endian machine")
        view = memoryview(data).cast("B")
        try:
            layout = _layout(view, source)
        except BaseException:
            view.release()  # else a file ``open`` mapped could not be unmapped
            raise
        self.source = source
        self.version = layout.version
        self.arch = layout.arch  # symbolic_common's Arch number
        self.debug_id = layout.debug_id
        self._data = data
        self._view = view
        self._files_at, self._file_count = layout.files_at, layout.files
        self._functions_at, self._function_count = layout.functions_at, layout.functions
        # zero-copy u32 views (the sections are 8-aligned, so cast works on the file as is)
        count = self.location_count = layout.source_locations
        at = layout.locations_at
        self.locations = view[at : at + 16 * count].cast("I") if count else None
        at = layout.ranges_at
        self.ranges = view[at : at + 4 * layout.ranges].cast("I")
        self.first_top_level = count - layout.ranges  # range 0's source location
        # Buckets of 2**shift addresses (about 64 ranges each), filled on first use with the
        # range indexes that bound a bucket, so a lookup bisects ~64 ranges, not all of them
        # (fewer per bucket costs more to fill than it saves: measured with callgrind).
        ranges = layout.ranges
        span = self.ranges[ranges - 1] if ranges else 0
        self.bucket_shift = max(4, (64 * span // max(ranges, 1)).bit_length() - 1)
        self.last_bucket = span >> self.bucket_shift
        self.buckets = [-1] * (self.last_bucket + 2)
        # names and paths: small, so one copy makes slicing them plain bytes work
        self._strings = bytes(view[layout.strings_at : layout.end])
        self._string_cache: dict[int, str | None] = {}
        self._function_cache: dict[int, tuple[str, int]] = {}
        self._file_cache: dict[int, str | None] = {}

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> SymCacheFile:
        """Map ``path`` read-only and read it; raises ``OSError`` or ``FormatError``."""
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size == 0:
                raise FormatError(os.fspath(path), "empty file: not a SymCache")
            data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            return cls(data, os.fspath(path))
        except BaseException:
            data.close()
            raise

    # -- lookups ------------------------------------------------------------------------------

    def source_location(self, address: int) -> int:
        """Index of the innermost source location covering ``address``; −1 when none does."""
        if not 0 <= address <= NONE:
            return -1
        index = self.range_index(address)
        if index < 0:
            return -1
        index += self.first_top_level
        if self.record(index) == (NONE, NONE, NONE, NONE):
            return -1  # the end marker after a function's last range
        return index

    def range_index(self, address: int) -> int:
        """Index of the last range starting at or before ``address`` (−1 before the first)."""
        bucket = address >> self.bucket_shift
        if bucket > self.last_bucket:
            return len(self.ranges) - 1
        return bisect.bisect_right(self.ranges, address, *self.bucket_bounds(bucket)) - 1

    def bucket_bounds(self, bucket: int) -> tuple[int, int]:
        """The ranges ``bisect`` needs to search for an address in ``bucket`` (fills the table)."""
        buckets, shift = self.buckets, self.bucket_shift
        low, high = buckets[bucket], buckets[bucket + 1]
        if low < 0:
            low = buckets[bucket] = bisect.bisect_right(self.ranges, bucket << shift)
        if high < 0:
            high = buckets[bucket + 1] = bisect.bisect_right(self.ranges, (bucket + 1) << shift)
        return low, high

    def record(self, index: int) -> tuple[int, int, int, int]:
        """Source location ``index``: (file index, line, function index, inlined-into index)."""
        locations = self.locations
        if locations is None or not 0 <= index < self.location_count:
            return (NONE, 0, NONE, NONE)
        at = 4 * index
        return (locations[at], locations[at + 1], locations[at + 2], locations[at + 3])

    def chain(self, index: int) -> list[int]:
        """``index`` and the source locations it was inlined into, innermost first."""
        out: list[int] = []
        while 0 <= index < self.location_count and len(out) < MAX_INLINE_DEPTH:
            out.append(index)
            index = self.record(index)[3]
        return out

    def lookup(self, address: int) -> list[Location]:
        """(symbol, full path, line, function entry) for ``address``, innermost first."""
        found: list[Location] = []
        for index in self.chain(self.source_location(address)):
            file_index, line, function_index, _parent = self.record(index)
            name, entry = self.function(function_index)
            found.append((name, self.file_path(file_index), line, entry))
        return found

    # -- names --------------------------------------------------------------------------------

    def function(self, index: int) -> tuple[str, int]:
        """Function ``index``: (name, entry address); ``("?", NONE)`` as symbolic when unknown."""
        cached = self._function_cache.get(index)
        if cached is None:
            if 0 <= index < self._function_count:
                name_ref, entry = _FUNCTION.unpack_from(self._view, self._functions_at + 16 * index)
                name = self.string(name_ref)
                cached = (name if name is not None else "?", entry)
            else:
                cached = ("?", NONE)
            self._function_cache[index] = cached
        return cached

    def file_path(self, index: int) -> str | None:
        """Full path of file ``index`` (comp dir, directory and name joined); None without one."""
        try:
            return self._file_cache[index]
        except KeyError:
            pass
        path = None
        if 0 <= index < self._file_count:
            comp_dir, directory, name = (
                self.string(ref) or ""
                for ref in _FILE.unpack_from(self._view, self._files_at + 24 * index)
            )
            path = clean_path(join_path(join_path(comp_dir, directory), name)) or None
        self._file_cache[index] = path
        return path

    def string(self, offset: int) -> str | None:
        """The string at ``offset`` in the string table; None for "none" or a damaged entry."""
        try:
            return self._string_cache[offset]
        except KeyError:
            pass
        text = self._read_string(offset)
        self._string_cache[offset] = text
        return text

    def _read_string(self, offset: int) -> str | None:
        strings = self._strings
        if offset == NONE or offset >= len(strings):
            return None
        length, shift, at = 0, 0, offset
        while True:  # ULEB128 length prefix (one byte for a name shorter than 128)
            if at >= len(strings) or shift > 35:
                return None
            byte = strings[at]
            at += 1
            length |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        if at + length > len(strings):
            return None
        try:
            return strings[at : at + length].decode("utf-8")
        except UnicodeDecodeError:
            return None

    def close(self) -> None:
        """Release the views (and unmap a file ``open`` mapped)."""
        if self.locations is not None:
            self.locations.release()
        self.ranges.release()
        self._view.release()
        if isinstance(self._data, mmap.mmap):
            self._data.close()


# -- symbolic_common's path joining, so full paths come out exactly as symbolic's --------------


def _separator(char: str) -> bool:
    return char in "/\\"


def _windows_absolute(path: str) -> bool:
    if path.startswith(("\\\\", "//")):
        return True
    return (
        len(path) >= 2
        and path[1] == ":"
        and path[0].isascii()
        and path[0].isalpha()
        and (len(path) == 2 or _separator(path[2]))
    )


def _windows(path: str) -> bool:
    return _windows_absolute(path) or "\\" in path


def join_path(base: str, other: str) -> str:
    """``other`` relative to ``base``; Windows or Unix separators as the paths use."""
    if other.startswith("<") and other.endswith(">"):
        return other  # <stdin>, <built-in> and the like
    if not base or _windows_absolute(other) or other.startswith("/"):
        return other
    if not other:
        return base
    if _separator(other[0]):  # C:\a + \b -> C:\b
        return base[:2] + other if _windows_absolute(base) else other
    separator = "\\" if _windows(base) or _windows(other) else "/"
    return base.rstrip("/\\") + separator + other.lstrip("/\\")


def clean_path(path: str) -> str:
    """``path`` without ``.`` segments and with ``x/..`` pairs removed (no file-system access)."""
    separator = "\\" if _windows(path) else "/"
    segments = path.replace("\\", "/").split("/")
    if segments and segments[-1] == "":
        segments.pop()  # a trailing separator ends the last segment, it does not add one
    out = ""
    needs_separator = past_root = False
    for segment in segments:
        if segment == ".":
            continue
        if segment == "..":
            if not past_root and out:
                cut = max(out.rfind("/"), out.rfind("\\"))
                out = out[:cut] if cut >= 0 else ""
                if not out:
                    needs_separator = False
                continue
            if not past_root:
                needs_separator, past_root = False, True
            out += (separator if needs_separator else "") + ".."
            needs_separator = True
            continue
        if needs_separator:
            out += separator
        needs_separator = True
        out += segment
    return out
