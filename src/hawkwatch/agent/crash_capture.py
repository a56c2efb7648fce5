"""An uncaught exception → a ``crash`` record: stack with source lines, causes, other threads.

Runs inside the app's exception hooks, so it only reads: the traceback, ``linecache`` and
``sys._current_frames()``. The record must fit one store line (16 KB): source lines, then other
threads, then breadcrumbs and causes are dropped until it does (``truncated`` says so). The
fingerprint comes from ``analysis.python_crash``, the iOS grouping's own code path.
"""

from __future__ import annotations

import linecache
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from types import FrameType, TracebackType
from typing import Final

import msgspec

from hawkwatch.model.records import Breadcrumb, Cause, Crash, CrashRecordFrame, ThreadStack
from hawkwatch.store.appender import MAX_LINE_BYTES

MAX_FRAMES: Final = 64
MAX_CAUSES: Final = 8
MAX_THREADS: Final = 16
MAX_SOURCE: Final = 160
_ROOM: Final = MAX_LINE_BYTES - 200  # collection and key share the line


def _library_prefixes() -> tuple[str, ...]:
    """Folders whose files are not the app's own code: the stdlib and installed packages."""
    import sysconfig  # ~2 ms: at the first crash, not at every start

    found: set[str] = set()
    for name in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(name)
        if path:
            found.add(os.path.realpath(path) + os.sep)
            found.add(path + os.sep)
    for entry in sys.path:
        if entry.endswith(("site-packages", "dist-packages")):
            found.add(entry + os.sep)
    return tuple(sorted(found))


_PREFIXES: list[tuple[str, ...]] = []  # found at the first crash (sysconfig: ~3 ms at start)


def is_in_app(file: str) -> bool:
    if not _PREFIXES:
        _PREFIXES.append(_library_prefixes())
    return not (file.startswith("<") or file.startswith(_PREFIXES[0]))


def _frame(code_file: str, function: str, line: int | None, source: bool) -> CrashRecordFrame:
    text = linecache.getline(code_file, line).strip()[:MAX_SOURCE] if source and line else ""
    return CrashRecordFrame(
        function=function,
        file=code_file,
        line=line or 0,
        source=text or None,
        in_app=is_in_app(code_file),
    )


def _name(frame: FrameType) -> str:
    return getattr(frame.f_code, "co_qualname", frame.f_code.co_name)


def traceback_frames(tb: TracebackType | None, source: bool = True) -> tuple[CrashRecordFrame, ...]:
    """A traceback's frames, innermost first (at most ``MAX_FRAMES``, the innermost kept)."""
    entries: deque[tuple[FrameType, int | None]] = deque(maxlen=MAX_FRAMES)
    while tb is not None:
        entries.append((tb.tb_frame, tb.tb_lineno))
        tb = tb.tb_next
    return tuple(
        _frame(f.f_code.co_filename, _name(f), line, source) for f, line in reversed(entries)
    )


def stack_frames(frame: FrameType | None, source: bool = True) -> tuple[CrashRecordFrame, ...]:
    """A live frame's stack, innermost first."""
    found: list[CrashRecordFrame] = []
    while frame is not None and len(found) < MAX_FRAMES:
        found.append(_frame(frame.f_code.co_filename, _name(frame), frame.f_lineno, source))
        frame = frame.f_back
    return tuple(found)


def _message(exc: BaseException) -> str:
    try:
        return str(exc)[:2000]
    except Exception:  # a __str__ that fails must not lose the crash
        return f"<unprintable {type(exc).__name__}>"


def chained(exc: BaseException, source: bool = True) -> Iterator[Cause]:
    """``__cause__``/``__context__`` links and exception-group members, breadth first."""
    seen = {id(exc)}
    pending: deque[tuple[BaseException, int]] = deque([(exc, 0)])
    count = 0
    while pending and count < MAX_CAUSES:
        current, depth = pending.popleft()
        links: list[tuple[BaseException, str]] = []
        if current.__cause__ is not None:
            links.append((current.__cause__, "cause"))
        elif current.__context__ is not None and not current.__suppress_context__:
            links.append((current.__context__, "context"))
        if isinstance(current, BaseExceptionGroup):
            links.extend((member, "group") for member in current.exceptions)
        for linked, relation in links:
            if id(linked) in seen or count >= MAX_CAUSES:
                continue
            seen.add(id(linked))
            count += 1
            pending.append((linked, depth + 1))
            yield Cause(
                type=type(linked).__qualname__,
                message=_message(linked),
                relation=relation,  # type: ignore[arg-type]
                depth=depth + 1,
                frames=traceback_frames(linked.__traceback__, source),
            )


