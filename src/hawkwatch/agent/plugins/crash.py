"""Python crashes, fatal signals, memory levels, and how earlier processes ended.

* Uncaught exceptions (main thread, threads, asyncio, unraisable) become ``crash`` records
  through hooks chained in front of the app's (``crash_hooks``). The record is written into
  the store's memory-mapped buffer at once, on the crashing thread, so it survives a kill that
  follows immediately; if building the full record fails, a minimal one is written instead.
* Fatal signals: ``faulthandler`` writes every thread's stack into ``crash-fault.txt``,
  opened now, in the session folder; the next agent start or ``hawkwatch run`` turns it into a
  ``crash`` record (``crash_recovery``). An app that enabled faulthandler first keeps it.
* At start, ``exit-evidence.json`` (boot id, cgroup OOM counter) is written, and earlier
  sessions of processes that are gone get their ``exit-classification``.
* Memory levels: footprint over the limit crossing 25/50/75/95 %, checked every second.
"""

from __future__ import annotations

import faulthandler
import os
import threading
import time

from hawkwatch.agent import breadcrumbs
from hawkwatch.agent import crash_evidence as ev
from hawkwatch.agent.crash_hooks import CrashHooks
from hawkwatch.agent.monitor import AgentContext
from hawkwatch.agent.runtime import report_error
from hawkwatch.store.files import path_join

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import IO, Any, ClassVar, Final

    from hawkwatch.model.records import Crash

#: KSCrash's memory levels, percent of the limit.
MEMORY_LEVELS: Final = (25, 50, 75, 95)

MB = 1024 * 1024


class CrashMonitor:
    name: ClassVar[str] = "crash"

    def __init__(self) -> None:
        self._ctx: AgentContext | None = None
        self._hooks = CrashHooks(self)
        self._fault_file: IO[bytes] | None = None
        self._level = 0
        self._limit: tuple[int, str] | None = None
        self._reader: Any = None
        self._earlier_due = False

    # -- lifecycle -----------------------------------------------------------------------

    def start(self, ctx: AgentContext) -> None:
        config = ctx.config.crash
        self._ctx = ctx
        ev.record_start_evidence(ctx.session.folder, os.getpid())
        breadcrumbs.resize(config.breadcrumbs)
        if config.fatal_signals:
            self._enable_faulthandler(ctx)
        breadcrumbs.tap_logging()
        self._hooks.install()
        # Earlier sessions are classified on the scheduler thread, or at stop if the process
        # ends first; under ``hawkwatch run`` the supervisor does it while the program runs.
        self._earlier_due = config.classify_earlier and not ctx.is_supervised
        if self._earlier_due and ctx.once is not None:
            ctx.once(self.finish_earlier, self)
        elif self._earlier_due:
            self.finish_earlier()
        if config.memory_levels:  # the limit and a first reading: not before the program runs
            ctx.defer(self._start_memory_levels, self)

    def finish_earlier(self) -> None:
        """Classify how earlier sessions' processes ended (once; never raises)."""
        ctx = self._ctx
        if ctx is None or not self._earlier_due:
            return
        self._earlier_due = False
        try:
            gone = ev.gone_unclassified(os.path.dirname(ctx.session.folder), ctx.session.name)
            if not gone:
                return  # nothing to classify: nothing more is loaded for nothing
            from hawkwatch.agent.supervised_exit import finish_sessions

            finish_sessions(session.folder for session in gone)
        except Exception as exc:
            report_error(self.name, "classify-earlier", exc)

    def _enable_faulthandler(self, ctx: AgentContext) -> None:
        if faulthandler.is_enabled():  # the app's (or another tool's): leave it alone
            metadata = ctx.session.metadata
            metadata["crash"] = {"faulthandler": "enabled by the app; fatal signals not recorded"}
            ctx.session.write_metadata(metadata)
            return
        fault_path = path_join(ctx.session.folder, ev.FAULT_NAME)
        self._fault_file = open(fault_path, "wb")  # noqa: SIM115 - held open
        faulthandler.enable(self._fault_file, all_threads=True)

    def stop(self) -> None:
        self.finish_earlier()  # if the scheduler never got to it
        self._hooks.uninstall()
        breadcrumbs.untap_logging()
        f, self._fault_file = self._fault_file, None
        if f is not None:
            faulthandler.disable()
            empty = os.fstat(f.fileno()).st_size == 0
            f.close()
            if empty and self._ctx is not None:
                try:
                    os.unlink(path_join(self._ctx.session.folder, ev.FAULT_NAME))
                except OSError:
                    pass
        self._ctx = None

    def after_fork_child(self) -> None:
        """The child gets its own session and agent: drop the parent's hooks and dump file."""
        self._hooks.uninstall()
        breadcrumbs.untap_logging()
        if self._fault_file is not None:
            faulthandler.disable()
            try:
                self._fault_file.close()  # the child's copy of the descriptor only
            except OSError:
                pass
            self._fault_file = None
        breadcrumbs.clear()
        self._ctx = None

    # -- crash sink (called from the hooks, on the crashing thread) -------------------------

    def on_exception(
        self, exc: BaseException, *, source: str, fatal: bool, thread: threading.Thread | None
    ) -> None:
        ctx = self._ctx
        if ctx is None:
            return
        try:
            crash = build_crash(
                exc, source=source, fatal=fatal, thread=thread, breadcrumbs=breadcrumbs.recent()
            )
        except Exception:  # recrash: keep what is certain
            crash = minimal_crash(
                type(exc), _safe_str(exc), source=source, fatal=fatal, thread=_name(thread)
            )
        self._write(ctx, crash, blocking=source in ("sys.excepthook", "threading.excepthook"))

    def _write(self, ctx: AgentContext, crash: Crash, *, blocking: bool) -> None:
        # The excepthooks run after the stack unwound (no store lock held by this thread):
        # write into the mapped buffer now. Finalizers and asyncio handlers may run inside the
        # store, so they must not wait for it.
        if blocking:
            ctx.write(crash)
        else:
            ctx.write_nowait(crash)

    def on_os_exit(self, code: int) -> None:
        ctx = self._ctx
        if ctx is not None:
            ev.write_intent(ctx.session.folder, int(code))

    # -- memory levels -------------------------------------------------------------------

    def _start_memory_levels(self) -> None:
        ctx = self._ctx
        if ctx is None:
            return
        from hawkwatch.agent.sysinfo import reader_for_this_process  # psutil: only when used

        self._reader = reader_for_this_process()
        self._limit = memory_limit_bytes()
        self.check_memory()
        ctx.every(1.0, self.check_memory, self)

    def check_memory(self) -> None:
        ctx, limit = self._ctx, self._limit
        if ctx is None or limit is None or self._reader is None:
            return
        footprint = self._reader.read().footprint_bytes
        level = level_of(footprint, limit[0])
        if level == self._level:
            return
        self._level = level
        from hawkwatch.model.records import MemoryLevel  # on the scheduler thread

        record = MemoryLevel(
            time=time.time(),
            level=level,
            footprint_mb=round(footprint / MB, 2),
            limit_mb=round(limit[0] / MB, 2),
            limit_source=limit[1],
        )
        ctx.write(record)
        level_path = path_join(ctx.session.folder, ev.LEVEL_NAME)
        ev.write_json(level_path, {"level": level, "time": record.time})


