"""The ``hawkwatch`` command: one module per subcommand, each a thin layer over the library.

A subcommand module has ``NAME``, ``HELP``, ``configure(parser)`` and ``run(args) -> int``; it
parses and checks its arguments, calls one library function and hands the result to a renderer.
``main`` maps ``HawkwatchError`` to one line on stderr and the error's exit code.
"""

from __future__ import annotations

import argparse
import importlib
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
        prog="hawkwatch", description="Application performance monitoring for Python."
    )
    parser.add_argument("--version", action="version", version=f"hawkwatch {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    chosen = _chosen_command(argv)
    for name, module_name, help_text in COMMANDS:
        if chosen is not None and chosen != name:
            continue  # a named command is parsed by its own parser alone (each costs ~0.5 ms)
        sub = subparsers.add_parser(name, help=help_text, description=help_text)
        sub.set_defaults(_module=module_name)
        if argv is None or chosen == name:
            _load(module_name).configure(sub)
    return parser


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
    sys.exit(main())
