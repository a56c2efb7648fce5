"""The I/O canary's hooks: the open functions, wrapped so the raw file under the layers is ours.

``builtins.open``/``io.open`` (and through them ``pathlib``'s openers, ``os.fdopen``,
``tempfile``) build the same layers as ``io.open`` does — buffer size from the raw file's
``_blksize``, line buffering for a tty, ``BufferedReader``/``Writer``/``Random``,
``TextIOWrapper`` with its ``mode`` — over ``io_raw.CanaryFileIO``. ``os.open``/``os.read``/
``os.write``/``os.close`` are wrapped for files opened by ``os.open``; other descriptors
(pipes, sockets) go straight through after one dict look-up.

Never hurting the host: anything unusual (a mode or argument ``io.open`` would refuse or warn
about, an ``EncodingWarning`` to attribute, a descriptor we did not open, a path the collector
leaves alone) goes to the real function untouched, so its errors and warnings are its own. The
wrappers are bound methods — as fast to call as a function, yet, like the builtins they
replace, not rebound when stored as a class attribute (``class A: opener = open``).
"""

from __future__ import annotations

import builtins
import io
import os
import sys
from collections.abc import Callable
from threading import get_ident as _get_ident
from time import perf_counter_ns as _perf
from types import MethodType

from hawkwatch.agent.plugins import io_threads
from hawkwatch.agent.plugins.io_issues import outside
from hawkwatch.agent.plugins.io_raw import (
    SHM,
    CanaryFileIO,
    Collector,
    account,
    failed,
    size_of,
)
from hawkwatch.model.io import FileStats

try:  # warnings.warn is _warnings.warn, the C function io.open itself warns with
    from _warnings import warn as _warn
except ImportError:  # pragma: no cover - other Pythons
    from warnings import warn as _warn

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any, Final, NamedTuple
else:
    from hawkwatch._runtime_typing import NamedTuple

#: The functions replaced, as they were when this module was imported (the C originals).
REAL_OPEN: Final = io.open
REAL_OS_OPEN: Final = os.open
REAL_OS_READ: Final = os.read
REAL_OS_WRITE: Final = os.write
REAL_OS_CLOSE: Final = os.close
_TextIOWrapper: Final = io.TextIOWrapper
_MISSING: Final[Any] = object()
#: io.open's default buffering, compared by identity: -1 is one cached object in CPython, and
#: anything else (an int subclass, -1.0) takes the full check.
_DEFAULT_BUFFERING: Final = -1
_LINE_BUFFERING: Final = (
    "line buffering (buffering=1) isn't supported in binary mode, "
    "the default buffer size will be used"
)
_text_encoding: Final = io.text_encoding
_NEWLINES: Final = frozenset({"", "\n", "\r", "\r\n"})
#: Modes that cannot change a file (an unwatched file opened otherwise may have).
_READ_ONLY: Final = frozenset({"r", "rb", "rt", "br", "tr"})
_O_DIRECTORY: Final = getattr(os, "O_DIRECTORY", 0)
_MAX_FDS: Final = 4096
_fspath: Final = os.fspath
_fsdecode: Final = os.fsdecode
_getframe: Final = sys._getframe
_modules: Final = sys.modules
#: asyncio's module with ``_get_running_loop``: looked for with ``in`` (no call).
_EVENTS: Final = "asyncio.events"

_collector: Collector | None = None
_warn_encoding = False
#: Descriptors opened by ``os.open`` and not yet closed or handed to ``open``.
_fds: dict[int, FileStats] = {}


class _Plan(NamedTuple):
    raw_mode: str
    binary: bool
    buffered: type[io.BufferedReader] | type[io.BufferedWriter] | type[io.BufferedRandom]


_plans: dict[str, _Plan | None] = {}


def _plan(mode: str) -> _Plan | None:
    """How ``io.open`` builds a file for ``mode``; None if it would refuse the mode."""
    chars = set(mode)
    if chars - set("axrwb+t") or len(mode) > len(chars):
        return None
    kinds = [c for c in "xrwa" if c in chars]
    if len(kinds) != 1 or ("t" in chars and "b" in chars):
        return None
    updating = "+" in chars
    buffered: Any
    if updating:
        buffered = io.BufferedRandom
    elif kinds[0] == "r":
        buffered = io.BufferedReader
    else:
        buffered = io.BufferedWriter
    return _Plan(kinds[0] + ("+" if updating else ""), "b" in chars, buffered)


