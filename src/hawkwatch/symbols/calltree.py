"""Address frames of call trees (MTHawkeye's ``cpu-highload-stackframe``) turned into functions.

A node whose frame is a runtime address becomes ``PyFrame(function, file, line, module=image)``
using the same arithmetic as crash reports; inlined calls become nodes of their own, outermost
first, so a flame graph shows them as callees. A node with children holds a return address and
looks up the previous instruction; a leaf holds the sampled program counter. Addresses with no
image or no debug file stay addresses.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from hawkwatch.model.crash import CrashFrame, CrashImage, CrashReport
from hawkwatch.model.profile import CallNode
from hawkwatch.model.stack import PyFrame
from hawkwatch.symbols.symbolicate import Symbolicator, collector_paused


def symbolicate_roots(
    roots: Sequence[CallNode],
    images: list[CrashImage],
    symbolicator: Symbolicator,
    arch: str | None = None,
) -> tuple[CallNode, ...]:
    """``roots`` with every resolvable address frame replaced by its function(s)."""
    lookup = CrashReport(format="calltree", images=images, arch=arch)
    with collector_paused():
        return tuple(_node(root, lookup, symbolicator) for root in roots)


def _node(node: CallNode, lookup: CrashReport, symbolicator: Symbolicator) -> CallNode:
    children = tuple(_node(child, lookup, symbolicator) for child in node.children)
    frame = node.frame
    if not isinstance(frame, int):
        return msgspec.structs.replace(node, children=children)
    image = lookup.image_for(CrashFrame(frame))
    if image is None:
        return msgspec.structs.replace(node, children=children)
    found = symbolicator.locations(image, frame, caller=bool(node.children), arch=lookup.arch)
    if not found:
        return msgspec.structs.replace(node, children=children)
    # found is innermost first: build the chain from the inside out, the outermost on top
    for location in found:
        named = PyFrame(location.symbol, location.file or "", location.line or 0, image.name)
        children = (CallNode(named, node.count, children),)
    return children[0]
