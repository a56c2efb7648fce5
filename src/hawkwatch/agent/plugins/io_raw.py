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
from typing import Any, Final, Protocol

from hawkwatch.agent.plugins import io_threads
from hawkwatch.model.io import FileStats

_perf: Final = time.perf_counter_ns
_modules: Final = sys.modules
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

    def opened(self, path: str) -> FileStats | None:
        """A file is opening here: its stats, or None to leave it alone."""

    def closed(self, stats: FileStats) -> None: ...

    def unclosed(self, stats: FileStats) -> None: ...

    def loop_io(self, stats: FileStats) -> None:
        """An op on a loop thread made ``stats`` break the loop-thread rule."""

    def failed(self, exc: Exception) -> None:
        """Our own bookkeeping raised; the monitor disables itself."""


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
        run = s.run_ns + cost if t0 - s.last_end_ns < _gap_ns else cost
        s.run_ns = run
        if run > s.max_run_ns:
            s.max_run_ns = run
        s.last_end_ns = t1
    events = _modules.get("asyncio.events")
    if (events is not None and events._get_running_loop() is not None) or (
        io_threads.loop_ids and _get_ident() in io_threads.loop_ids
    ):
        _account_loop(s, owner, cost, done, t0, t1)


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


def failed(s: FileStats, exc: Exception) -> None:
    try:
        owner: Any = s.owner
        owner.failed(exc)
    except Exception:  # nothing of ours may reach the app
        return


# -- the raw file ------------------------------------------------------------------------------


class CanaryFileIO(io.FileIO):
    """``io.FileIO`` that counts what reaches the OS; identical otherwise (it is one)."""

    _hw: FileStats | None = None

    def readinto(self, buffer: Any, /) -> int | None:
        s = self._hw
        if s is None:
            return _readinto(self, buffer)
        t0 = _perf()
        done = _readinto(self, buffer)
        t1 = _perf()
        try:
            account(s, True, size_of(buffer), done, t0, t1)
        except Exception as exc:
            failed(s, exc)
        return done

    def read(self, *args: Any) -> bytes:  # *args: FileIO says what is wrong with a bad call
        s = self._hw
        if s is None:
            return _read(self, *args)
        t0 = _perf()
        data = _read(self, *args)
        t1 = _perf()
        try:
            size = args[0] if args else -1
            done = None if data is None else len(data)
            if size is None or size < 0:  # readall: asked for everything there was
                account(s, True, done or 0, done, t0, t1)
                s.eof = True
            else:
                account(s, True, size, done, t0, t1)
        except Exception as exc:
            failed(s, exc)
        return data

    def readall(self) -> bytes:
        s = self._hw
        if s is None:
            return _readall(self)
        t0 = _perf()
        data = _readall(self)
        t1 = _perf()
        try:
            account(s, True, len(data), len(data), t0, t1)
            s.eof = True
        except Exception as exc:
            failed(s, exc)
        return data

    def write(self, buffer: Any, /) -> int:
        s = self._hw
        if s is None:
            return _write(self, buffer)
        t0 = _perf()
        done = _write(self, buffer)
        t1 = _perf()
        try:
            account(s, False, size_of(buffer), done, t0, t1)
        except Exception as exc:
            failed(s, exc)
        return done

    def close(self) -> None:
        s = self._hw
        if s is not None:
            self._hw = None
            try:
                owner: Any = s.owner
                if owner.active:
                    if self._finalizing and not self.closed:  # type: ignore[attr-defined]
                        owner.unclosed(s)  # an unbuffered file dropped while open
                    owner.closed(s)
            except Exception as exc:
                failed(s, exc)
        # super(), not a module global: a file may be closed by its finaliser at interpreter
        # exit, after this module's globals are gone.
        return super().close()

    if sys.version_info < (3, 12):

        def __reduce_ex__(self, protocol: Any) -> Any:
            """Refused as FileIO refuses (copyreg would try ``FileIO(self)`` for a subclass)."""
            if isinstance(protocol, int) and protocol < 2:
                raise TypeError(f"cannot pickle {io.FileIO.__name__!r} object")
            return super().__reduce_ex__(protocol)

    def _dealloc_warn(self, source: object) -> None:
        """A buffered or text layer over us is being finalised while open: unclosed."""
        s = self._hw
        if s is not None:
            try:
                owner: Any = s.owner
                if owner.active:
                    owner.unclosed(s)
            except Exception as exc:
                failed(s, exc)
        _dealloc_warn(self, source)


# The name shows in repr (3.13: "_io.FileIO") and in pickling's refusal (3.12+: the part after
# the dot, "FileIO"): with the real tp_name both read as they do for io.FileIO.
CanaryFileIO.__name__ = "_io.FileIO"
