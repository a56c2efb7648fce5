"""Short source paths for frames in terminal reports, so the line number is never cut off.

A frame reads ``func (file:line)``; on an 80-column terminal a full path pushes the line number
out of view. Paths inside the current directory become relative, library paths start at the
package (after ``site-packages`` or ``pythonX.Y``); anything else keeps its last two parts.
The JSON report keeps full paths.
"""

from __future__ import annotations

import os
import re
from pathlib import PurePath

_FRAME_LOCATION = re.compile(r"\((/[^()]*?)(:\d+)?\)$")
_LIBRARY_ROOT = re.compile(r"/(?:site-packages|dist-packages|python3\.\d+)(?=/)")


def short_path(path: str, cwd: str | None = None) -> str:
    """``path`` as the reader needs it: relative to ``cwd``, from the package, or its tail."""
    cwd = os.getcwd() if cwd is None else cwd
    if path.startswith(cwd.rstrip("/") + "/"):
        return path[len(cwd.rstrip("/")) + 1 :]
    library = list(_LIBRARY_ROOT.finditer(path))
    if library:
        return path[library[-1].end() + 1 :]
    parts = PurePath(path).parts
    return "/".join(parts[-2:]) if len(parts) > 3 else path


def short_frame(text: str, cwd: str | None = None) -> str:
    """A ``func (file:line)`` text with its file shortened by ``short_path``."""
    match = _FRAME_LOCATION.search(text)
    if match is None:
        return text
    shortened = short_path(match.group(1), cwd) + (match.group(2) or "")
    return f"{text[: match.start()]}({shortened})"
