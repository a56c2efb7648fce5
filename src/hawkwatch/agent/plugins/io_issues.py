"""What the I/O canary does at open and close: which files to watch, which rules fired, and the
``io-issue`` records (de-duplicated by IOCanary's key, one per key, with a count).

Runs on the host's threads, inside ``open`` and ``close`` and inside finalisers, so the common
path is short: at open, two membership tests and a look at the top four frames (code object and
instruction offset each), which find the stack already captured for that site (lines are looked
up only for a reported issue); at close, a few comparisons. Building a record happens once per
issue, and the typed model (``msgspec``) is imported then, not at start: the canary is on by
default, and a program with no issue never loads it.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from types import CodeType, FrameType

from hawkwatch.agent.monitor import DeferredFailure
from hawkwatch.agent.plugins.io_raw import SHM, CanaryFileIO, RawStack, Watched
from hawkwatch.analysis.io_rules import RepeatedReads, loop_thread_io, small_buffer
from hawkwatch.model.io import (
    KEY_FRAMES,
    LOOP_THREAD_IO,
    REPEATED_READ,
    SMALL_BUFFER,
    UNCLOSED,
    FileStats,
    IoRules,
    issue_key,
)

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    import re
    from typing import Final

    from hawkwatch.model.records.io import IoFrame, IoIssue

_get_ident: Final = threading.get_ident
_getframe: Final = sys._getframe
_perf: Final = time.perf_counter_ns
#: Pseudo-files the agent itself reads (psutil's /proc) and device nodes: not file I/O
#: (``/dev/shm`` is a file system, so it is watched).
SYSTEM_PREFIXES: Final = ("/proc/", "/sys/", "/dev/")
#: Sites remembered by ``site_at`` before it starts afresh (a bound on memory, never reached
#: by an app that opens files from a few hundred places).
_MAX_SITES: Final = 4096
#: ``io.site_warmup`` and ``io.sample_every``'s defaults (``config.IoConfig`` says why).
WARMUP: Final = 64
SAMPLE_EVERY: Final = 16


class SiteSampling:
    """How the files opened at one site are watched (adaptive per-site sampling).

    A site's files are all watched during its warm-up (``warmup`` files); after that, if no
    issue was found there, only one file in ``every``: ``skip`` is how many to leave unwatched
    before the next watched one (``io_hooks._open`` counts it down). An issue found at the site
    sets ``every`` to 1 for good. ``watched``/``unwatched`` count the site's files either way,
    so what was not seen is said, not hidden.
    """

    __slots__ = ("every", "skip", "unwatched", "watched")

    def __init__(self, every: int) -> None:
        self.every = every
        self.skip = 0
        self.watched = 0
        self.unwatched = 0

    def __repr__(self) -> str:
        return (
            f"SiteSampling(every={self.every}, watched={self.watched}, "
            f"unwatched={self.unwatched})"
        )


#: The sampling of a "site" made of wrappers of open only (no caller outside them): always
#: watched.
ALWAYS: Final = SiteSampling(1)


def wrapper_files() -> frozenset[str]:
    """Source files whose frames only pass a call on to ``open``: skipped in stacks."""
    stdlib = os.path.dirname(os.__file__)
    names = ["io", "_pyio", "codecs", "os", "tempfile", "pathlib", "pathlib/_local",
             "pathlib/_abc", "pathlib/__init__"]  # fmt: skip
    files = {os.path.join(stdlib, f"{name}.py") for name in names}
    files |= {f"<frozen {name}>" for name in names}
    here = os.path.dirname(os.path.abspath(__file__))
    files |= {os.path.join(here, f"{name}.py") for name in ("io_hooks", "io_raw", "io_issues")}
    return frozenset(files)


class _Issue:
    __slots__ = ("count", "record", "written")

    def __init__(self, record: IoIssue) -> None:
        self.record = record
        self.count = 1
        self.written = 0


class IssueCollector:
    """The hooks' counterpart (``io_hooks.Collector``): decides, counts and writes issues."""

    def __init__(
        self,
        rules: IoRules,
        write: Callable[[IoIssue], None],
        *,
        max_frames: int = 10,
        ignore_prefixes: tuple[str, ...] = SYSTEM_PREFIXES,
        home: str | None = None,
        redact: re.Pattern[str] | None = None,
        warmup: int = WARMUP,
        sample_every: int = SAMPLE_EVERY,
    ) -> None:
        self.active = True
        #: Files watched at each site before it may be sampled, and the 1 in K watched after.
        self.warmup = max(0, warmup)
        self.sample_every = max(1, sample_every)
        self.rules = rules
        self._small_buffer_ops = rules.small_buffer_ops
        self._repeated_read = rules.repeated_read
        self.max_frames = max_frames
        self.ignore_prefixes = ignore_prefixes
        self.ignore_threads: frozenset[int] = frozenset()
        self.thread_names: dict[int, str] = {}
        self.home = home.rstrip(os.sep) if home and home.rstrip(os.sep) else None
        self.redact = redact
        self.failure = DeferredFailure()
        self._write = write
        #: Source files of the wrappers of open, skipped in stacks.
        self.skip = wrapper_files()
        self._repeats = RepeatedReads(rules)
        # What a raw file's close reads itself (``CanaryFileIO.close``: it runs for every file
        # that did I/O): a file with more ops than ``many_ops`` gets the whole ``closed``; else
        # a written one is forgotten by the repeated-read rows, one read whole is observed.
        self.many_ops = rules.small_buffer_ops if rules.small_buffer else 1 << 62
        self.forget_path: Callable[[str, None], object] = self._repeats.forget_path
        self.read_whole: Callable[[str, int, int, object, int], bool] = (
            self._repeats.observe_read if rules.repeated_read else _never
        )
        self._issues: dict[str, _Issue] = {}
        self._by_site: dict[tuple[object, ...], _Issue] = {}
        #: Top four offsets -> (their four code objects, the stack, its ``SiteSampling``):
        #: ``site_at``'s cache, read by ``io_hooks._open`` itself.
        self.sites: dict[tuple[int, ...], tuple[object, ...]] = {}
        #: id(stack) -> (stack, its site's sampling): an issue's stack finds its site.
        self._sampling: dict[int, tuple[RawStack, SiteSampling]] = {}
        #: Top four frames (code, offset each) of the sites where an issue was found: they stay
        #: fully watched when ``sites`` starts afresh.
        self._issue_sites: set[RawStack] = set()
        self._lock = threading.RLock()  # re-entered when a finaliser runs inside our own work

    # -- the hooks' calls ----------------------------------------------------------------------

    def opened(self, path: str) -> RawStack | None:
        """The stack opening ``path`` (``os.open``'s hook), or None to leave the file alone.

        ``io_hooks._open`` writes the same out inline (it runs for every file opened).
        """
        if path.startswith(self.ignore_prefixes) and not path.startswith(SHM):
            return None
        return self.stack_at(_getframe(2))  # 1 is the hook's own

    def stack_at(self, frame: FrameType) -> RawStack | None:
        """The opening stack from ``frame`` (the caller of open) out; None to leave it alone."""
        return self.site_at(frame)[4]  # type: ignore[return-value]

    def site_at(self, frame: FrameType) -> tuple[object, ...]:
        """The opening site from ``frame`` out, past the wrappers of open (ours, io, pathlib,
        tempfile): its top four code objects, its stack (None: left alone) and its
        ``SiteSampling``.

        One stack per site: the top four frames (IOCanary's key), code object and offset each,
        find the stack captured at the first open from there in ``sites``, so an open from a
        known site reads eleven frame attributes instead of walking max_frames frames and
        building a stack (the deeper frames of that first open stand for the rest, as one record
        stands for its key). The codes are compared by identity: the stored stack holds them,
        so their ids cannot be reused meanwhile. The hook of ``open`` does the look-up of a
        known site itself and calls this for the rest.

        A site first reached on one of the agent's own threads is remembered as the agent's
        (stack None: agent code does not run on the app's threads, nor the app's on the
        agent's), so a known site costs no thread test.
        """
        ignored = _get_ident() in self.ignore_threads
        code = frame.f_code
        if code.co_filename in self.skip:
            outer = outside(frame.f_back, self.skip)
            if outer is None:  # only wrappers of open (a stdlib module's own code)
                return _SHALLOW_AGENT if ignored else _SHALLOW
            frame, code = outer, outer.f_code
        second = frame.f_back
        third = second.f_back if second is not None else None
        fourth = third.f_back if third is not None else None
        # Fewer than four frames (module-level code): the missing ones count as offset -1.
        codes = (
            code,
            second.f_code if second is not None else None,
            third.f_code if third is not None else None,
            fourth.f_code if fourth is not None else None,
        )
        key = (
            frame.f_lasti,
            second.f_lasti if second is not None else -1,
            third.f_lasti if third is not None else -1,
            fourth.f_lasti if fourth is not None else -1,
        )
        site = self.sites.get(key)
        if (
            site is not None
            and site[0] is code
            and site[1] is codes[1]
            and site[2] is codes[2]
            and site[3] is codes[3]
        ):
            return site
        stack = None if ignored else _walk(frame, self.max_frames)
        if len(self.sites) >= _MAX_SITES:
            self.sites.clear()
            self._sampling.clear()
        every = self.sample_every
        if stack is not None and self._issue_sites and stack[:8] in self._issue_sites:
            every = 1
        sampling = SiteSampling(every)
        site = (*codes, stack, sampling)
        self.sites[key] = site
        if stack is not None:
            self._sampling[id(stack)] = (stack, sampling)
        return site

    def sampling_of(self, stack: RawStack) -> SiteSampling | None:
        """The sampling of the site that opened a file with ``stack`` (None if forgotten)."""
        known = self._sampling.get(id(stack))
        return known[1] if known is not None and known[0] is stack else None

    def _watch_fully(self, stack: RawStack) -> None:
        """An issue was found at this site: every file opened there is watched from now on."""
        sampling = self.sampling_of(stack)
        if sampling is not None and sampling.every != 1:
            sampling.every = 1
            sampling.skip = 0
        if len(stack) >= 8 and len(self._issue_sites) < _MAX_SITES:
            self._issue_sites.add(stack[:8])

    def closed(self, file: Watched) -> None:
        """A watched file that did I/O closed: the small-buffer and repeated-read rules.

        A raw file with ``many_ops`` or fewer does the repeated-read part in its own ``close``
        (one call instead of two); its ``FileStats`` is built only when a rule may fire.
        """
        if type(file) is FileStats:
            self._closed_stats(file)
            return
        raw: CanaryFileIO = file  # type: ignore[assignment]
        if raw._hw_ops > self._small_buffer_ops:
            stats = raw.snapshot()
            if small_buffer(stats, self.rules):
                self._found(SMALL_BUFFER, stats)
        if raw._hw_writes:
            self._repeats.forget(raw._hw_path)
        elif (
            raw._hw_eof
            and self._repeated_read
            and self._repeats.observe_read(
                raw._hw_path, raw._hw_thread, raw._hw_transferred, raw._hw_stack, raw._hw_eof
            )
        ):
            self._found(REPEATED_READ, raw.snapshot())

    def repeated(self, raw: CanaryFileIO) -> None:
        """``read_whole`` said a raw file's read completed a row of identical reads."""
        self._found(REPEATED_READ, raw.snapshot())

    def _closed_stats(self, stats: FileStats) -> None:
        """``closed`` for a descriptor opened by ``os.open`` (its ``FileStats`` is kept)."""
        if stats.done:
            return
        stats.done = True
        if stats.ops > self._small_buffer_ops and small_buffer(stats, self.rules):
            self._found(SMALL_BUFFER, stats)
        if stats.writes:
            self._repeats.forget(stats.path)
        elif stats.eof and self._repeated_read and self._repeats.observe(stats, _perf()):
            self._found(REPEATED_READ, stats)

    def unclosed(self, file: Watched) -> None:
        """Finalised while open (the ResourceWarning case)."""
        stats = _stats(file)
        if self.rules.unclosed and not stats.unclosed_reported:
            stats.unclosed_reported = True
            self._found(UNCLOSED, stats)

    def loop_io(self, stats: FileStats) -> None:
        if not stats.loop_reported and loop_thread_io(stats, self.rules):
            stats.loop_reported = True
            self._found(LOOP_THREAD_IO, stats)

    def refresh_threads(self) -> None:
        """Names of live threads, and the agent's own (whose files are not the app's)."""
        threads = threading.enumerate()
        self.thread_names = {t.ident: t.name for t in threads if t.ident is not None}
        self.ignore_threads = frozenset(
            t.ident for t in threads if t.ident is not None and t.name.startswith("hawkwatch-")
        )

    def failed(self, exc: Exception) -> None:
        """Stop counting at once; the monitor's periodic check disables it."""
        self.active = False
        self.failure.capture(exc)

    # -- records -------------------------------------------------------------------------------

    def flush(self) -> None:
        """Write the issues whose count grew since their last record (scheduler thread, stop)."""
        with self._lock:
            pending = [i for i in self._issues.values() if i.count != i.written]
            for issue in pending:
                issue.written = issue.count
        for issue in pending:
            self._write(_with_count(issue.record, issue.written))

    def _found(self, kind: str, stats: FileStats) -> None:
        # The site's code objects find a known issue without building its record (a hot loop
        # may fire a rule on every file); the record's MD5 key merges sites that look alike.
        site = (kind, stats.path, *stats.stack[: 2 * KEY_FRAMES : 2])
        with self._lock:
            issue = self._by_site.get(site)
        if issue is None:
            record = self._record(kind, stats)
            self._watch_fully(stats.stack)  # after the record: it says what went unwatched
            key = record.record_key()
            with self._lock:
                issue = self._issues.get(key)
                if issue is None:
                    issue = self._issues[key] = _Issue(record)
                    issue.count = 0
                self._by_site[site] = issue
        with self._lock:
            issue.count += 1
            count = issue.count
            due = count & (count - 1) == 0  # first, then each time the count doubles
            if due:
                issue.written = count
        if due:
            self._write(_with_count(issue.record, count))

    def _record(self, kind: str, s: FileStats) -> IoIssue:
        from hawkwatch.model.records.io import IoIssue  # at the first issue, not at start

        loop = kind == LOOP_THREAD_IO
        sampling = self.sampling_of(s.stack)
        unwatched = sampling.unwatched if sampling is not None else 0
        return IoIssue(
            type=kind,  # type: ignore[arg-type]
            path=self.display_path(s.path),
            thread=_thread_name(s.loop_thread if loop else s.thread, self.thread_names),
            ops=s.loop_ops if loop else s.ops,
            bytes=s.loop_bytes if loop else s.transferred,
            buffer_size=s.max_buffer,
            cost_ms=round((s.loop_cost_ns if loop else s.cost_ns) / 1e6, 3),
            frames=_frames(s.stack),
            count=1,
            unwatched=unwatched,
            sampled_one_in=sampling.every if sampling is not None and unwatched else 1,
        )

    def display_path(self, path: str) -> str:
        """As given, but ``~`` for the home folder, then the redaction pattern applied."""
        home = self.home
        if home and (path == home or path.startswith(home + os.sep)):
            path = "~" + path[len(home) :]
        if self.redact is not None:
            path = self.redact.sub("***", path)
        return path


