"""hawkwatch: application performance monitoring for Python.

The agent's whole public surface: ``start``, ``stop``, ``mark_ready``, ``event``, ``span``.
None of them raises into the calling code.
"""

from hawkwatch._version import __version__
from hawkwatch.agent.api import event, mark_ready, span, start, stop
from hawkwatch.errors import HawkwatchError

__all__ = ["HawkwatchError", "__version__", "event", "mark_ready", "span", "start", "stop"]
