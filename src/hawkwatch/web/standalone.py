"""One session as a single self-contained HTML file: the session view with its assets inlined.

Nothing in the file is fetched from anywhere: the styles and the script are inline, no font or
image is linked, and a Content Security Policy in the file says so to the browser too
(``default-src 'none'``), so a report attached to a bug can be opened safely.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hawkwatch.web._html import esc
from hawkwatch.web.assets import asset_text
from hawkwatch.web.session_view import render_session_view

_POLICY = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"


def render_standalone_html(report: Mapping[str, Any], title: str) -> str:
    """The whole file: ``<!doctype html>`` … with the view of ``report`` (the report JSON)."""
    script = asset_text("session.js").replace("</script", "<\\/script")
    style = asset_text("session.css").replace("</style", "<\\/style")
    return (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{_POLICY}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="icon" href="data:,">'
        f"<title>{esc(title)}</title><style>{style}</style></head>"
        f'<body class="hw-page"><main>{render_session_view(report)}</main>'
        f"<script>{script}</script></body></html>\n"
    )
