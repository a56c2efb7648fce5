"""File I/O as the I/O canary sees it: one ``FileStats`` per open file (Matrix's ``IOInfo``) and
the thresholds of the four rules (``../shared/design/detectors.md`` §3).

``FileStats`` is filled on the host's own threads for every read or write that reaches the OS,
so it is a plain class whose counters default on the class: creating one sets four fields, and a
file that is opened and closed without I/O costs nothing more. Times are ``perf_counter_ns``.

The agent imports this module at every start (the canary is on by default), so it holds plain
classes only (no ``dataclasses``, whose import pulls in ``inspect``), and the issue key is
computed here, without the typed model (``model.records.io`` builds its records from it). The
report's rows are in ``model.io_rows``.
"""

from __future__ import annotations

from hawkwatch.model.values import Value

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, Final, Protocol

    class _Frame(Protocol):
        @property
        def function(self) -> str: ...
        @property
        def file(self) -> str: ...


LOOP_THREAD_IO: Final = "loop-thread-io"
SMALL_BUFFER: Final = "small-buffer"
REPEATED_READ: Final = "repeated-read"
UNCLOSED: Final = "unclosed"

#: The issue types, in report order.
ISSUE_TYPES: Final = (LOOP_THREAD_IO, SMALL_BUFFER, REPEATED_READ, UNCLOSED)

#: Frames of the key, as IOCanary keys on the first four lines of the stack.
KEY_FRAMES: Final = 4


def issue_key(kind: str, path: str, frames: Sequence[_Frame]) -> str:
    """``type:md5(path + ":" + top frames)``, IOCanary's de-duplication key per detector."""
    import hashlib  # at the first issue, not at every start

    top = "\n".join(f"{frame.function} ({frame.file})" for frame in frames[:KEY_FRAMES])
    digest = hashlib.md5(f"{path}:{top}".encode(errors="replace"), usedforsecurity=False)
    return f"{kind}:{digest.hexdigest()}"


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


class IoRules(Value):
    """The four rules' switches and thresholds (IOCanary's numbers unless said otherwise).

    Read-only; a plain class with slots (the canary builds one at every start).
    """

    __slots__ = (
        "continual_gap_ns",
        "loop_continual_ns",
        "loop_op_ns",
        "loop_thread",
        "repeat_count",
        "repeat_window_ns",
        "repeated_read",
        "small_buffer",
        "small_buffer_bytes",
        "small_buffer_min_run_ns",
        "small_buffer_ops",
        "unclosed",
    )

    def __init__(
        self,
        *,
        loop_thread: bool = True,
        loop_op_ns: int = 13_000_000,
        loop_continual_ns: int = 500_000_000,
        continual_gap_ns: int = 8_000_000,
        small_buffer: bool = True,
        small_buffer_ops: int = 20,
        small_buffer_bytes: int = 4096,
        small_buffer_min_run_ns: int = 0,
        repeated_read: bool = True,
        repeat_count: int = 5,
        repeat_window_ns: int = 1_000_000_000,
        unclosed: bool = True,
    ) -> None:
        self.loop_thread: Final = loop_thread
        #: One op on a loop thread longer than this is an issue (``kPossibleNegativeThreshold``).
        self.loop_op_ns: Final = loop_op_ns
        #: Continual I/O on a loop thread longer than this is an issue.
        self.loop_continual_ns: Final = loop_continual_ns
        #: Ops closer than this belong to one continual run (``kContinualThreshold``).
        self.continual_gap_ns: Final = continual_gap_ns
        self.small_buffer: Final = small_buffer
        #: More ops than this on one file, ...
        self.small_buffer_ops: Final = small_buffer_ops
        #: ... asking the OS for fewer bytes than this on average, is an issue.
        self.small_buffer_bytes: Final = small_buffer_bytes
        #: IOCanary also wants a continual run of 13 ms; 0 reports small buffers however fast.
        self.small_buffer_min_run_ns: Final = small_buffer_min_run_ns
        self.repeated_read: Final = repeated_read
        #: This many identical whole reads of one path in a row is an issue.
        self.repeat_count: Final = repeat_count
        #: A read later than this after the previous one starts a new row.
        self.repeat_window_ns: Final = repeat_window_ns
        self.unclosed: Final = unclosed

    def __hash__(self) -> int:  # type: ignore[override]  # read-only, so hashable (Value is not)
        return hash(self._fields())
