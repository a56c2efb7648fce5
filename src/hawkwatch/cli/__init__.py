"""The ``hawkwatch`` command: one module per subcommand, each a thin layer over the library.

A subcommand module has ``NAME``, ``HELP``, ``configure(parser)`` and ``run(args) -> int``; it
parses and checks its arguments, calls one library function and hands the result to a renderer.
``main`` maps ``HawkwatchError`` to one line on stderr and the error's exit code.
"""

from __future__ import annotations

import os
import sys

from hawkwatch.errors import HawkwatchError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hawkwatch run's start)
if TYPE_CHECKING:
    from types import ModuleType
    from typing import Any

    from hawkwatch.cli._parser import HelpFormatter as HelpFormatter
    from hawkwatch.cli._parser import build_parser as build_parser
    from hawkwatch.cli._parser import terminal_columns as terminal_columns

# Subcommand modules, in the order ``--help`` lists them; imported only when chosen.
COMMANDS = (
    ("run", "hawkwatch.cli.run", "run a Python program with the agent started before its code"),
    ("report", "hawkwatch.cli.report", "what happened over one run: launch, resources, events"),
    ("profile", "hawkwatch.cli.profile", "where the CPU went: flame graph, pprof, speedscope"),
    ("network", "hawkwatch.cli.network", "where HTTP requests spent their time; failing hosts"),
    ("memory", "hawkwatch.cli.memory", "memory growth, leak suspects and who holds them"),
    ("sessions", "hawkwatch.cli.sessions", "list the recorded sessions"),
    ("records", "hawkwatch.cli.records", "print a session's raw records"),
    ("check-config", "hawkwatch.cli.check_config", "show the effective options; strict checks"),
    ("debug", "hawkwatch.cli.debug", "tools for looking inside hawkwatch's files"),
    ("crashes", "hawkwatch.cli.crashes", "group iOS crash reports in a folder by fingerprint"),
    ("jetsam", "hawkwatch.cli.jetsam", "who a JetsamEvent killed, and the app's memory limit"),
    ("symbols", "hawkwatch.cli.symbols", "add debug files (dSYM, Mach-O, ELF, zip) to the store"),
    ("symbolicate", "hawkwatch.cli.symbolicate", "a crash report with function, file and line"),
    ("upload", "hawkwatch.cli.upload", "send sessions and iOS reports to a collector"),
    ("server", "hawkwatch.cli.server", "the collector: ingest, workers, query API, admin"),
    ("allocations", "hawkwatch.cli.allocations", "what was live in an iOS app's memory, by stack"),
)


def _chosen_command(argv: list[str] | None) -> str | None:
    if argv is None:
        return None
    names = {name for name, _, _ in COMMANDS}
    for token in argv:
        if not token.startswith("-"):
            return token if token in names else None
    return None


def _load(module_name: str) -> ModuleType:
    """``importlib.import_module`` without importing ``importlib`` (and its ``warnings``): the
    supervisor of ``hawkwatch run`` loads only what spawning needs."""
    __import__(module_name)
    return sys.modules[module_name]


def __getattr__(name: str) -> Any:
    """The parser's names, from ``_parser`` on first use: ``hawkwatch run`` of a common form
    reads its command line without ``argparse`` (``run_args``)."""
    if name in ("HelpFormatter", "build_parser", "terminal_columns"):
        from hawkwatch.cli import _parser

        return getattr(_parser, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the process exit code."""
    argv = sys.argv[1:] if argv is None else argv
    args: Any = None
    if _chosen_command(argv) == "run":
        from hawkwatch.cli.run_args import parse_run

        args = parse_run(argv)
    if args is None:
        from hawkwatch.cli._parser import build_parser

        parser = build_parser(argv)
        args = parser.parse_args(argv)
        if not getattr(args, "_module", None):
            parser.print_help(sys.stderr)
            return 2
    if args._module != "hawkwatch.cli.run" or args.verbose:
        # The supervisor of ``run`` logs nothing of its own: it skips logging's import (~5 ms
        # on every run; a warning would still reach stderr through logging's last resort).
        import logging

        logging.basicConfig(
            level=(logging.WARNING, logging.INFO, logging.DEBUG)[min(args.verbose, 2)],
            format="hawkwatch: %(message)s",
        )
    try:
        code: int = _load(args._module).run(args)
    except HawkwatchError as exc:
        print(f"hawkwatch: {_bounded(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:
        if args.debug:
            raise
        print(
            f"hawkwatch: internal error: {type(exc).__name__}: {_bounded(str(exc), 200)} "
            "(rerun with --debug for details)",
            file=sys.stderr,
        )
        return 1
    return code


def _bounded(message: str, limit: int = 1000) -> str:
    """At most ``limit`` characters: a backstop for messages quoting damaged input."""
    if len(message) <= limit:
        return message
    return f"{message[:limit]}… ({len(message):,} characters)"


def console_main() -> None:
    """Entry point of the ``hawkwatch`` console script."""
    code = main()
    if _chosen_command(sys.argv[1:]) == "run":
        _leave_now(code)
    sys.exit(code)


def _leave_now(code: int) -> None:
    """``hawkwatch run``'s supervisor leaves without tearing its interpreter down: freeing its
    modules (the record types, the store, msgspec) costs ~5 ms, paid at every supervised start.
    Exit functions run and the streams are flushed first; with a thread of ours still running
    (none is, normally) the ordinary exit joins it instead."""
    threading = sys.modules.get("threading")
    if threading is not None and any(
        t.is_alive() and not t.daemon and t is not threading.main_thread()
        for t in threading.enumerate()
    ):
        sys.exit(code)
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code & 0xFF)
