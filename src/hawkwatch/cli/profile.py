"""``hawkwatch profile``: where the CPU went — export a session's profile or a high-load
episode as collapsed stacks, speedscope JSON, pprof, an SVG flame graph or JSON."""

from __future__ import annotations

import argparse

from hawkwatch.api.profile import profile, profile_listing
from hawkwatch.api.session import load_session
from hawkwatch.cli._common import (
    add_output_arguments,
    add_session_arguments,
    add_symbols_argument,
    emit,
    status,
)
from hawkwatch.model.profile import PROFILE_MODES
from hawkwatch.report.outputs import OUTPUTS


def configure(parser: argparse.ArgumentParser) -> None:
    add_session_arguments(parser)
    parser.add_argument(
        "--episode",
        metavar="KEY",
        help="export one cpu-highload episode (its key, as 'hawkwatch profile --list' shows)",
    )
    add_output_arguments(parser, "CallTree")
    parser.add_argument(
        "--mode",
        choices=PROFILE_MODES,
        default="cpu",
        help="profiler samples to count: cpu = threads that were running (default), "
        "wall = every sample of every thread",
    )
    add_symbols_argument(
        parser,
        "iOS sessions: also search this folder for debug files (repeatable); address "
        "frames are symbolicated through the symbol store whenever the symbols extra is there",
    )
    parser.add_argument(
        "--list",
        action="store_true",
        help="list the session's episodes and profile windows (as JSON with --json)",
    )


def run(args: argparse.Namespace) -> int:
    session = load_session(args.session, args.root)
    if args.list:
        args.format = "json" if args.format == "json" else "console"
        emit(profile_listing(session), args)
        return 0
    result = profile(session, episode=args.episode, mode=args.mode, symbols=args.symbols)
    for note in result.notes:
        status(note)
    where = emit(result.tree, args)
    skipped = result.skipped
    note = f"; skipped {skipped} unreadable record{'s' if skipped != 1 else ''}" if skipped else ""
    opens = OUTPUTS["CallTree"][args.format].opens_with
    source = result.source
    if result.tree.sampler:
        source = f"{source}, sampler {result.tree.sampler}"
    status(
        f"wrote {where}: {result.tree.total:,} samples ({source}){note}; "
        f"open it with {opens}"
    )
    return 0