def other_threads(skip: int | None, source: bool = False) -> tuple[ThreadStack, ...]:
    """Every other Python thread's stack now (names from ``threading``)."""
    names = {t.ident: t.name for t in threading.enumerate()}
    stacks: list[ThreadStack] = []
    for ident, frame in sys._current_frames().items():
        name = names.get(ident, f"thread {ident}")
        if ident == skip or len(stacks) >= MAX_THREADS or name.startswith("hawkwatch-"):
            continue  # hawkwatch's own threads are not the app's
        stacks.append(
            ThreadStack(
                name=name,
                ident=ident,
                frames=stack_frames(frame, source),
            )
        )
    return tuple(stacks)


def build_crash(
    exc: BaseException,
    *,
    source: str,
    fatal: bool,
    thread: threading.Thread | None,
    breadcrumbs: Iterable[Breadcrumb] = (),
    now: float | None = None,
) -> Crash:
    """The full crash record for ``exc`` (shrunk to fit a store line)."""
    crash = Crash(
        time=time.time() if now is None else now,
        kind="exception",
        fatal=fatal,
        type=type(exc).__qualname__,
        message=_message(exc),
        thread=thread.name if thread is not None else "",
        source=source,
        frames=traceback_frames(exc.__traceback__),
        causes=tuple(chained(exc)),
        threads=other_threads(thread.ident if thread is not None else None),
        breadcrumbs=tuple(breadcrumbs),
        pid=os.getpid(),
    )
    return fit(with_fingerprint(crash))


def with_fingerprint(crash: Crash) -> Crash:
    # the crash grouping (hashlib and all): loaded at the first crash, not at every start
    from hawkwatch.analysis.python_crash import python_fingerprint

    key = python_fingerprint(crash)
    return msgspec.structs.replace(crash, fingerprint=key.hash, title=key.title)


def fit(crash: Crash) -> Crash:
    """The crash, made smaller until its JSON fits one store line."""
    if len(crash.encode_value()) <= _ROOM:
        return crash
    steps: tuple[Callable[[Crash], Crash], ...] = (
        lambda c: msgspec.structs.replace(c, threads=c.threads[:4]),
        lambda c: msgspec.structs.replace(c, breadcrumbs=c.breadcrumbs[-10:]),
        lambda c: msgspec.structs.replace(
            c, causes=tuple(msgspec.structs.replace(k, frames=k.frames[:8]) for k in c.causes)
        ),
        lambda c: msgspec.structs.replace(
            c, threads=tuple(msgspec.structs.replace(t, frames=t.frames[:8]) for t in c.threads)
        ),
        lambda c: msgspec.structs.replace(c, message=c.message[:500], breadcrumbs=()),
        lambda c: msgspec.structs.replace(c, threads=(), causes=c.causes[:2]),
        lambda c: msgspec.structs.replace(
            c, frames=tuple(msgspec.structs.replace(f, source=None) for f in c.frames)
        ),
        lambda c: msgspec.structs.replace(c, frames=c.frames[:20], causes=()),
    )
    for step in steps:
        crash = msgspec.structs.replace(step(crash), truncated=True)
        if len(crash.encode_value()) <= _ROOM:
            break
    return crash


def minimal_crash(
    exc_type: type[BaseException], message: str, *, source: str, fatal: bool, thread: str
) -> Crash:
    """What is left when building the full record failed (the recrash fallback)."""
    return Crash(
        time=time.time(),
        kind="exception",
        fatal=fatal,
        type=getattr(exc_type, "__qualname__", str(exc_type)),
        message=message[:500],
        thread=thread,
        source=source,
        pid=os.getpid(),
        truncated=True,
    )
