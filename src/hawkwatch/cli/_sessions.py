"""The SESSION argument shared by subcommands that read one session (report, profile)."""

from __future__ import annotations

import argparse
from pathlib import Path

from hawkwatch.errors import NotASessionError
from hawkwatch.store import Session, latest_session, sessions_root


def add_session_arguments(parser: argparse.ArgumentParser) -> None:
    """``SESSION`` (optional: the newest) and ``--root``."""
    parser.add_argument(
        "session",
        metavar="SESSION",
        nargs="?",
        help="a session folder (hawkwatch or MTHawkeye) or a session name under --root "
        "(default: the newest session)",
    )
    parser.add_argument("--root", help="sessions folder (default: $HAWKWATCH_HOME/sessions)")


def find_session(given: str | None, root: str | None) -> Session:
    """The session named on the command line: a folder, a name under the root, or the newest."""
    if given is not None and Path(given).expanduser().is_dir():
        return Session.open(Path(given).expanduser())  # needs no home directory
    base = sessions_root(root)
    if given is None:
        newest = latest_session(base)
        if newest is None:
            raise NotASessionError(
                f"no sessions under {base}; run your app with "
                "'hawkwatch run -- python app.py' first"
            )
        return newest
    path = Path(given).expanduser()
    if not path.is_dir() and len(path.parts) == 1 and (base / given).is_dir():
        path = base / given
    if not path.exists():
        raise NotASessionError(
            f"{given}: no such session folder, nor a session of that name under {base}; "
            "'hawkwatch sessions' lists them"
        )
    return Session.open(path)
