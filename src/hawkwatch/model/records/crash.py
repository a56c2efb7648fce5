"""Python crashes and how each process ended: ``crash``, ``exit-classification``, ``memory-level``.

A ``crash`` is an uncaught exception (main thread, thread, asyncio, unraisable) or a fatal signal
read back from faulthandler's file; ``exit-classification`` says how a session's process ended, in
a fixed vocabulary, with the evidence that decided it; ``memory-level`` marks the footprint
crossing 25/50/75/95 % of the process's memory limit (KSCrash's levels).
"""

from __future__ import annotations

from typing import ClassVar, Final, Literal, get_args

import msgspec

from hawkwatch.model import collections as c
from hawkwatch.model.records._codec import Count, Finite, JsonRecord, NonNegative, time_key

#: How a process can end (``docs/collections.md`` explains each).
ExitKind = Literal[
    "clean",
    "exit-code",
    "exception",
    "fatal-signal",
    "killed",
    "oom-killed",
    "hang-killed",
    "reboot",
    "unknown",
]
EXIT_KINDS: Final = get_args(ExitKind)


class Frame(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One Python frame; ``source`` is the stripped source line when it could be read."""

    function: str
    file: str
    line: int
    source: str | None = None
    in_app: bool = True


class ThreadStack(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Another thread's stack at the moment of the crash, innermost first."""

    name: str
    frames: tuple[Frame, ...] = ()
    ident: int | None = None


class Cause(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A chained exception: ``relation`` is ``cause`` (``raise … from``), ``context`` (raised
    while handling) or ``group`` (a member of an exception group); ``depth`` counts links."""

    type: str
    message: str
    relation: Literal["cause", "context", "group"]
    depth: int = 1
    frames: tuple[Frame, ...] = ()


class Breadcrumb(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Something that happened shortly before: an event, a span or a WARNING+ log record."""

    time: Finite
    kind: str
    text: str


class Crash(JsonRecord, frozen=True, kw_only=True):
    """One Python crash; frames innermost first."""

    collection: ClassVar[str] = c.CRASH

    time: Finite
    kind: Literal["exception", "signal"]
    fatal: bool
    type: str
    message: str = ""
    thread: str = ""
    source: str = ""
    """``sys.excepthook``, ``threading.excepthook``, ``asyncio``, ``sys.unraisablehook``,
    ``faulthandler``."""
    frames: tuple[Frame, ...] = ()
    causes: tuple[Cause, ...] = ()
    threads: tuple[ThreadStack, ...] = ()
    fingerprint: str = ""
    title: str = ""
    breadcrumbs: tuple[Breadcrumb, ...] = ()
    pid: Count | None = None
    truncated: bool = False

    def record_key(self) -> str:
        return time_key(self.time)


class ExitClassification(JsonRecord, frozen=True, kw_only=True):
    """How the session's process ended and why hawkwatch says so.

    ``source``: ``supervisor`` (``hawkwatch run`` saw the exit status), ``next-start`` (a later
    agent found the session ended), ``agent`` (the process itself at a clean exit).
    """

    collection: ClassVar[str] = c.EXIT_CLASSIFICATION

    time: Finite
    kind: ExitKind
    exit_code: int | None = None
    signal: int | None = None
    evidence: tuple[str, ...] = ()
    source: str = ""

    def record_key(self) -> str:
        return time_key(self.time)


class MemoryLevel(JsonRecord, frozen=True, kw_only=True):
    """The footprint crossed ``level`` percent of the limit (up or down: ``level`` is the new
    band's floor, 0 below 25 %)."""

    collection: ClassVar[str] = c.MEMORY_LEVEL

    time: Finite
    level: Count
    footprint_mb: NonNegative
    limit_mb: NonNegative
    limit_source: str = ""

    def record_key(self) -> str:
        return time_key(self.time)


CRASH_TYPES: Final = (Crash, ExitClassification, MemoryLevel)
