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

from collections.abc import Callable
from dataclasses import replace

from hawkwatch.model.crash import CrashFrame, CrashImage, CrashReport, SourceLocation
from hawkwatch.symbols._symbolic import Location, location_lookup
from hawkwatch.symbols.demangle import demangle_name
from hawkwatch.symbols.store import SymbolStore

# symbolic's sym_addr for inlined entries (no symbol start of their own): u32::MAX
_NO_SYMBOL_ADDRESS = 0xFFFFFFFF


def previous_instruction(address: int, arch: str | None) -> int:
    """The call instruction before a return address: arm64 is fixed-width, x86 is not."""
    if arch and arch.startswith(("arm64", "aarch64")):
        return (address & ~3) - 4
    if arch and arch.startswith("arm"):  # armv7: thumb (2) or arm (4) wide; land inside either
        return (address & ~1) - 2
    return address - 1


class Symbolicator:
    """Resolves addresses against one store, remembering every answer (crash stacks repeat)."""

    def __init__(self, store: SymbolStore) -> None:
        self.store = store
        self._memo: dict[tuple[str, int, bool], tuple[SourceLocation, ...]] = {}
        self._lookups: dict[str, Callable[[int], list[Location]] | None] = {}

    def locations(
        self, image: CrashImage, address: int, *, caller: bool, arch: str | None = None
    ) -> tuple[SourceLocation, ...]:
        """What the image's debug file says about ``address``; empty when it says nothing."""
        uuid = image.uuid
        if uuid is None:
            return ()
        offset = address - image.load_address
        found = self._memo.get((uuid, offset, caller))
        if found is None:
            if offset < 0:
                return ()
            key = previous_instruction(offset, image.arch or arch) if caller else offset
            found = self._lookup(uuid, key, offset)
            self._memo[(uuid, offset, caller)] = found
        return found

    def _lookup(self, uuid: str, key: int, offset: int) -> tuple[SourceLocation, ...]:
        try:
            lookup = self._lookups[uuid]
        except KeyError:
            cache = self.store.symcache(uuid)
            lookup = self._lookups[uuid] = location_lookup(cache) if cache is not None else None
        if lookup is None or key < 0:
            return ()
        raw = lookup(key)
        if len(raw) == 1:  # no inlining: the common case
            symbol, path, line, sym_addr = raw[0]
            start = None if sym_addr == _NO_SYMBOL_ADDRESS else offset - sym_addr
            return (SourceLocation(demangle_name(symbol), path, line or None, start),)
        last = len(raw) - 1
        return tuple(
            SourceLocation(
                symbol=demangle_name(symbol),
                file=path,
                line=line or None,
                symbol_offset=(
                    offset - sym_addr if index == last and sym_addr != _NO_SYMBOL_ADDRESS else None
                ),
                inlined=index != last,
            )
            for index, (symbol, path, line, sym_addr) in enumerate(raw)
        )

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
        threads = [
            replace(thread, frames=self.frames(report, thread.frames, first_is_pc=True))
            for thread in report.threads
        ]
        backtrace = self.frames(report, report.last_exception_backtrace, first_is_pc=False)
        recrash = self.report(report.recrash) if report.recrash is not None else None
        return replace(report, threads=threads, last_exception_backtrace=backtrace, recrash=recrash)


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
