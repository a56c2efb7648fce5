"""``hawkwatch upload``: send stored sessions (those not sent yet), session folders or iOS files."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from hawkwatch.errors import HawkwatchError


class UploadUsageError(HawkwatchError):
    exit_code = 2


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="session folders, MTHawkeye folders or iOS crash files "
                        "(default: every stored session not yet uploaded)")  # fmt: skip
    parser.add_argument("--url", default=os.environ.get("HAWKWATCH_UPLOAD_URL"),
                        help="collector URL (default: $HAWKWATCH_UPLOAD_URL)")  # fmt: skip
    parser.add_argument("--key", default=os.environ.get("HAWKWATCH_UPLOAD_KEY"),
                        help="the project's ingest key ($HAWKWATCH_UPLOAD_KEY)")  # fmt: skip
    parser.add_argument("--root", help="sessions folder (default: $HAWKWATCH_HOME/sessions)")


def run(args: argparse.Namespace) -> int:
    from hawkwatch.store import Session
    from hawkwatch.uploader import pending_sessions, upload_file, upload_session

    if not args.url or not args.key:
        raise UploadUsageError("name the collector: --url URL --key KEY (or HAWKWATCH_UPLOAD_*)")
    sent = []
    if not args.paths:
        sent = [upload_session(s, args.url, args.key) for s in pending_sessions(args.root)]
    for given in args.paths:
        path = Path(given)
        if not path.exists():
            raise UploadUsageError(f"{given}: no such file or folder")
        is_session = path.is_dir() and (path / "session.json").is_file()
        sent.append(upload_session(Session.open(path), args.url, args.key) if is_session
                    else upload_file(path, args.url, args.key))  # fmt: skip
    for item in sent:
        note = " (already there)" if item.duplicate else ""
        print(f"uploaded {item.what}{note}", file=sys.stderr)
    print(f"{len(sent)} uploaded", file=sys.stderr)
    return 0
