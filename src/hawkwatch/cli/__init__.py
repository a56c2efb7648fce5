"""The ``hawkwatch`` command: one module per subcommand, each a thin layer over the library.

A subcommand module has ``NAME``, ``HELP``, ``configure(parser)`` and ``run(args) -> int``; it
parses and checks its arguments, calls one library function and hands the result to a renderer.
``main`` maps ``HawkwatchError`` to one line on stderr and the error's exit code.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from types import ModuleType

from hawkwatch._version import __version__
from hawkwatch.errors import HawkwatchError

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


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser; when ``argv`` names a subcommand, only that one is imported and set up (with
    no name, or an unknown one, every subcommand is listed, for help and the usage error)."""
    parser = argparse.ArgumentParser(
        prog="hawkwatch",
        description="Application performance monitoring for Python.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"hawkwatch {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = _chosen_command(argv)
    for name, module_name, help_text in COMMANDS:
        if chosen is not None and chosen != name:
            continue  # a named command is parsed by its own parser alone (each costs ~0.5 ms)
        sub = subparsers.add_parser(
            name, help=help_text, description=help_text, formatter_class=HelpFormatter
        )
        sub.set_defaults(_module=module_name)
        if argv is None or chosen == name:
            _load(module_name).configure(sub)
    return parser


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, told the terminal's width: argparse's own asks
    ``shutil.get_terminal_size`` for every argument added, and ``shutil`` (with its compression
    modules, ~1.2 ms) would be imported before ``hawkwatch run`` spawns its program."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
        **kwargs: bool,
    ) -> None:
        if width is None:
            width = terminal_columns() - 2
        super().__init__(prog, indent_increment, max_help_position, width, **kwargs)


def terminal_columns(fallback: int = 80) -> int:
    """``shutil.get_terminal_size().columns``: ``COLUMNS``, else the terminal's, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else fallback


def _chosen_command(argv: list[str] | None) -> str | None:
    if argv is None:
        return None
    names = {name for name, _, _ in COMMANDS}
    for token in argv:
        if not token.startswith("-"):
            return token if token in names else None
    return None


def _load(module_name: str) -> ModuleType:
    return importlib.import_module(module_name)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the process exit code."""
    argv = sys.argv[1:] if argv is None else argv
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