class Canary:
    """What the wrappers are bound to; its repr says whose they are."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<hawkwatch I/O canary>"


def _open(  # noqa: PLR0915, PLR0917 - io.open's signature; one frame per file opened, not three
    _canary: Canary,
    file: Any = _MISSING,
    mode: Any = "r",
    buffering: Any = -1,
    encoding: Any = None,
    errors: Any = None,
    newline: Any = None,
    closefd: Any = True,
    opener: Any = None,
    *more: Any,
    **unknown: Any,
) -> Any:
    collector = _collector
    if collector is None or more or unknown or file is _MISSING or not collector.active:
        return _real_open(file, mode, buffering, encoding, errors, newline, closefd, opener,
                          more, unknown)  # fmt: skip
    # The opening site, found by its top four frames (code and offset each, see
    # IssueCollector.site_at) without a call. A hot site with no issue (``skip``) sends most of
    # its files straight to io.open from here: the shortest path there is. A file opened on a
    # loop thread is always watched (that rule is the canary's first); a call io.open might warn
    # about takes the long way, which attributes the warning to the app. (A path the collector
    # leaves alone, /proc say, opened at a hot site of the app's files counts as unwatched there:
    # it was not watched, and telling it apart would cost every file.)
    site: Any = None
    unwatched = False
    if type(file) is not int:  # a descriptor may be os.open's: _fds has its stack
        try:
            frame: Any = _getframe(1)
            if frame.f_code.co_filename in collector.skip:  # pathlib's openers, tempfile
                frame = outside(frame.f_back, collector.skip)
            second = frame.f_back if frame is not None else None
            third = second.f_back if second is not None else None
            fourth = third.f_back if third is not None else None
            if fourth is not None:
                site = collector.sites.get(
                    (frame.f_lasti, second.f_lasti, third.f_lasti, fourth.f_lasti)  # type: ignore[union-attr]
                )
                if site is not None and (
                    site[0] is not frame.f_code
                    or site[1] is not second.f_code  # type: ignore[union-attr]
                    or site[2] is not third.f_code  # type: ignore[union-attr]
                    or site[3] is not fourth.f_code
                ):
                    site = None
            if (
                site is not None
                and site[5].skip
                and buffering is _DEFAULT_BUFFERING
                and not _warn_encoding
                and site[4] is not None
                and not (
                    (_EVENTS in _modules and _modules[_EVENTS]._get_running_loop() is not None)
                    or (io_threads.loop_ids and _get_ident() in io_threads.loop_ids)
                )
            ):
                sampling = site[5]
                sampling.skip -= 1
                sampling.unwatched += 1
                if type(mode) is str and mode not in _READ_ONLY:
                    _forget(collector, file)  # it may change the file: reading it again is right
                unwatched = True
        except Exception as exc:
            collector.failed(exc)
            unwatched = True
        if unwatched:
            return REAL_OPEN(file, mode, buffering, encoding, errors, newline, closefd, opener)
    # Can we build it as io.open would, without its errors or warnings becoming ours?
    plan = _plans.get(mode) if type(mode) is str else None
    if plan is None:
        if type(mode) is not str or mode in _plans:
            return REAL_OPEN(file, mode, buffering, encoding, errors, newline, closefd, opener)
        plan = _plan(mode)
        if len(_plans) < 64:
            _plans[mode] = plan
        if plan is None:
            return REAL_OPEN(file, mode, buffering, encoding, errors, newline, closefd, opener)
    raw_mode, binary, buffered = plan
    if buffering is _DEFAULT_BUFFERING and errors is None and newline is None:
        # The usual call, checked in a few steps.
        if encoding is not None and (binary or type(encoding) is not str):
            return REAL_OPEN(file, mode, buffering, encoding, errors, newline, closefd, opener)
    elif type(buffering) is not int or (
        (encoding is not None or errors is not None or newline is not None)
        if binary
        else (
            buffering == 0
            or (encoding is not None and type(encoding) is not str)
            or (errors is not None and type(errors) is not str)
            or (newline is not None and (type(newline) is not str or newline not in _NEWLINES))
        )
    ):
        return REAL_OPEN(file, mode, buffering, encoding, errors, newline, closefd, opener)
    # io.open's own warnings name the frame that called it: here that would be this one.
    elif binary and buffering == 1:
        _warn(_LINE_BUFFERING, RuntimeWarning, stacklevel=2)
        buffering = -1
    if encoding is None and _warn_encoding and not binary:
        encoding = _text_encoding(None, 2)
    target = file
    kind = type(file)
    try:
        if kind is str:
            path = file
        elif kind is int:
            path = None
            stats = _fds.pop(file, None) if _fds else None  # os.fdopen(os.open(...))
            if stats is not None:
                path, stack = stats.path, stats.stack
        else:
            try:
                target = _fspath(file)  # what io.open gives FileIO for a path-like
            except Exception:  # not a path: io.open says so
                target = path = None
            else:
                path = target if type(target) is str else _fsdecode(target)
        if path is None or kind is int:
            pass
        elif path.startswith(collector.ignore_prefixes) and not path.startswith(SHM):
            path = None  # the collector's opened(), written out: it runs for every file
        else:
            if site is None:  # a new site, a wrapper of open, a stack under four frames deep
                site = collector.site_at(_getframe(1))  # None: the agent's own threads
            stack = site[4]
            sampling = site[5]
            if stack is None:  # a site of the agent's own threads
                path = None
            elif sampling.skip and not (
                (_EVENTS in _modules and _modules[_EVENTS]._get_running_loop() is not None)
                or (io_threads.loop_ids and _get_ident() in io_threads.loop_ids)
            ):
                # A hot site with no issue: this file goes unwatched, to io.open (a file opened
                # on a loop thread never does: that rule is the canary's first).
                sampling.skip -= 1
                sampling.unwatched += 1
                if raw_mode != "r":  # it may change the file: reading it again is right
                    collector.forget_path(path, None)
                path = None
            else:
                watched = sampling.watched + 1
                sampling.watched = watched
                if watched >= collector.warmup and sampling.every != 1:
                    sampling.skip = sampling.every - 1
    except Exception as exc:
        collector.failed(exc)
        path = None
    if path is None:
        return REAL_OPEN(file if target is None else target, mode, buffering, encoding, errors,
                         newline, closefd, opener)  # fmt: skip
    if closefd is True and opener is None:
        raw = CanaryFileIO(target, raw_mode)
    else:
        raw = CanaryFileIO(target, raw_mode, closefd, opener=opener)
    # io_raw.watch, inline: this runs for every file opened.
    raw._hw_path, raw._hw_thread, raw._hw_stack = path, _get_ident(), stack
    raw._hw_ops = raw._hw_writes = raw._hw_requested = raw._hw_transferred = 0
    raw._hw_max_buffer = raw._hw_cost_ns = 0
    raw._hw_eof = 0
    raw._hw_more = None
    raw._hw_owner = collector
    if _fds:  # an opener may have been os.open: the raw file owns the descriptor now
        _fds.pop(raw.fileno(), None)
    # io.open's layers over raw (_layers, inline); on an error, closed as io.open closes them.
    result: Any = raw
    try:
        if buffering is _DEFAULT_BUFFERING:  # the usual call, in fewer steps
            line_buffering = raw.isatty()
            buffering = raw._blksize  # type: ignore[attr-defined]
        else:
            line_buffering = buffering == 1 or (buffering < 0 and raw.isatty())
            if line_buffering or buffering < 0:
                buffering = raw._blksize  # type: ignore[attr-defined]
        if buffering <= 0:
            if buffering == 0:
                return raw  # binary: unbuffered text went to io.open
            raise ValueError("invalid buffering size")
        result = buffered(raw, buffering)
        if binary:
            return result
        result = _TextIOWrapper(result, encoding, errors, newline, line_buffering)
        result.mode = mode
        return result
    except BaseException:
        try:
            result.close()
        except Exception:  # io.open chains it; the first error matters
            pass
        raise


def _forget(collector: Collector, file: Any) -> None:
    """An unwatched file opened for writing ends its path's rows of identical reads."""
    try:
        path = file if type(file) is str else _fspath(file)
        path = path if type(path) is str else _fsdecode(path)
    except Exception:  # not a path: io.open says so
        return
    collector.forget_path(path, None)


