"""The raw file the I/O canary puts under the buffered and text layers, and its accounting.

IOCanary hooks ``read``/``write``/``close`` in libc; Python's equivalent spot is the raw file
object, ``io.FileIO``, which every buffered or text layer calls for each read or write that
reaches the OS. ``CanaryFileIO`` is an ``io.FileIO`` (so every ``isinstance`` check holds) that
times ``readinto``/``read``/``readall``/``write`` into the file's ``FileStats``, and tells the
collector about ``close`` and about the finaliser's ``_dealloc_warn`` (the ResourceWarning case:
a file dropped while open). Everything else is FileIO's own C code.

The real call always happens first and its result or exception reaches the app unchanged; our
bookkeeping runs afterwards in a ``try``, and a failure there goes to the collector (which
stops counting) instead of the app. A file whose stats are None (after stop, after a fork, or
never watched) costs one attribute look-up per call.
"""

from __future__ import annotations

# ruff: noqa: PLR1730 - on the per-op path "if a > b: b = a" is cheaper than a call to max()
import io
import sys
import threading
import time
from collections.abc import Callable
from types import CodeType, FrameType

from hawkwatch.agent.plugins import io_threads
from hawkwatch.model.io import FileStats

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any, Final, Protocol
else:
    from hawkwatch._runtime_typing import Protocol

#: The opening stack, innermost first, flat: code object, bytecode offset, code, offset, ...
#: (one tuple per opening site, shared by its files; lines are looked up only for a reported
#: issue).
RawStack = tuple[CodeType | int, ...]

_perf: Final = time.perf_counter_ns
#: A file system under /dev (which the collector leaves alone otherwise).
SHM: Final = "/dev/shm/"
_modules: Final = sys.modules
#: asyncio's module with ``_get_running_loop``: looked for with ``in`` (no call) at each op.
_EVENTS: Final = "asyncio.events"
_get_ident: Final = threading.get_ident
_readinto: Final = io.FileIO.readinto
_read: Final = io.FileIO.read
_readall: Final = io.FileIO.readall
_write: Final = io.FileIO.write
_close: Final = io.FileIO.close
_dealloc_warn: Final = io.FileIO._dealloc_warn  # type: ignore[attr-defined]


class Collector(Protocol):
    """What the hooks report to (``io_issues.IssueCollector``)."""

    active: bool
    #: What ``opened`` leaves alone, the opening sites seen and the files each site watches
    #: fully before it is sampled (``io_hooks._open`` reads them itself: it runs for every file
    #: opened).
    ignore_prefixes: tuple[str, ...]
    skip: frozenset[str]
    sites: dict[tuple[int, ...], tuple[object, ...]]
    warmup: int

    def opened(self, path: str) -> RawStack | None:
        """A file is opening here: the opening stack, or None to leave it alone."""

    def stack_at(self, frame: FrameType) -> RawStack | None:
        """The opening stack from ``frame`` (the caller of open) out; None to leave it alone."""

    def site_at(self, frame: FrameType) -> tuple[object, ...]:
        """The site of ``frame``: four code objects, the stack (``stack_at``'s) and its
        ``SiteSampling``."""

    many_ops: int
    forget_path: Callable[[str, None], object]
    read_whole: Callable[[str, int, int, object, int], bool]

    def closed(self, stats: Watched) -> None:
        """A watched file that did I/O closed (``CanaryFileIO`` or ``FileStats``)."""

    def repeated(self, raw: CanaryFileIO) -> None:
        """``read_whole`` found ``raw``'s read repeated."""

    def unclosed(self, stats: Watched) -> None: ...

    def loop_io(self, stats: FileStats) -> None:
        """An op on a loop thread made ``stats`` break the loop-thread rule."""

    def failed(self, exc: Exception) -> None:
        """Our own bookkeeping raised; the monitor disables itself."""


class _Off:
    """The owner of a file no longer watched (closed, or never set up): counts nothing."""

    active = False


OFF: Final[Any] = _Off()
_gap_ns = 8_000_000
_loop_op_ns = 13_000_000
_loop_run_ns = 500_000_000
_track_runs = False


# -- accounting (runs for every op that reaches the OS) ----------------------------------------


