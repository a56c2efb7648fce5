"""``hawkwatch run``: run a Python program with the agent started before any of its code."""

from __future__ import annotations

import argparse
import sys

from hawkwatch.errors import ConfigError


def configure(parser: argparse.ArgumentParser) -> None:
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
        help="turn the continuous profiler on (same as -o profiler.enabled=true)",
    )
    parser.add_argument(
        "--memory",
        action="store_true",
        help="trace allocations from the start (same as -o memory.trace=always; costs the app "
        "time on every allocation)",
    )
    parser.add_argument(
        "-o",
        "--option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="any option, e.g. -o resources.interval_s=1 (see hawkwatch check-config)",
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the program and its arguments")


def run(args: argparse.Namespace) -> int:
    from hawkwatch.launcher import exit_like, run_program

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    module = None
    if args.module is not None:
        if not args.module:
            raise ConfigError("-m needs a module name, e.g. 'hawkwatch run -m http.server 8000'")
        module, command = args.module[0], args.module[1:]
    options = parse_options(args.option)
    if args.profile:
        options["profiler.enabled"] = "true"
    if args.memory:
        options["memory.trace"] = "always"
    if args.app_name:
        options["app.name"] = args.app_name
    if args.app_version:
        options["app.version"] = args.app_version
    outcome = run_program(command, module, options)
    if outcome.session_path is None:
        print(
            "hawkwatch: the program did not start the agent (is it a Python program with "
            "hawkwatch installed?); nothing was recorded",
            file=sys.stderr,
        )
    else:
        print(
            f"hawkwatch: session {outcome.session_path}; see it with 'hawkwatch report'",
            file=sys.stderr,
        )
    return exit_like(outcome)


def parse_options(items: list[str]) -> dict[str, str]:
    options: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"-o {item!r}: expected NAME=VALUE, e.g. -o gc.threshold_ms=5")
        options[name.strip()] = value
    return options
