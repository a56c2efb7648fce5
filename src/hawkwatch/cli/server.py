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
    run = commands.add_parser(
        "run", help="serve ingest, the query API and the dashboard (and a worker)"
    )
    run.add_argument("--host", default="127.0.0.1")
    run.add_argument("--port", type=int, default=8470)
    run.add_argument("--no-worker", action="store_true", help="do not run a pipeline worker")
    run.add_argument("--sources", type=Path, action="append", default=[], metavar="DIR",
                     help="a folder the dashboard may show crash frames' source lines from "
                     "(repeatable)")  # fmt: skip
    worker = commands.add_parser("worker", help="run a pipeline worker only")
    project = commands.add_parser("add-project", help="create a project; prints its ingest key")
    project.add_argument("name")
    user = commands.add_parser("add-user", help="create a user of the query API and dashboard")
    user.add_argument("email")
    user.add_argument("--password-file", required=True, type=Path)
    token = commands.add_parser("add-token", help="print a new API token for a user")
    token.add_argument("email")
    for sub in (run, worker, project, user, token):
        sub.add_argument("--database", help="SQLAlchemy URL (default: SQLite under "
                         "$HAWKWATCH_HOME/server; postgresql+psycopg://… to scale)")  # fmt: skip
        sub.add_argument("--symbols", type=Path,
                         help="symbol store for server-side symbolication")  # fmt: skip


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
    elif args.action == "worker":
        import threading

        from hawkwatch.server.worker import work

        try:
            work(engine, threading.Event(), symbols_root=args.symbols)
        except KeyboardInterrupt:
            return 130
    else:
        _serve(engine, args)
    return 0


def _serve(engine: object, args: argparse.Namespace) -> None:
    import uvicorn

    from hawkwatch.server.app import ServerSettings, create_app
    from hawkwatch.server.dashboard import DashboardSettings
    from hawkwatch.server.worker import start_thread

    stop = None if args.no_worker else start_thread(engine, args.symbols)  # type: ignore[arg-type]
    settings = ServerSettings(
        symbols_root=args.symbols, dashboard=DashboardSettings(source_roots=tuple(args.sources))
    )
    app = create_app(engine, settings)  # type: ignore[arg-type]
    print(f"hawkwatch collector on http://{args.host}:{args.port}", file=sys.stderr)
    try:
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    finally:
        if stop is not None:
            stop.set()
