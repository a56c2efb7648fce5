"""Where hawkwatch keeps its files: one rule for sessions, symbols and whatever comes next."""

from __future__ import annotations

import os
from pathlib import Path


def hawkwatch_home() -> Path:
    """``$HAWKWATCH_HOME``, else ``~/.hawkwatch``."""
    home = os.environ.get("HAWKWATCH_HOME")
    return Path(home).expanduser() if home else Path.home() / ".hawkwatch"
