"""``hawkwatch server``: run the collector, its workers; add projects, users, tokens, alerts."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

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
    alerting = _configure_alerts(commands)
    for sub in (run, worker):
        _add_delivery_arguments(sub)
    for sub in (run, worker, prune, keep, project, user, token, *alerting):
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
        from hawkwatch.server import admin  # noqa: F401 - the extra's imports, checked up front
        from hawkwatch.server.database import make_engine
    except ImportError as exc:
        raise ServerExtraMissing(
            f"the collector needs the 'server' extra (pip install 'hawkwatch[server]'): {exc}"
        ) from exc
    engine = make_engine(args.database)
    try:
        return _run_action(engine, args)
    finally:
        engine.dispose()  # close pooled connections (PostgreSQL) before the command returns


def _run_action(engine: Any, args: argparse.Namespace) -> int:
    from hawkwatch.server import admin
    from hawkwatch.server.database import migrate

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
    elif args.action in ALERT_ACTIONS:
        _run_alert_action(engine, args)
    elif args.action == "worker":
        import threading

        from hawkwatch.server.worker import work

        try:
            work(engine, threading.Event(), symbols_root=args.symbols,
                 retention=_retention(args),  # type: ignore[arg-type]
                 alerts=_delivery_settings(args))  # fmt: skip
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

    stop = None
    if not args.no_worker:
        stop = start_thread(
            engine, args.symbols, _retention(args),  # type: ignore[arg-type]
            _delivery_settings(args),
        )
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


ALERT_ACTIONS = ("add-alert", "list-alerts", "remove-alert", "resolve-issue")


def _configure_alerts(commands: Any) -> list[argparse.ArgumentParser]:
    add = commands.add_parser("add-alert", help="add an alert rule to a project")
    add.add_argument("--project", required=True)
    add.add_argument("--rule", required=True, choices=("new-issue", "regression", "threshold"))
    add.add_argument("--webhook", metavar="URL", help="POST the alert as signed JSON here")
    add.add_argument("--secret", help="the webhook's HMAC secret (default: a new random one)")
    add.add_argument("--email", action="append", default=[], metavar="ADDRESS",
                     help="mail the alert here (repeatable)")  # fmt: skip
    add.add_argument("--metric", choices=("crash-free", "stall"), help="threshold: which rate")
    add.add_argument("--below", type=float, metavar="PCT", help="threshold: crash-free below")
    add.add_argument("--above", type=float, metavar="PCT", help="threshold: stall rate above")
    add.add_argument("--min-sessions", type=int, default=20,
                     help="threshold: fire only over at least this many sessions (20)")  # fmt: skip
    add.add_argument("--window", type=_duration, default=3600.0,
                     help="threshold: sessions started this long ago (1h)")  # fmt: skip
    add.add_argument("--interval", type=_duration, default=3600.0,
                     help="one notification per issue per interval, the rest in a digest (1h)")
    listing = commands.add_parser("list-alerts", help="a project's alert rules")
    listing.add_argument("--project", required=True)
    listing.add_argument("--json", action="store_true")
    remove = commands.add_parser("remove-alert", help="delete an alert rule")
    remove.add_argument("rule_id", type=int)
    resolve = commands.add_parser("resolve-issue",
                                  help="mark an issue resolved in a release (regressions)")
    resolve.add_argument("issue_id", type=int)
    resolve.add_argument("--release", required=True)
    return [add, listing, remove, resolve]


def _add_delivery_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--public-url", default="http://127.0.0.1:8470",
                        help="the dashboard's address as users reach it (links in alerts)")
    parser.add_argument("--smtp-host", help="SMTP server for email alerts")
    parser.add_argument("--smtp-port", type=int, default=25)
    parser.add_argument("--smtp-from", default="hawkwatch@localhost")
    parser.add_argument("--smtp-user")
    parser.add_argument("--smtp-password-file", type=Path)
    parser.add_argument("--smtp-starttls", action="store_true", help="upgrade with STARTTLS")


def _duration(text: str) -> float:
    """``90``, ``90s``, ``15m``, ``1h``, ``1d`` → seconds."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    unit = text[-1:].lower()
    number = text[:-1] if unit in units else text
    try:
        value = float(number) * units.get(unit, 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration like 90s, 15m, 1h") from None
    if value <= 0:
        raise argparse.ArgumentTypeError("a duration must be positive")
    return value


def _delivery_settings(args: argparse.Namespace) -> Any:
    from hawkwatch.server.alerts import AlertSettings

    password = None
    if args.smtp_password_file is not None:
        password = args.smtp_password_file.read_text().strip()
    return AlertSettings(
        public_url=args.public_url, smtp_host=args.smtp_host, smtp_port=args.smtp_port,
        smtp_from=args.smtp_from, smtp_user=args.smtp_user, smtp_password=password,
        smtp_starttls=args.smtp_starttls,
    )  # fmt: skip


def _run_alert_action(engine: Any, args: argparse.Namespace) -> None:
    from hawkwatch.server.admin import AdminError
    from hawkwatch.server.alerts import rules

    if args.action == "add-alert":
        wrong = {"crash-free": args.above, "stall": args.below}.get(args.metric or "")
        if wrong is not None:
            raise AdminError("the crash-free rate fires --below PCT, the stall rate --above PCT")
        added = rules.add_rule(engine, rules.NewRule(
            project=args.project, rule=args.rule, webhook_url=args.webhook,
            email_to=tuple(args.email), metric=args.metric,
            limit_pct=args.below if args.below is not None else args.above,
            min_sessions=args.min_sessions, window_s=args.window, interval_s=args.interval,
            webhook_secret=args.secret,
        ))  # fmt: skip
        print(f"alert rule {added['id']} added to {args.project}", file=sys.stderr)
        if added["webhook_secret"]:
            print(f"webhook secret (shown once): {added['webhook_secret']}", file=sys.stderr)
        print(added["id"])
    elif args.action == "list-alerts":
        if _project_missing(engine, args.project):
            raise AdminError(f"no project {args.project!r}")
        found = rules.list_rules(engine, args.project)
        if args.json:
            print(json.dumps({"alerts": found}, indent=2))
        for rule in [] if args.json else found:
            print(_describe(rule))
    elif args.action == "remove-alert":
        rules.remove_rule(engine, args.rule_id)
        print(f"alert rule {args.rule_id} removed", file=sys.stderr)
    else:
        if rules.resolve_issue(engine, args.issue_id, args.release) is None:
            raise AdminError(f"no issue {args.issue_id}")
        print(f"issue {args.issue_id} resolved in {args.release}", file=sys.stderr)


def _project_missing(engine: Any, name: str) -> bool:
    from hawkwatch.server.queries import project_id

    return project_id(engine, name) is None


def _describe(rule: dict[str, Any]) -> str:
    what = rule["rule"]
    if what == "threshold":
        word = "below" if rule["metric"] == "crash-free" else "above"
        what += (f" {rule['metric']} {word} {rule['limit_pct']:g}% over {rule['window_s']:g}s"
                 f" (min {rule['min_sessions']} sessions)")  # fmt: skip
    where = [f"webhook {rule['webhook_url']}"] if rule["webhook_url"] else []
    where += [f"email {address}" for address in rule["email_to"]]
    return f"{rule['id']}\t{what}\tevery {rule['interval_s']:g}s\t{', '.join(where)}"
