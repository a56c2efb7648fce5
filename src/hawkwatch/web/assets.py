"""The session views' scripts and styles (``static/``), for a server to serve at
``/static/<name>`` and for the standalone file to inline."""

from __future__ import annotations

from importlib import resources
from typing import Final

from hawkwatch.web._html import esc

#: The files a page holding a session view loads, in load order.
ASSETS: Final = ("session.css", "session.js")


def asset_files() -> dict[str, bytes]:
    """File name → content of every static asset of the session views."""
    folder = resources.files("hawkwatch.web") / "static"
    return {name: (folder / name).read_bytes() for name in ASSETS}


def asset_tags(base: str = "/static/") -> str:
    """The ``<link>`` and ``<script>`` a page's ``<head>`` needs to hold session views, with the
    assets served under ``base``."""
    return (
        f'<link rel="stylesheet" href="{esc(base)}session.css">'
        f'<script src="{esc(base)}session.js" defer></script>'
    )


def asset_text(name: str) -> str:
    """One asset as text (they are all UTF-8)."""
    return asset_files()[name].decode("utf-8")
