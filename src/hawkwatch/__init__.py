"""hawkwatch: application performance monitoring for Python."""

from hawkwatch._version import __version__
from hawkwatch.errors import HawkwatchError

__all__ = ["HawkwatchError", "__version__"]
