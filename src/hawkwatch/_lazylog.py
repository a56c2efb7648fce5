"""A module logger that imports ``logging`` at its first message, not at the agent's start.

``logging`` (with ``string``, ``traceback`` and its locks) costs ~2.5 ms to import; a program
that never logs need not pay it for the agent's warnings, which are rare. ``lazy_logger``
returns a stand-in for ``logging.getLogger(name)`` that forwards every attribute to the real
logger, created on first use.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    import logging
    from typing import Any


class _LazyLogger:
    __slots__ = ("_logger", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._logger: logging.Logger | None = None

    def __getattr__(self, attribute: str) -> Any:
        logger = self._logger
        if logger is None:
            import logging

            logger = self._logger = logging.getLogger(self._name)
        return getattr(logger, attribute)


def lazy_logger(name: str) -> logging.Logger:
    """``logging.getLogger(name)``, with ``logging`` imported at the first call on it."""
    return _LazyLogger(name)  # type: ignore[return-value]
