"""Function, file and line for every frame whose image has a debug file: atos's arithmetic.

For a frame at runtime address ``pc`` in an image loaded at ``load`` (apple-crash.md §6):

    slide          = load − __TEXT.vmaddr
    file address   = pc − slide                 (what atos / llvm-symbolizer look up)
    SymCache key   = pc − load                  (symbolic keys addresses by offset from __TEXT)

Frames other than a thread's first hold return addresses, so they look up the previous
instruction (arm64: ``(pc & ~3) − 4``; x86 and unknown: ``pc − 1``) — else the line after the
call comes back. The first frame of every thread is the program counter and is looked up as is;
every frame of a last-exception backtrace is a return address. Inlined calls come back as
several ``SourceLocation``s (innermost first); the frame's own ``symbol``/``file``/``line`` are the
outermost, the function that really owns the stack frame. Inline frames a report already carries
(``.ips`` ``inline: true``) are replaced by the fresh ones for a frame that resolves.
"""

from __future__ import annotations

import bisect
import gc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace

from hawkwatch.model.crash import CrashFrame, CrashImage, CrashReport, SourceLocation
from hawkwatch.symbols._symbolic import Location, location_lookup
from hawkwatch.symbols.demangle import demangle_name
from hawkwatch.symbols.store import SymbolStore
from hawkwatch.symbols.symcache_file import MAX_INLINE_DEPTH, NONE, SymCacheFile


def previous_instruction(address: int, arch: str | None) -> int:
    """The call instruction before a return address: arm64 is fixed-width, x86 is not."""
    if arch and arch.startswith(("arm64", "aarch64")):
        return (address & ~3) - 4
    if arch and arch.startswith("arm"):  # armv7: thumb (2) or arm (4) wide; land inside either
        return (address & ~1) - 2
    return address - 1


# (lookup key, image offset) -> what the debug file says, innermost first
Resolver = Callable[[int, int], tuple[SourceLocation, ...]]