def _real_open(  # noqa: PLR0917 - io.open's arguments, passed on
    file: Any,
    mode: Any,
    buffering: Any,
    encoding: Any,
    errors: Any,
    newline: Any,
    closefd: Any,
    opener: Any,
    more: tuple[Any, ...],
    unknown: dict[str, Any],
) -> Any:
    """The real call for an odd signature, passed as given so ``io.open`` says what is wrong."""
    if more:
        args = (file, mode, buffering, encoding, errors, newline, closefd, opener, *more)
        return REAL_OPEN(*args, **unknown)
    given = {
        name: value
        for name, value, default in (
            ("mode", mode, "r"),
            ("buffering", buffering, -1),
            ("encoding", encoding, None),
            ("errors", errors, None),
            ("newline", newline, None),
            ("closefd", closefd, True),
            ("opener", opener, None),
        )
        if value is not default  # a default passed by name changes nothing
    }
    if file is _MISSING:
        return REAL_OPEN(**given, **unknown)
    return REAL_OPEN(file, **given, **unknown)


# -- os functions --------------------------------------------------------------------------------


def _os_open(_canary: Canary, *args: Any, **kwargs: Any) -> int:
    fd = REAL_OS_OPEN(*args, **kwargs)
    collector = _collector
    if collector is not None and collector.active:
        try:
            path = args[0] if args else kwargs["path"]
            flags = args[1] if len(args) > 1 else kwargs["flags"]
            if not flags & _O_DIRECTORY:
                name = path if type(path) is str else _fsdecode(path)
                stack = collector.opened(name)
                if len(_fds) >= _MAX_FDS:
                    _fds.clear()  # descriptors closed behind our back: start over
                if stack is None:
                    _fds.pop(fd, None)
                else:
                    _fds[fd] = FileStats(name, _get_ident(), stack, collector)
        except Exception as exc:
            collector.failed(exc)
    return fd


