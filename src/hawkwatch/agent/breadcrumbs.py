"""The last things that happened, kept for crash records: events, spans, WARNING+ log records.

One bounded ring per process (``deque.append`` is atomic under the GIL, so any thread may add);
the crash monitor attaches its ``logging`` handler to the root logger and reads the ring when a
crash is recorded. Adding costs one tuple and one append.
"""

from __future__ import annotations

import logging
import time
from collections import deque
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
    """The ring's breadcrumbs, oldest first."""
    return tuple(Breadcrumb(time=t, kind=k, text=x) for t, k, x in list(_ring))


def clear() -> None:
    _ring.clear()


class BreadcrumbHandler(logging.Handler):
    """Keeps WARNING-and-above log records as breadcrumbs; never formats with the app's handlers."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            note("log", f"{record.levelname} {record.name}: {record.getMessage()}")
        except Exception:  # a bad log call must not become our error
            return
