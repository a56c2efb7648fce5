"""Native frames of live-allocation stacks resolved to function, file and line.

Every frame of an allocation stack is a return address (the allocator's own frames were
dropped when it was recorded), so each looks up the previous instruction, as ``atos`` does for
the frames below a crash's first. Inlined calls become frames of their own (``inlined=True``),
innermost first. Frames with no image or no debug file keep their address and gain the image
name; the table is rebuilt once, each distinct frame resolved once.
"""

from __future__ import annotations

from hawkwatch.model.allocations import (
    AllocationFrame,
    ImageLocator,
    LiveAllocations,
    NativeFrame,
    map_frames,
)
from hawkwatch.symbols.symbolicate import Symbolicator, collector_paused


def symbolicate_allocations(live: LiveAllocations, symbolicator: Symbolicator) -> LiveAllocations:
    """``live`` with every resolvable native frame named (a new snapshot; input untouched)."""
    locate = ImageLocator(live.images)

    def resolve(frame: AllocationFrame) -> tuple[AllocationFrame, ...]:
        if not isinstance(frame, NativeFrame) or frame.symbol:
            return (frame,)
        image = locate.image_for(frame.address)
        if image is None:
            return (frame,)
        found = symbolicator.locations(image, frame.address, caller=True, arch=live.arch)
        if not found:
            return (frame._replace(image=image.name),)
        return tuple(
            NativeFrame(
                frame.address,
                image.name,
                location.symbol,
                location.file or "",
                location.line or 0,
                location.inlined,
            )
            for location in found
        )

    with collector_paused():
        return map_frames(live, resolve)