def _never(*_: object) -> bool:
    return False


#: ``site_at``'s answer for module-level code run by one of the agent's threads / the app's.
_SHALLOW_AGENT: Final = (None, None, None, None, None, ALWAYS)
_SHALLOW: Final = (None, None, None, None, (), ALWAYS)


def outside(frame: FrameType | None, skip: frozenset[str]) -> FrameType | None:
    """The first frame from ``frame`` out that is not a wrapper of open."""
    while frame is not None and frame.f_code.co_filename in skip:
        frame = frame.f_back
    return frame


def _walk(frame: FrameType | None, depth: int) -> RawStack:
    """Up to ``depth`` frames from ``frame`` out: code object, bytecode offset, code, ..."""
    stack: list[CodeType | int] = []
    while frame is not None and depth:
        stack += (frame.f_code, frame.f_lasti)
        frame = frame.f_back
        depth -= 1
    return tuple(stack)


def _stats(file: Watched) -> FileStats:
    return file if type(file) is FileStats else file.snapshot()  # type: ignore[union-attr]


def _with_count(record: IoIssue, count: int) -> IoIssue:
    if record.count == count:
        return record
    return type(record)(
        type=record.type,
        path=record.path,
        thread=record.thread,
        ops=record.ops,
        bytes=record.bytes,
        buffer_size=record.buffer_size,
        cost_ms=record.cost_ms,
        frames=record.frames,
        count=count,
        unwatched=record.unwatched,
        sampled_one_in=record.sampled_one_in,
    )


def _frames(stack: RawStack) -> tuple[IoFrame, ...]:
    from hawkwatch.model.records.io import IoFrame

    pairs = zip(stack[::2], stack[1::2], strict=True)
    return tuple(
        IoFrame(code.co_qualname, code.co_filename, _line(code, lasti))  # type: ignore[union-attr,arg-type]
        for code, lasti in pairs
    )


def _line(code: CodeType, offset: int) -> int:
    """The source line of a bytecode offset (``frame.f_lineno`` without keeping the frame)."""
    for start, end, line in code.co_lines():
        if start <= offset < end and line is not None:
            return line
    return code.co_firstlineno


def _thread_name(ident: int, names: dict[int, str]) -> str:
    """Without ``threading.enumerate``, whose lock a finaliser may run under."""
    if ident == _get_ident():
        return threading.current_thread().name
    return names.get(ident) or f"thread {ident}"


__all__ = ["IssueCollector", "issue_key", "wrapper_files"]