class Symbolicator:
    """Resolves addresses against one store, remembering every answer (crash stacks repeat)."""

    def __init__(self, store: SymbolStore) -> None:
        self.store = store
        # per image UUID: its answers by (offset << 1 | caller), and how to find new ones
        self._images: dict[
            str | None, tuple[dict[int, tuple[SourceLocation, ...]], Resolver | None]
        ] = {}

    def locations(
        self, image: CrashImage, address: int, *, caller: bool, arch: str | None = None
    ) -> tuple[SourceLocation, ...]:
        """What the image's debug file says about ``address``; empty when it says nothing."""
        offset = address - image.load_address
        try:
            memo, resolve = self._images[image.uuid]
        except KeyError:
            if image.uuid is None:
                return ()
            memo, resolve = self._images[image.uuid] = ({}, self._resolver(image.uuid))
        memo_key = offset << 1 | caller
        found = memo.get(memo_key)
        if found is None:
            if resolve is None or offset < 0:
                return ()
            key = previous_instruction(offset, image.arch or arch) if caller else offset
            found = memo[memo_key] = resolve(key, offset) if key >= 0 else ()
        return found

    def locations_many(
        self,
        image: CrashImage,
        addresses: Sequence[int],
        *,
        caller: bool = False,
        arch: str | None = None,
    ) -> list[tuple[SourceLocation, ...]]:
        """``locations`` for many addresses of one image, with the cyclic collector paused."""
        locations = self.locations
        with collector_paused():
            return [locations(image, address, caller=caller, arch=arch) for address in addresses]

    def _resolver(self, uuid: str) -> Resolver | None:
        """hawkwatch's own SymCache reader when it knows the file's version, else symbolic's."""
        mapped = self.store.symcache_file(uuid)
        if mapped is not None:
            return mapped_resolver(mapped)
        cache = self.store.symcache(uuid)
        return _symbolic_resolver(location_lookup(cache)) if cache is not None else None

    def frames(
        self, report: CrashReport, frames: list[CrashFrame], *, first_is_pc: bool
    ) -> list[CrashFrame]:
        """``frames`` with every resolvable one filled in (new objects; the input is untouched)."""
        out: list[CrashFrame] = []
        physical = 0
        for frame in frames:
            if frame.inlined:
                out.append(frame)
                continue
            caller = physical > 0 or not first_is_pc
            physical += 1
            image = report.image_for(frame)
            found = (
                self.locations(image, frame.address, caller=caller, arch=report.arch)
                if image is not None
                else ()
            )
            if not found:
                out.append(frame)
                continue
            while out and out[-1].inlined and out[-1].address == frame.address:
                out.pop()
            outer = found[-1]
            out.append(
                replace(
                    frame,
                    image=frame.image or (image.name if image else None),
                    symbol=outer.symbol,
                    symbol_offset=outer.symbol_offset,
                    file=outer.file,
                    line=outer.line,
                    symbolicated=list(found),
                )
            )
        return out

    def report(self, report: CrashReport) -> CrashReport:
        """A copy of ``report`` with its threads, exception backtrace and recrash symbolicated."""
        with collector_paused():
            return self._report(report)

    def _report(self, report: CrashReport) -> CrashReport:
        threads = [
            replace(thread, frames=self.frames(report, thread.frames, first_is_pc=True))
            for thread in report.threads
        ]
        backtrace = self.frames(report, report.last_exception_backtrace, first_is_pc=False)
        recrash = self._report(report.recrash) if report.recrash is not None else None
        return replace(report, threads=threads, last_exception_backtrace=backtrace, recrash=recrash)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector around a bulk symbolication.

    Every resolved frame leaves long-lived objects and none of them form cycles, yet each young
    collection walks them again: measured at 1.1–1.7 µs a frame, a third of the whole cost.
    Symbolication is offline analysis (never the agent), so a pause of the process's collector
    for its duration is safe; reference counting still frees everything as usual.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def mapped_resolver(cache: SymCacheFile) -> Resolver:
    """Frames straight from a SymCache read in place; names, paths and inlined calls built once.

    Per address: one ``bisect`` over the ranges of one bucket, reads of one source location
    and one ``SourceLocation`` for the outermost function (its ``symbol_offset`` is per
    address). Function names are demangled once per function, paths joined once per file,
    and every inlined location (no offset of its own) is one shared object.
    """
    if cache.locations is None or not len(cache.ranges):
        return lambda key, offset: ()
    return _MappedFrames(cache, cache.locations).resolver()


