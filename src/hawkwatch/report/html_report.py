"""``hawkwatch report --format html``: the session as one self-contained HTML file.

The same views as the dashboard's session page, from the same code (``hawkwatch.web``) and the
same data (the report JSON, ``json_report.to_json_dict``).
"""

from __future__ import annotations

from typing import TextIO

from hawkwatch.model.report import SessionReport
from hawkwatch.report.json_report import to_json_dict
from hawkwatch.web.standalone import render_standalone_html

output_file_extension = "html"


def render(report: SessionReport, file: TextIO) -> None:
    """Write the standalone HTML file of ``report``."""
    file.write(render_standalone_html(to_json_dict(report), title_of(report)))


def title_of(report: SessionReport) -> str:
    """``hawkwatch: APP — SESSION`` (the app name when known)."""
    session = report.session
    app = session.app_name or session.command
    return f"hawkwatch: {app} — {session.name}" if app else f"hawkwatch: {session.name}"
