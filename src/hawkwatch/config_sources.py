"""Where the config comes from besides keyword arguments: ``HAWKWATCH_*`` variables and files.

``hawkwatch.config`` reads them; this module only finds them, with ``os`` alone, so that
``hawkwatch run``'s supervisor can see that there is nothing to read (and so nothing to check)
without importing the config's classes before it spawns the program.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hawkwatch run's start)
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Final

ENV_PREFIX: Final = "HAWKWATCH_"
FILE_NAME: Final = "hawkwatch.toml"


def config_files(start: str) -> Iterator[str]:
    """The files the config may come from, nearest first: in ``start`` and each parent, a
    ``hawkwatch.toml`` (anything by that name: the config says what is wrong with a folder),
    then a ``pyproject.toml`` that names hawkwatch (the config reads its ``[tool.hawkwatch]``
    table, if it has one)."""
    folder = os.path.abspath(start)
    while True:
        own = os.path.join(folder, FILE_NAME)
        if os.path.exists(own):
            yield own
        project = os.path.join(folder, "pyproject.toml")
        if os.path.isfile(project) and mentions_hawkwatch(project):
            yield project
        parent = os.path.dirname(folder)
        if parent == folder:
            return
        folder = parent


def mentions_hawkwatch(path: str) -> bool:
    """Whether a ``pyproject.toml`` can hold a ``[tool.hawkwatch]`` table at all: its key is
    written with the letters ``hawkwatch`` however the table is spelt (header, dotted key,
    inline table). Most projects' files do not name hawkwatch, and parsing one costs ``tomllib``
    with ``re``, ``typing`` and ``datetime`` (~10 ms in ``hawkwatch run``'s supervisor and
    again in its program). An unreadable file counts as naming it, so that its error is
    reported."""
    try:
        with open(path, "rb") as f:
            return b"hawkwatch" in f.read()
    except OSError:
        return True