class _MappedFrames:
    """The caches behind ``mapped_resolver``, and its slower paths (new names, inlined calls)."""

    def __init__(self, cache: SymCacheFile, locations: memoryview) -> None:
        self.cache = cache
        self.count = cache.location_count
        # strided views of every source location's four fields
        self.files, self.lines = locations[::4], locations[1::4]
        self.functions, self.parents = locations[2::4], locations[3::4]
        self.function_cache: dict[int, tuple[str, int | None]] = {}
        self.paths: dict[int, str | None] = {}
        self.inlined: dict[int, SourceLocation] = {}

    def function(self, index: int) -> tuple[str, int | None]:
        found = self.function_cache.get(index)
        if found is None:
            name, entry = self.cache.function(index)
            found = (demangle_name(name), None if entry == NONE else entry)
            self.function_cache[index] = found
        return found

    def path(self, index: int) -> str | None:
        found = self.paths[index] = self.cache.file_path(index)
        return found

    def location(self, index: int, offset: int | None) -> SourceLocation:
        """Source location ``index``: inlined (shared, no offset) or the outermost one."""
        symbol, entry = self.function(self.functions[index])
        file_index = self.files[index]
        path = self.paths[file_index] if file_index in self.paths else self.path(file_index)
        line = self.lines[index] or None
        if offset is None:
            return SourceLocation(symbol, path, line, None, True)
        return SourceLocation(symbol, path, line, None if entry is None else offset - entry)

    def inlined_chain(self, index: int, offset: int) -> tuple[SourceLocation, ...]:
        """``index``, inlined, and the calls it sits in up to the outermost (cut at 256)."""
        chain: list[SourceLocation] = []
        parents, inlined, count = self.parents, self.inlined, self.count
        parent = parents[index]
        while parent < count and len(chain) < MAX_INLINE_DEPTH - 1:
            found = inlined.get(index)
            if found is None:
                found = inlined[index] = self.location(index, None)
            chain.append(found)
            index = parent
            parent = parents[index]
        chain.append(self.location(index, offset))
        return tuple(chain)

    def resolver(self) -> Resolver:
        """The per-frame function: everything it touches bound to a local."""
        cache = self.cache
        ranges, first = cache.ranges, cache.first_top_level
        buckets, shift, last_bucket = cache.buckets, cache.bucket_shift, cache.last_bucket
        bucket_bounds, last_range = cache.bucket_bounds, len(ranges) - 1
        # the top-level source locations (one per range), indexed by range
        file_indexes, lines = self.files[first:], self.lines[first:]
        function_indexes, parents = self.functions[first:], self.parents[first:]
        functions, function, paths, path = (
            self.function_cache, self.function, self.paths, self.path,
        )  # fmt: skip
        inlined_chain, bisect_right, new = self.inlined_chain, bisect.bisect_right, tuple.__new__

        def resolve(key: int, offset: int) -> tuple[SourceLocation, ...]:
            if key > NONE:
                return ()
            bucket = key >> shift
            if bucket > last_bucket:
                top = last_range
            else:
                low, high = buckets[bucket], buckets[bucket + 1]
                if low < 0 or high < 0:
                    low, high = bucket_bounds(bucket)
                top = bisect_right(ranges, key, low, high) - 1
                if top < 0:
                    return ()
            if parents[top] != NONE:
                return inlined_chain(top + first, offset)
            # not inlined into anything: the common case, built here without further calls
            function_index = function_indexes[top]
            if function_index == NONE and file_indexes[top] == NONE:
                return ()  # the end marker after a function's last range
            symbol, entry = functions.get(function_index) or function(function_index)
            file_index = file_indexes[top]
            return (
                new(
                    SourceLocation,
                    (
                        symbol,
                        paths[file_index] if file_index in paths else path(file_index),
                        lines[top] or None,
                        None if entry is None else offset - entry,
                        False,
                    ),
                ),
            )

        return resolve


def _symbolic_resolver(lookup: Callable[[int], list[Location]]) -> Resolver:
    """Frames from symbolic's own lookup (SymCache versions hawkwatch's reader does not know)."""

    def resolve(key: int, offset: int) -> tuple[SourceLocation, ...]:
        raw = lookup(key)
        if len(raw) == 1:  # no inlining: the common case
            symbol, path, line, sym_addr = raw[0]
            start = None if sym_addr == NONE else offset - sym_addr
            return (SourceLocation(demangle_name(symbol), path, line or None, start),)
        last = len(raw) - 1
        return tuple(
            SourceLocation(
                symbol=demangle_name(symbol),
                file=path,
                line=line or None,
                symbol_offset=(offset - sym_addr if index == last and sym_addr != NONE else None),
                inlined=index != last,
            )
            for index, (symbol, path, line, sym_addr) in enumerate(raw)
        )

    return resolve


def symbolicate(report: CrashReport, store: SymbolStore) -> CrashReport:
    """``report`` with function, file, line and inlined calls for every frame it can resolve."""
    return Symbolicator(store).report(report)


def images_without_debug_files(report: CrashReport, store: SymbolStore) -> list[CrashImage]:
    """Images that hold at least one frame but have no debug file (or no UUID at all)."""
    used: dict[int, CrashImage] = {}
    frames = [frame for thread in report.threads for frame in thread.frames]
    frames += report.last_exception_backtrace
    for frame in frames:
        image = report.image_for(frame)
        if image is not None:
            used.setdefault(id(image), image)
    missing = [
        image
        for image in used.values()
        if image.debug_id is None or store.find(image.debug_id) is None
    ]
    return sorted(missing, key=lambda image: image.load_address)