def account(  # noqa: PLR0917 - one call per op: positional is cheapest
    s: FileStats, read: bool, requested: int, done: int | None, t0: int, t1: int
) -> None:
    """Add one op to its file's stats (IOCanary's ``IOInfoCollector::OnRead/OnWrite``)."""
    owner: Any = s.owner
    if not owner.active:
        return
    cost = t1 - t0
    s.ops += 1
    s.requested += requested
    if done:
        s.transferred += done
    if requested > s.max_buffer:
        s.max_buffer = requested
    s.cost_ns += cost
    if read:
        if done is not None and done < requested:
            s.eof = True
    else:
        s.writes += 1
    if _track_runs:  # only the small-buffer gate needs continual runs off the loop thread
        _continual_run(s, cost, t0, t1)
    if _on_loop_thread():
        _account_loop(s, owner, cost, done, t0, t1)


def _continual_run(s: FileStats, cost: int, t0: int, t1: int) -> None:
    """Extend the file's run of ops less than the gap apart, or start a new one."""
    run = s.run_ns + cost if t0 - s.last_end_ns < _gap_ns else cost
    s.run_ns = run
    if run > s.max_run_ns:
        s.max_run_ns = run
    s.last_end_ns = t1


def _on_loop_thread() -> bool:
    """Whether this thread runs an asyncio loop now, or the app marked it as a loop thread."""
    return (_EVENTS in _modules and _modules[_EVENTS]._get_running_loop() is not None) or bool(
        io_threads.loop_ids and _get_ident() in io_threads.loop_ids
    )


def _account_loop(  # noqa: PLR0917 - as account()
    s: FileStats, owner: Any, cost: int, done: int | None, t0: int, t1: int
) -> None:
    """The same op on a loop thread: its own counts and continual runs (the loop rule)."""
    s.loop_thread = _get_ident()
    s.loop_ops += 1
    if done:
        s.loop_bytes += done
    s.loop_cost_ns += cost
    if cost > s.loop_max_op_ns:
        s.loop_max_op_ns = cost
    run = s.loop_run_ns + cost if t0 - s.loop_last_end_ns < _gap_ns else cost
    s.loop_run_ns = run
    if run > s.loop_max_run_ns:
        s.loop_max_run_ns = run
    s.loop_last_end_ns = t1
    if cost > _loop_op_ns or run > _loop_run_ns:
        owner.loop_io(s)


def configure(*, gap_ns: int, loop_op_ns: int, loop_run_ns: int, track_runs: bool) -> None:
    """The thresholds the per-op accounting needs (module globals: read at every op)."""
    global _gap_ns, _loop_op_ns, _loop_run_ns, _track_runs
    _gap_ns, _loop_op_ns, _loop_run_ns, _track_runs = gap_ns, loop_op_ns, loop_run_ns, track_runs


def size_of(buffer: Any) -> int:
    if type(buffer) is memoryview:
        return buffer.nbytes
    if type(buffer) is bytes or type(buffer) is bytearray:
        return len(buffer)
    return memoryview(buffer).nbytes


def failed(owner: Any, exc: Exception) -> None:
    """Our bookkeeping raised: tell the owner (a ``FileStats``'s, or the collector)."""
    try:
        if isinstance(owner, FileStats):
            owner = owner.owner
        owner.failed(exc)
    except Exception:  # nothing of ours may reach the app
        return


# -- the raw file ------------------------------------------------------------------------------


