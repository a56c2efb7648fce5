"""Plain data types shared by every layer; no I/O here.

The names below are loaded on first use, so that the agent, which needs only a few modules of
this package (``collections``, ``records``, ``stack``), does not import the others at start-up.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from hawkwatch.model import collections
    from hawkwatch.model.images import BinaryImage, ImageList
    from hawkwatch.model.parsed import Parsed
    from hawkwatch.model.record import Record, Skipped

__all__ = ["BinaryImage", "ImageList", "Parsed", "Record", "Skipped", "collections"]

_HOMES = {
    "BinaryImage": "images",
    "ImageList": "images",
    "Parsed": "parsed",
    "Record": "record",
    "Skipped": "record",
}


def __getattr__(name: str) -> Any:
    if name == "collections":
        return _submodule("collections")
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_submodule(home), name)
    globals()[name] = value
    return value


def _submodule(name: str) -> Any:
    """``importlib.import_module`` of a module of this package, without importing ``importlib``
    (the agent's start does not load it)."""
    full = f"{__name__}.{name}"
    __import__(full)
    return sys.modules[full]
