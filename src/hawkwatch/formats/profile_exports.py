"""Registry of the call-tree exporters behind ``hawkwatch profile --format``.

Each exporter module has ``render(tree, file)``, ``output_file_extension`` and
``output_is_binary`` (then ``file`` is a binary stream). Modules are imported only when chosen.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Final

EXPORTERS: Final = {
    "collapsed": "hawkwatch.formats.collapsed",
    "speedscope": "hawkwatch.formats.speedscope",
    "pprof": "hawkwatch.formats.pprof",
    "svg": "hawkwatch.formats.flamegraph_svg",
}


def get_exporter(name: str) -> ModuleType:
    """The exporter module for a format name (``KeyError`` for an unknown one)."""
    return importlib.import_module(EXPORTERS[name])
