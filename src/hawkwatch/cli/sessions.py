"""``hawkwatch sessions``: which runs were recorded, and how big they are."""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass

from hawkwatch.store import Session, list_sessions, sessions_root


@dataclass(frozen=True, slots=True)
class SessionRow:
    name: str
    path: str
    start_time: float | None
    app_name: str | None
    size_bytes: int
    records: int
    exit: str | None = None
    """How the process ended (exit vocabulary); None: running, or not classified yet."""

    @classmethod
    def of(cls, session: Session) -> SessionRow:
        from hawkwatch.analysis.crash_report import session_exit_kind

        app_name = session.metadata.get("app_name")
        records = session.records().records
        return cls(
            name=session.name,
            path=str(session.path),
            start_time=session.start_time,
            app_name=app_name if isinstance(app_name, str) else None,
            size_bytes=session.size_bytes(),
            records=len(records),
            exit=session_exit_kind(records),
        )


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", help="sessions folder (default: $HAWKWATCH_HOME/sessions)")
    parser.add_argument("--json", action="store_true", help="JSON Lines, one session per line")


def run(args: argparse.Namespace) -> int:
    root = sessions_root(args.root)
    rows = [SessionRow.of(session) for session in list_sessions(root)]
    if args.json:
        for row in rows:
            print(json.dumps(asdict(row)))
        return 0
    if not rows:
        print(f"no sessions under {root}", file=sys.stderr)
        return 0
    from rich.console import Console
    from rich.filesize import decimal
    from rich.table import Table

    table = Table(title=f"sessions in {root}", title_justify="left")
    table.add_column("name")
    table.add_column("started")
    table.add_column("app")
    table.add_column("size", justify="right")
    table.add_column("records", justify="right")
    table.add_column("exit")
    for row in rows:
        started = (
            time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row.start_time))
            if row.start_time
            else "?"
        )
        table.add_row(
            row.name,
            started,
            row.app_name or "",
            decimal(row.size_bytes),
            f"{row.records:,}",
            row.exit or "-",
        )
    Console().print(table)
    return 0
