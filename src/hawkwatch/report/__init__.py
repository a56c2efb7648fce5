"""Renderers of result objects: console text, JSON and exports, chosen from one registry.

``hawkwatch.report.outputs.OUTPUTS`` maps each result type to its formats; ``write_output``
writes a result in one of them. Renderer modules are imported only when chosen.
"""

from __future__ import annotations

from hawkwatch.report.outputs import OUTPUTS, Output, formats_for, output_for, render, write_output

__all__ = ["OUTPUTS", "Output", "formats_for", "output_for", "render", "write_output"]