def build_crash(exc: BaseException, **details: Any) -> Crash:
    """``crash_capture.build_crash``, imported with the typed model (msgspec) at the first
    crash, not at every start."""
    from hawkwatch.agent.crash_capture import build_crash as build

    return build(exc, **details)


def minimal_crash(exc_type: type[BaseException], message: str, **details: Any) -> Crash:
    """``crash_capture.minimal_crash`` (the recrash fallback), imported at the first crash."""
    from hawkwatch.agent.crash_capture import minimal_crash as minimal

    return minimal(exc_type, message, **details)


def level_of(footprint: int, limit: int) -> int:
    """The highest of KSCrash's levels (25/50/75/95 %) reached, 0 below the first."""
    percent = 100.0 * footprint / limit if limit > 0 else 0.0
    return max((level for level in MEMORY_LEVELS if percent >= level), default=0)


def memory_limit_bytes() -> tuple[int, str] | None:
    """The process's memory limit: cgroup (v2 ``memory.max``, v1 ``memory.limit_in_bytes``),
    else ``RLIMIT_AS``, else the machine's memory."""
    import resource

    from hawkwatch.agent.sysinfo import find_memory_limit

    found = find_memory_limit()
    if found.cgroup_version == 2:
        limits = [_read_int(path_join(d, "memory.max")) for d in found.cgroup_dirs]
        known = [x for x in limits if x is not None]
        if known:
            return min(known), "cgroup v2 memory.max"
    if found.cgroup_version == 1:
        value = _read_int(path_join(found.cgroup_dirs[0], "memory.limit_in_bytes"))
        if value is not None:
            return value, "cgroup v1 memory.limit_in_bytes"
    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        return soft, "RLIMIT_AS"
    try:  # the machine's memory without psutil (~6 ms to import at every start)
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"), "system memory"
    except (ValueError, OSError, AttributeError):
        import psutil

        return int(psutil.virtual_memory().total), "system memory"


def _read_int(path: str) -> int | None:
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _safe_str(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:
        return ""


def _name(thread: threading.Thread | None) -> str:
    return thread.name if thread is not None else ""
