"""Where hawkwatch keeps its files: one rule for sessions, symbols and whatever comes next."""

from __future__ import annotations

import os
from pathlib import Path

from hawkwatch.errors import ConfigError


def hawkwatch_home() -> Path:
    """``$HAWKWATCH_HOME``, else ``~/.hawkwatch``; ``ConfigError`` when neither can be found."""
    home = os.environ.get("HAWKWATCH_HOME")
    try:
        return Path(home).expanduser() if home else Path.home() / ".hawkwatch"
    except RuntimeError:  # no $HOME and no passwd entry for this user
        raise ConfigError(
            "cannot determine the home directory (no $HOME, and no passwd entry for this user); "
            "set HAWKWATCH_HOME, or pass the folder (--root)"
        ) from None
