"""``hawkwatch server``: run the collector, its workers, and add projects, users and tokens."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hawkwatch.errors import HawkwatchError


class ServerExtraMissing(HawkwatchError):
    exit_code = 2


def configure(parser: argparse.ArgumentParser) -> None:
    commands = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    run = commands.add_parser("run", help="serve ingest and the query API (and a worker)")
    run.add_argument("--host", default="127.0.0.1")
    run.add_argument("--port", type=int, default=8470)
    run.add_argument("--no-worker", action="store_true", help="do not run a pipeline worker")
    worker = commands.add_parser("worker", help="run a pipeline worker only")
    prune = commands.add_parser("prune", help="delete what is older than the retention now")
    keep = commands.add_parser("set-retention", help="a project's own retention (days)")
    keep.add_argument("name")
    for sub in (keep,):
        sub.add_argument("--envelopes-days", type=_days, default=argparse.SUPPRESS,
                         help="days to keep raw uploads ('server': the server's setting)")
        sub.add_argument("--events-days", type=_days, default=argparse.SUPPRESS,
                         help="days to keep sessions and occurrences ('server': the server's)")
    for sub in (run, worker, prune):
        sub.add_argument("--keep-envelopes-days", type=_days, default=30.0,
                         help="days to keep raw uploads once processed (default 30; 'forever')")
        sub.add_argument("--keep-events-days", type=_days, default=90.0,
                         help="days to keep sessions and occurrences (default 90; 'forever')")
    project = commands.add_parser("add-project", help="create a project; prints its ingest key")
    project.add_argument("name")
    user = commands.add_parser("add-user", help="create a user of the query API and dashboard")
    user.add_argument("email")
    user.add_argument("--password-file", required=True, type=Path)
    token = commands.add_parser("add-token", help="print a new API token for a user")
    token.add_argument("email")
    for sub in (run, worker, prune, keep, project, user, token):
        sub.add_argument("--database", help="SQLAlchemy URL (default: SQLite under "
                         "$HAWKWATCH_HOME/server; postgresql+psycopg://… to scale)")  # fmt: skip
        sub.add_argument("--symbols", type=Path,
                         help="symbol store for server-side symbolication")  # fmt: skip


def _days(value: str) -> float | None:
    """Days as a number; 'forever' (or 'server' for a project: inherit) is None."""
    if value in ("forever", "server"):
        return None
    try:
        days = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of days") from None
    if days <= 0:
        raise argparse.ArgumentTypeError("days must be more than 0")
    return days


def _retention(args: argparse.Namespace) -> object:
    from hawkwatch.server.retention import Retention

    return Retention(args.keep_envelopes_days, args.keep_events_days)


def run(args: argparse.Namespace) -> int:
    try:
        from hawkwatch.server import admin
        from hawkwatch.server.database import make_engine, migrate
    except ImportError as exc:
        raise ServerExtraMissing(
            f"the collector needs the 'server' extra (pip install 'hawkwatch[server]'): {exc}"
        ) from exc
    engine = make_engine(args.database)
    migrate(engine)
    if args.action == "add-project":
        print(admin.add_project(engine, args.name))
    elif args.action == "add-user":
        password = args.password_file.read_text().strip()
        admin.add_user(engine, args.email, password)
        print(f"added {args.email}", file=sys.stderr)
    elif args.action == "add-token":
        print(admin.add_token(engine, args.email))
    elif args.action == "set-retention":
        admin.set_retention(engine, args.name, **{
            f"keep_{what}_days": getattr(args, f"{what}_days")
            for what in ("envelopes", "events") if hasattr(args, f"{what}_days")
        })  # fmt: skip
        print(f"retention of {args.name} set", file=sys.stderr)
    elif args.action == "prune":
        import json

        from hawkwatch.server.retention import prune

        print(json.dumps(prune(engine, _retention(args)).as_dict()))  # type: ignore[arg-type]
    elif args.action == "worker":
        import threading

        from hawkwatch.server.worker import work

        try:
            work(engine, threading.Event(), symbols_root=args.symbols,
                 retention=_retention(args))  # type: ignore[arg-type]
        except KeyboardInterrupt:
            return 130
    else:
        _serve(engine, args)
    return 0


def _serve(engine: object, args: argparse.Namespace) -> None:
    import uvicorn

    from hawkwatch.server.app import ServerSettings, create_app
    from hawkwatch.server.worker import start_thread

    stop = None if args.no_worker else start_thread(
        engine, args.symbols, _retention(args)  # type: ignore[arg-type]
    )
    app = create_app(engine, ServerSettings(symbols_root=args.symbols))  # type: ignore[arg-type]
    print(f"hawkwatch collector on http://{args.host}:{args.port}", file=sys.stderr)
    try:
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    finally:
        if stop is not None:
            stop.set()
