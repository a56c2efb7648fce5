"""Outputs of an ``AllocationResult``: the report as text or JSON (its flame-graph exports live
beside the result in ``hawkwatch.api.allocations``, which may use the exporters in ``formats``)."""

from __future__ import annotations

from typing import Any, Final, TextIO

from hawkwatch.api.allocations import AllocationResult
from hawkwatch.report import allocations

FORMAT: Final = "hawkwatch-allocations"
FORMAT_VERSION: Final = 1


def render_text(result: AllocationResult, file: TextIO) -> None:
    allocations.render_console(result.report, file)


def to_json(result: AllocationResult) -> dict[str, Any]:
    return {"format": FORMAT, "format_version": FORMAT_VERSION,
            **allocations.to_json_dict(result.report)}  # fmt: skip
