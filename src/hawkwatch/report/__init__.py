"""Renderers of a ``SessionReport``: one module per output, chosen by name from ``RENDERERS``.

Each renderer module has ``render(report, file)``, writing to a text stream the caller passes,
and ``output_file_extension``. Modules are imported only when chosen.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, Protocol, TextIO, cast

from hawkwatch.model.report import SessionReport


class Renderer(Protocol):
    output_file_extension: str

    def render(self, report: SessionReport, file: TextIO, width: int | None = None) -> None: ...


#: Output name → renderer module.
RENDERERS: Final[Mapping[str, str]] = MappingProxyType(
    {"console": "hawkwatch.report.console", "json": "hawkwatch.report.json_report"}
)


def get_renderer(name: str) -> Renderer:
    """The renderer module called ``name``; ``ValueError`` naming the choices otherwise."""
    try:
        module_name = RENDERERS[name]
    except KeyError:
        choices = ", ".join(sorted(RENDERERS))
        raise ValueError(f"unknown report format {name!r}; choose one of: {choices}") from None
    return cast(Renderer, importlib.import_module(module_name))


__all__ = ["RENDERERS", "Renderer", "get_renderer"]
