"""The last things that happened, kept for crash records: events, spans, WARNING+ log records.

One bounded ring per process (``deque.append`` is atomic under the GIL, so any thread may add);
the crash monitor taps ``logging`` (``tap_logging``) and reads the ring when a crash is
recorded. Adding costs one tuple and one append.
"""

from __future__ import annotations

import sys
import time
from collections import deque

from hawkwatch.agent.import_hooks import AfterImport

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    import logging
    from typing import Final

    from hawkwatch.model.records import Breadcrumb

DEFAULT_SIZE: Final = 30
_ring: deque[tuple[float, str, str]] = deque(maxlen=DEFAULT_SIZE)


def note(kind: str, text: str) -> None:
    """Remember one breadcrumb (``event``, ``span``, ``log``)."""
    _ring.append((time.time(), kind, text[:300]))


def resize(size: int) -> None:
    global _ring
    if size != _ring.maxlen:
        _ring = deque(_ring, maxlen=max(1, size))


def recent() -> tuple[Breadcrumb, ...]:
    """The ring's breadcrumbs, oldest first (for a crash record: the typed model is loaded)."""
    from hawkwatch.model.records import Breadcrumb

    return tuple(Breadcrumb(time=t, kind=k, text=x) for t, k, x in list(_ring))


def clear() -> None:
    _ring.clear()


_tapped: tuple[object, object] | None = None  # (original callHandlers, ours)
_waiting: AfterImport | None = None  # until the program imports logging


def tap_logging() -> None:
    """Keep WARNING-and-above log records as breadcrumbs.

    Chained in front of ``Logger.callHandlers`` rather than added as a root handler: a handler
    on the root logger would stop ``logging.lastResort`` from printing the warnings of an app
    that never configured logging. A program that has not imported ``logging`` yet is tapped
    when it does (the agent does not import it at start: ~2.5 ms).
    """
    global _waiting
    if _tapped is not None or _waiting is not None:
        return
    if "logging" in sys.modules:
        _tap()
        return
    _waiting = AfterImport({"logging": _tap}, lambda exc: None)  # untapped: no log breadcrumbs
    _waiting.install()
    if "logging" in sys.modules:  # imported by another thread meanwhile
        _tap()


def _tap() -> None:
    global _tapped, _waiting
    import logging

    if _waiting is not None:
        _waiting.uninstall()
        _waiting = None
    if _tapped is not None:
        return
    original = logging.Logger.callHandlers

    def callHandlers(self: logging.Logger, record: logging.LogRecord) -> None:
        if record.levelno >= logging.WARNING:
            try:
                note("log", f"{record.levelname} {record.name}: {record.getMessage()}")
            except Exception:  # a bad log call must not become our error
                pass
        original(self, record)

    logging.Logger.callHandlers = callHandlers  # type: ignore[method-assign]
    _tapped = (original, callHandlers)


def untap_logging() -> None:
    """Put ``callHandlers`` back, unless someone wrapped it after us (then ours stays, idle)."""
    global _tapped, _waiting
    if _waiting is not None:
        _waiting.uninstall()
        _waiting = None
    if _tapped is None:
        return
    import logging

    original, ours = _tapped
    if logging.Logger.__dict__.get("callHandlers") is ours:
        logging.Logger.callHandlers = original  # type: ignore[method-assign, assignment]
        _tapped = None
