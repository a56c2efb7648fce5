"""``hawkwatch run``: run a Python program with the agent started before any of its code."""

from __future__ import annotations

import sys

from hawkwatch.errors import ConfigError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the supervisor's start)
if TYPE_CHECKING:
    import argparse

MEMORY_BACKENDS = ("tracemalloc", "memray")


def configure(parser: argparse.ArgumentParser) -> None:
    import argparse  # not for a common command line: ``run_args`` reads it without

    from hawkwatch.cli._common import add_option_arguments

    parser.usage = (
        "hawkwatch run [OPTIONS] -- python app.py ARGS…\n"
        "       hawkwatch run [OPTIONS] -m module ARGS…"
    )
    parser.add_argument(
        "-m",
        dest="module",
        nargs=argparse.REMAINDER,
        metavar="MODULE ARGS",
        help="run a module (like python -m); everything after it goes to the module",
    )
    parser.add_argument("--app-name", help="application name recorded in the session")
    parser.add_argument("--app-version", help="application version recorded in the session")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="turn the continuous profiler on (same as -c profiler.enabled=true)",
    )
    parser.add_argument(
        "--memory",
        nargs="?",
        const="tracemalloc",
        metavar="BACKEND",
        help="trace allocations from the start (same as -c memory.trace=always; costs the app "
        "time on every allocation); --memory=memray records with memray instead, native "
        "allocations included (the memory extra; leak suspects are found at exit)",
    )
    parser.add_argument(
        "--children",
        action="store_true",
        help="monitor the program's Python child processes too (spawned, exec'd), each in a "
        "session of its own; forked children always are",
    )
    parser.add_argument(
        "--io",
        action=argparse.BooleanOptionalAction,
        help="the file-I/O canary is on by default; --no-io turns it off (same as "
        "-c io.enabled=false), --io turns it back on over a config file's io.enabled=false",
    )
    add_option_arguments(
        parser, "any option, e.g. -c resources.interval_s=1 (see hawkwatch check-config)"
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the program and its arguments")


def run(args: argparse.Namespace) -> int:
    from hawkwatch.launcher import exit_like, outcome_message, run_program

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    module = None
    if args.module is not None:
        if not args.module:
            raise ConfigError("-m needs a module name, e.g. 'hawkwatch run -m http.server 8000'")
        module, command = args.module[0], args.module[1:]
    options: dict[str, str] = {}
    if args.option:
        from hawkwatch.config import parse_options  # only with options: checked before the spawn

        options = parse_options(args.option)
    if args.profile:
        options["profiler.enabled"] = "true"
    if args.io is not None:
        options["io.enabled"] = "true" if args.io else "false"
    if args.memory is not None:
        backend = args.memory
        if backend not in MEMORY_BACKENDS:
            if f"--memory={backend}" in sys.argv:
                raise ConfigError(
                    f"--memory={backend}: use --memory=tracemalloc or --memory=memray"
                )
            command.insert(0, backend)  # ``--memory python app.py``: no backend was given
            backend = "tracemalloc"
        options["memory.trace"] = "always"
        options["memory.backend"] = backend
    if args.app_name:
        options["app.name"] = args.app_name
    if args.app_version:
        options["app.version"] = args.app_version
    outcome = run_program(command, module, options, children=args.children)
    if sys.stderr is not None:  # None when stderr was closed: never fall back to stdout
        try:
            print(outcome_message(outcome), file=sys.stderr, flush=True)
        except (OSError, ValueError):  # closed meanwhile: the exit status still tells
            pass
    return exit_like(outcome)
