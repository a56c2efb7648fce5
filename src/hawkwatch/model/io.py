"""File I/O as the I/O canary sees it: one ``FileStats`` per open file (Matrix's ``IOInfo``) and
the thresholds of the four rules (``../shared/design/detectors.md`` §3).

``FileStats`` is filled on the host's own threads for every read or write that reaches the OS,
so it is a plain class whose counters default on the class: creating one sets four fields, and a
file that is opened and closed without I/O costs nothing more. Times are ``perf_counter_ns``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

LOOP_THREAD_IO: Final = "loop-thread-io"
SMALL_BUFFER: Final = "small-buffer"
REPEATED_READ: Final = "repeated-read"
UNCLOSED: Final = "unclosed"

#: The issue types, in report order.
ISSUE_TYPES: Final = (LOOP_THREAD_IO, SMALL_BUFFER, REPEATED_READ, UNCLOSED)


class FileStats:
    """What happened to one open file, from open to close (IOCanary's ``IOInfo``).

    ``stack`` is the opening stack as the collector captured it (opaque here; rules compare it
    for equality only). ``requested`` sums the sizes asked of the OS (IOCanary counts requested,
    not transferred, bytes); ``max_buffer`` is the largest single request; ``eof`` says a read
    came back short (the end was reached). A *run* is continual I/O: ops less than
    ``IoRules.continual_gap_ns`` apart add their cost to the current run (tracked off the loop
    thread only when ``small_buffer_min_run_ns`` asks for it).
    The ``loop_*`` fields count only the ops made on a loop thread (``loop_thread`` is the last).
    """

    path: str
    thread: int
    stack: Any
    owner: Any
    ops = 0
    writes = 0
    requested = 0
    transferred = 0
    max_buffer = 0
    cost_ns = 0
    max_op_ns = 0
    run_ns = 0
    max_run_ns = 0
    last_end_ns = -(1 << 62)
    eof = False
    loop_thread = 0
    loop_ops = 0
    loop_bytes = 0
    loop_cost_ns = 0
    loop_max_op_ns = 0
    loop_run_ns = 0
    loop_max_run_ns = 0
    loop_last_end_ns = -(1 << 62)
    done = False
    loop_reported = False
    unclosed_reported = False

    def __init__(self, path: str, thread: int, stack: Any, owner: Any = None) -> None:
        self.path = path
        self.thread = thread
        self.stack = stack
        self.owner = owner

    def __repr__(self) -> str:
        return (
            f"FileStats({self.path!r}, ops={self.ops}, requested={self.requested}, "
            f"cost_ns={self.cost_ns}, loop_ops={self.loop_ops})"
        )


@dataclass(frozen=True, slots=True)
class IoRules:
    """The four rules' switches and thresholds (IOCanary's numbers unless said otherwise)."""

    loop_thread: bool = True
    loop_op_ns: int = 13_000_000
    """One op on a loop thread longer than this is an issue (``kPossibleNegativeThreshold``)."""
    loop_continual_ns: int = 500_000_000
    """Continual I/O on a loop thread longer than this is an issue."""
    continual_gap_ns: int = 8_000_000
    """Ops closer than this belong to one continual run (``kContinualThreshold``)."""
    small_buffer: bool = True
    small_buffer_ops: int = 20
    """More ops than this on one file, ..."""
    small_buffer_bytes: int = 4096
    """... asking the OS for fewer bytes than this on average, is an issue."""
    small_buffer_min_run_ns: int = 0
    """IOCanary also wants a continual run of 13 ms; 0 reports small buffers however fast."""
    repeated_read: bool = True
    repeat_count: int = 5
    """This many identical whole reads of one path in a row is an issue."""
    repeat_window_ns: int = 1_000_000_000
    """A read later than this after the previous one starts a new row."""
    unclosed: bool = True


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