def _os_read(_canary: Canary, *args: Any) -> bytes:
    try:
        s = _fds.get(args[0]) if _fds and len(args) == 2 else None
    except Exception:  # an unhashable "fd": os.read says what is wrong
        s = None
    if s is None:
        return REAL_OS_READ(*args)
    t0 = _perf()
    data = REAL_OS_READ(*args)
    t1 = _perf()
    try:
        account(s, True, args[1], len(data), t0, t1)
    except Exception as exc:
        failed(s, exc)
    return data


def _os_write(_canary: Canary, *args: Any) -> int:
    try:
        s = _fds.get(args[0]) if _fds and len(args) == 2 else None
    except Exception:
        s = None
    if s is None:
        return REAL_OS_WRITE(*args)
    t0 = _perf()
    done = REAL_OS_WRITE(*args)
    t1 = _perf()
    try:
        account(s, False, size_of(args[1]), done, t0, t1)
    except Exception as exc:
        failed(s, exc)
    return done


def _os_close(_canary: Canary, *args: Any, **kwargs: Any) -> None:
    if _fds:
        try:
            s = _fds.pop(args[0] if args else kwargs.get("fd", -1), None)
            if s is not None:
                owner: Any = s.owner
                if owner.active:
                    owner.closed(s)
        except Exception as exc:
            collector = _collector
            if collector is not None:
                collector.failed(exc)
    return REAL_OS_CLOSE(*args, **kwargs)


def _bind(function: Callable[..., Any], real: Callable[..., Any], module: str) -> Any:
    function.__name__ = function.__qualname__ = real.__name__
    function.__doc__ = real.__doc__
    function.__module__ = module
    function.__wrapped__ = real  # type: ignore[attr-defined]
    return MethodType(function, Canary())


OPEN: Final = _bind(_open, REAL_OPEN, "io")
OS_OPEN: Final = _bind(_os_open, REAL_OS_OPEN, "posix")
OS_READ: Final = _bind(_os_read, REAL_OS_READ, "posix")
OS_WRITE: Final = _bind(_os_write, REAL_OS_WRITE, "posix")
OS_CLOSE: Final = _bind(_os_close, REAL_OS_CLOSE, "posix")

#: (module, attribute, the original, our wrapper)
_PATCHES: Final[tuple[tuple[Any, str, Callable[..., Any], object], ...]] = (
    (builtins, "open", REAL_OPEN, OPEN),
    (io, "open", REAL_OPEN, OPEN),
    (os, "open", REAL_OS_OPEN, OS_OPEN),
    (os, "read", REAL_OS_READ, OS_READ),
    (os, "write", REAL_OS_WRITE, OS_WRITE),
    (os, "close", REAL_OS_CLOSE, OS_CLOSE),
)


def install(collector: Collector) -> list[str]:
    """Wrap the open functions for ``collector``; returns the names left alone.

    A name whose value is no longer the original (another tool wrapped it first) is left to
    that tool: replacing it would cut the tool out.
    """
    global _collector, _warn_encoding
    _warn_encoding = bool(sys.flags.warn_default_encoding)
    _fds.clear()
    _collector = collector
    skipped = []
    for module, name, original, wrapper in _PATCHES:
        current = getattr(module, name)
        if current is original:
            setattr(module, name, wrapper)
        elif current is not wrapper:
            skipped.append(f"{module.__name__}.{name}")
    return skipped


def remove(collector: Collector | None = None) -> None:
    """Put the originals back where ours still are; files already open stop counting."""
    global _collector
    if collector is None or _collector is collector:
        _collector = None
        _fds.clear()
    if _collector is None:
        for module, name, original, wrapper in _PATCHES:
            if getattr(module, name) is wrapper:
                setattr(module, name, original)
