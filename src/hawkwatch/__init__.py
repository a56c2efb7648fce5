"""hawkwatch: application performance monitoring for Python.

The agent's whole public surface: ``start``, ``stop``, ``mark_ready``, ``event``, ``span``,
and for the stall monitor ``watch_loop`` and ``heartbeat``.
None of them raises into the calling code. Only ``start`` and ``watch_loop`` import the agent,
so that importing ``hawkwatch.store`` or running the ``hawkwatch`` command does not; the others
never import anything, so a ``fork()`` in another thread cannot freeze them (``_public``).
"""

from __future__ import annotations

from hawkwatch._public import event, heartbeat, mark_ready, span, start, stop, watch_loop
from hawkwatch._version import __version__
from hawkwatch.errors import HawkwatchError

__all__ = [
    "HawkwatchError",
    "__version__",
    "event",
    "heartbeat",
    "mark_ready",
    "span",
    "start",
    "stop",
    "watch_loop",
]
