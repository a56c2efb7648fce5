"""``hawkwatch allocations`` as a function: what was live in an iOS app's memory, by stack.

Reads a MallocStackLogging folder or ``.index``, a ``.memgraph`` or an MTHawkeye Allocations
folder into the shared live-allocation model, symbolicates native frames through the symbol store
(image names only when the ``symbols`` extra is missing or no image list came with the artifact),
and builds the report. The result also carries the live set, so the flame-graph exports can
weigh its stacks by bytes or by count.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TextIO

from hawkwatch.analysis.allocations import build_allocation_report
from hawkwatch.api.session import PathLike
from hawkwatch.errors import HawkwatchError, UsageError
from hawkwatch.formats.allocations import read_allocations
from hawkwatch.model.allocation_report import AllocationReport
from hawkwatch.model.allocations import LiveAllocations, call_tree, with_image_names
from hawkwatch.model.profile import CallTree

Weight = Literal["bytes", "count"]


@dataclass(frozen=True)
class AllocationResult:
    """The report, the live set it was made from, and how exports weigh stacks."""

    report: AllocationReport
    live: LiveAllocations
    weight: Weight = "bytes"
    notes: tuple[str, ...] = field(default=())

    def tree(self) -> CallTree:
        """The live set as a call tree for the flame-graph exports."""
        name = f"{self.live.source} live {self.weight}"
        return call_tree(self.live, weight=self.weight, name=name)


def allocations(
    path: PathLike,
    *,
    at: int | None = None,
    since: int | None = None,
    symbols: Sequence[PathLike] = (),
    weight: Weight = "bytes",
) -> AllocationResult:
    """What was live (at record ``at`` of an MSL log; grown since record ``since``)."""
    for option, value in (("at", at), ("since", since)):
        if value is not None and value < 0:
            raise UsageError(f"--{option} {value}: a record number is ≥ 0")
    parsed = read_allocations(Path(path), at=at, since=since)
    live, notes = _symbolicated(parsed.value, [str(folder) for folder in symbols])
    skipped = [entry.reason for entry in parsed.skipped]
    report = build_allocation_report(live, skipped=skipped)
    return AllocationResult(report, live, weight, tuple(notes))


def _symbolicated(live: LiveAllocations, folders: list[str]) -> tuple[LiveAllocations, list[str]]:
    """Frames named through the symbol store; image names only when that cannot be done."""
    if not live.images:
        note = "no image list (dyld-images or Binary Images:) beside the artifact: frames stay "
        return live, [note + "addresses"] if folders else []
    try:
        from hawkwatch.symbols import Symbolicator, SymbolStore, symbolic
        from hawkwatch.symbols.allocations import symbolicate_allocations

        symbolic()
    except HawkwatchError as exc:
        return with_image_names(live), [f"frames stay addresses: {exc}"]
    store = SymbolStore(None, extra=folders)
    return symbolicate_allocations(live, Symbolicator(store)), []


def render_collapsed(result: AllocationResult, file: TextIO) -> None:
    """Collapsed stacks of the live set (``hawkwatch allocations --format collapsed``)."""
    from hawkwatch.formats import collapsed

    collapsed.render(result.tree(), file)


def render_svg(result: AllocationResult, file: TextIO) -> None:
    from hawkwatch.formats import flamegraph_svg

    flamegraph_svg.render(result.tree(), file)


def render_speedscope(result: AllocationResult, file: TextIO) -> None:
    """speedscope's format, in bytes when the result weighs stacks by bytes."""
    import json

    from hawkwatch.formats.speedscope import to_json_dict

    document = to_json_dict(result.tree())
    document["profiles"][0]["unit"] = "bytes" if result.weight == "bytes" else "none"
    json.dump(document, file, separators=(",", ":"))
    file.write("\n")