class CanaryFileIO(io.FileIO):
    """``io.FileIO`` that counts what reaches the OS; identical otherwise (it is one).

    The counters are slots of the file itself (``watch`` sets them): no object is made per file
    opened, and a file that closes without breaking a rule leaves nothing behind. A
    ``FileStats`` is built from them only when the collector needs one (``snapshot``). Until
    ``watch`` (or after ``close``) ``_hw_owner`` is ``OFF`` and each call costs one look-up.
    """

    __slots__ = (
        "_hw_cost_ns",
        "_hw_eof",
        "_hw_max_buffer",
        "_hw_more",
        "_hw_ops",
        "_hw_owner",
        "_hw_path",
        "_hw_requested",
        "_hw_stack",
        "_hw_thread",
        "_hw_transferred",
        "_hw_writes",
    )  # fmt: skip
    _hw_path: str
    _hw_thread: int
    _hw_stack: RawStack
    _hw_ops: int
    _hw_writes: int
    _hw_requested: int
    _hw_transferred: int
    _hw_max_buffer: int
    _hw_cost_ns: int
    #: When (ns) a read reached the end (came back short, or readall); 0 until then. The
    #: repeated-read rule takes it as the read's time: no clock call at close.
    _hw_eof: int
    #: The rarer counters, made at the first op that needs them: continual runs (when the
    #: small-buffer rule asks for them) and everything about ops on a loop thread.
    _hw_more: FileStats | None
    #: Who counts this file's ops (``OFF`` when no one does); a slot like the rest (an
    #: instance-dict attribute shadowing a class default costs a generic look-up per op). A
    #: file built other than by the hooks has none: every reader takes that as ``OFF``.
    _hw_owner: Any
    #: FileIO's own close, reached through the class (module globals may be gone at exit).
    _hw_close = io.FileIO.close

    # Each op's accounting is written out in the op (``account`` for a file of ours): a call
    # per op would cost as much as the counting itself.

    def readinto(self, buffer: Any, /) -> int | None:
        try:
            owner = self._hw_owner
        except AttributeError:  # not built by the hooks: never watched
            owner = OFF
        if not owner.active:
            return _readinto(self, buffer)
        t0 = _perf()
        done = _readinto(self, buffer)
        t1 = _perf()
        try:
            size = buffer.nbytes if type(buffer) is memoryview else size_of(buffer)
            if done is not None and done < size:
                self._hw_eof = t1
            self._hw_ops += 1
            self._hw_requested += size
            if done:
                self._hw_transferred += done
            if size > self._hw_max_buffer:
                self._hw_max_buffer = size
            self._hw_cost_ns += t1 - t0
            if (
                _track_runs
                or (_EVENTS in _modules and _modules[_EVENTS]._get_running_loop() is not None)
                or (io_threads.loop_ids and _get_ident() in io_threads.loop_ids)
            ):
                self._hw_rare(t1 - t0, done, t0, t1)
        except Exception as exc:
            failed(owner, exc)
        return done

    def read(self, *args: Any) -> bytes:  # *args: FileIO says what is wrong with a bad call
        try:
            owner = self._hw_owner
        except AttributeError:  # not built by the hooks: never watched
            owner = OFF
        if not owner.active:
            return _read(self, *args)
        t0 = _perf()
        data = _read(self, *args)
        t1 = _perf()
        try:
            size = args[0] if args else -1
            done = None if data is None else len(data)
            if size is None or size < 0:  # readall: asked for everything there was
                self._hw_eof = t1
                size = done or 0
            elif done is not None and done < size:
                self._hw_eof = t1
            self._hw_ops += 1
            self._hw_requested += size
            if done:
                self._hw_transferred += done
            if size > self._hw_max_buffer:
                self._hw_max_buffer = size
            self._hw_cost_ns += t1 - t0
            if (
                _track_runs
                or (_EVENTS in _modules and _modules[_EVENTS]._get_running_loop() is not None)
                or (io_threads.loop_ids and _get_ident() in io_threads.loop_ids)
            ):
                self._hw_rare(t1 - t0, done, t0, t1)
        except Exception as exc:
            failed(owner, exc)
        return data

    def readall(self) -> bytes:
        try:
            owner = self._hw_owner
        except AttributeError:  # not built by the hooks: never watched
            owner = OFF
        if not owner.active:
            return _readall(self)
        t0 = _perf()
        data = _readall(self)
        t1 = _perf()
        try:
            done = len(data)
            self._hw_eof = t1
            self._hw_ops += 1
            self._hw_requested += done
            self._hw_transferred += done
            if done > self._hw_max_buffer:
                self._hw_max_buffer = done
            self._hw_cost_ns += t1 - t0
            if (
                _track_runs
                or (_EVENTS in _modules and _modules[_EVENTS]._get_running_loop() is not None)
                or (io_threads.loop_ids and _get_ident() in io_threads.loop_ids)
            ):
                self._hw_rare(t1 - t0, done, t0, t1)
        except Exception as exc:
            failed(owner, exc)
        return data

    def write(self, buffer: Any, /) -> int:
        try:
            owner = self._hw_owner
        except AttributeError:  # not built by the hooks: never watched
            owner = OFF
        if not owner.active:
            return _write(self, buffer)
        t0 = _perf()
        done = _write(self, buffer)
        t1 = _perf()
        try:
            kind = type(buffer)  # BufferedWriter's is a memoryview, the app's usually bytes
            size = (
                buffer.nbytes if kind is memoryview else len(buffer) if kind is bytes
                else size_of(buffer)
            )  # fmt: skip
            self._hw_writes += 1
            self._hw_ops += 1
            self._hw_requested += size
            if done:
                self._hw_transferred += done
            if size > self._hw_max_buffer:
                self._hw_max_buffer = size
            self._hw_cost_ns += t1 - t0
            if (
                _track_runs
                or (_EVENTS in _modules and _modules[_EVENTS]._get_running_loop() is not None)
                or (io_threads.loop_ids and _get_ident() in io_threads.loop_ids)
            ):
                self._hw_rare(t1 - t0, done, t0, t1)
        except Exception as exc:
            failed(owner, exc)
        return done

    def _hw_rare(self, cost: int, done: int | None, t0: int, t1: int) -> None:
        """The op's continual run (if tracked) and, on a loop thread, the loop rule."""
        more = self._hw_more
        if more is None:
            more = self._hw_more = FileStats(
                self._hw_path, self._hw_thread, self._hw_stack, self._hw_owner
            )
        if _track_runs:  # only the small-buffer gate needs continual runs off the loop thread
            _continual_run(more, cost, t0, t1)
        if _on_loop_thread():
            _account_loop(self._hw_sync(more), self._hw_owner, cost, done, t0, t1)

    def _hw_sync(self, into: FileStats) -> FileStats:
        """Copy the whole-file counters into ``into`` (runs and loop counters are its own)."""
        into.ops, into.writes = self._hw_ops, self._hw_writes
        into.requested, into.transferred = self._hw_requested, self._hw_transferred
        into.max_buffer, into.cost_ns = self._hw_max_buffer, self._hw_cost_ns
        into.eof = self._hw_eof != 0
        return into

    def snapshot(self) -> FileStats:
        """This file's ``FileStats`` (IOCanary's IOInfo), built when a rule needs one."""
        more = self._hw_more
        stats = FileStats(self._hw_path, self._hw_thread, self._hw_stack, self._hw_owner)
        if more is not None:
            for name in _MORE_FIELDS:
                setattr(stats, name, getattr(more, name))
        return self._hw_sync(stats)

    def close(self) -> None:
        try:
            owner = self._hw_owner
        except AttributeError:
            owner = OFF
        if owner.active:
            self._hw_owner = OFF
            try:
                if self._finalizing and not self.closed:  # type: ignore[attr-defined]
                    owner.unclosed(self)  # an unbuffered file dropped while open
                # The collector's closed() for the usual file (a few ops), written out.
                if self._hw_ops > owner.many_ops:
                    owner.closed(self)  # may have used small buffers: every rule
                elif self._hw_writes:
                    owner.forget_path(self._hw_path, None)  # changed: reading it again is right
                elif self._hw_eof and owner.read_whole(
                    self._hw_path, self._hw_thread, self._hw_transferred, self._hw_stack,
                    self._hw_eof,
                ):  # fmt: skip
                    owner.repeated(self)
            except Exception as exc:
                failed(owner, exc)
        return self._hw_close()

    if sys.version_info < (3, 12):

        def __reduce_ex__(self, protocol: Any) -> Any:
            """Refused as FileIO refuses (copyreg would try ``FileIO(self)`` for a subclass)."""
            if isinstance(protocol, int) and protocol < 2:
                raise TypeError(f"cannot pickle {io.FileIO.__name__!r} object")
            return super().__reduce_ex__(protocol)

    def _dealloc_warn(self, source: object) -> None:
        """A buffered or text layer over us is being finalised while open: unclosed."""
        try:
            owner = self._hw_owner
        except AttributeError:
            owner = OFF
        if owner.active:
            try:
                owner.unclosed(self)
            except Exception as exc:
                failed(owner, exc)
        _dealloc_warn(self, source)


Watched = CanaryFileIO | FileStats
_MORE_FIELDS: Final = (
    "run_ns", "max_run_ns", "last_end_ns", "loop_thread", "loop_ops", "loop_bytes",
    "loop_cost_ns", "loop_max_op_ns", "loop_run_ns", "loop_max_run_ns", "loop_last_end_ns",
    "loop_reported",
)  # fmt: skip

# The name shows in repr (3.13: "_io.FileIO") and in pickling's refusal (3.12+: the part after
# the dot, "FileIO"): with the real tp_name both read as they do for io.FileIO.
CanaryFileIO.__name__ = "_io.FileIO"
