"""The report's view of ``io-issue`` records (the JSON report's ``io_issues``).

Apart from ``model.io``, which the agent imports at every start: these rows are dataclasses.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class IoFrameRow:
    """One frame of the stack that opened a file, innermost first."""

    function: str
    file: str
    line: int


@dataclass(frozen=True, slots=True)
class IoIssueRow:
    """One ``io-issue`` in a report, with the record's fields (the JSON report's ``io_issues``)."""

    type: str
    path: str
    thread: str
    ops: int
    bytes: int
    buffer_size: int
    cost_ms: float
    frames: tuple[IoFrameRow, ...]
    count: int
    unwatched: int = 0
    """Files opened at the issue's site and not watched before it was found (sampling)."""
    sampled_one_in: int = 1
    """One file in this many was watched at that site meanwhile (1: all were)."""
