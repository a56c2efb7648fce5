"""``hawkwatch memory`` as a function: a Python session's memory growth, leak suspects with their
allocation stacks, growing types with referrer paths, and its top live stacks."""

from __future__ import annotations

from typing import TextIO

from hawkwatch.analysis.memory_report import build_memory_report, top_stacks_live
from hawkwatch.api.session import Session
from hawkwatch.model.allocations import call_tree
from hawkwatch.model.memory_report import MemoryReport

__all__ = ["MemoryReport", "memory_report"]


def memory_report(session: Session) -> MemoryReport:
    """The memory section of ``session`` (``hawkwatch memory``)."""
    return build_memory_report(session.records)


def render_collapsed(report: MemoryReport, file: TextIO) -> None:
    """Collapsed stacks of the newest snapshot's live bytes."""
    from hawkwatch.formats import collapsed

    collapsed.render(call_tree(top_stacks_live(report), weight="bytes", name="live bytes"), file)


def render_speedscope(report: MemoryReport, file: TextIO) -> None:
    """speedscope's format of the newest snapshot's live bytes, in bytes."""
    import json

    from hawkwatch.formats.speedscope import to_json_dict

    tree = call_tree(top_stacks_live(report), weight="bytes", name="live bytes")
    document = to_json_dict(tree)
    document["profiles"][0]["unit"] = "bytes"
    json.dump(document, file, separators=(",", ":"))
    file.write("\n")
