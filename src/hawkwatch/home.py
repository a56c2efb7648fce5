"""Where hawkwatch keeps its files: one rule for sessions, symbols and whatever comes next."""

from __future__ import annotations

import os

from hawkwatch.errors import ConfigError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def hawkwatch_home() -> Path:
    """``$HAWKWATCH_HOME``, else ``~/.hawkwatch``; ``ConfigError`` when neither can be found."""
    from pathlib import Path  # here: the supervisor reads home_folder() without pathlib

    return Path(home_folder())


def home_folder() -> str:
    """``hawkwatch_home`` with ``os.path`` alone (for ``hawkwatch run``'s supervisor, which
    keeps ``pathlib`` out of its start)."""
    home = os.environ.get("HAWKWATCH_HOME")
    if home:
        return os.path.expanduser(home)
    user_home = os.path.expanduser("~")
    if user_home.startswith("~"):  # no $HOME and no passwd entry for this user
        raise ConfigError(
            "cannot determine the home directory (no $HOME, and no passwd entry for this user); "
            "set HAWKWATCH_HOME, or pass the folder (--root)"
        )
    return os.path.join(user_home, ".hawkwatch")
