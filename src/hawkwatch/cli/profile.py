"""``hawkwatch profile``: where the CPU went — export a session's profile or a high-load
episode as collapsed stacks, speedscope JSON, pprof or an SVG flame graph."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from hawkwatch.analysis.calltree import build_profile_tree, merge_roots
from hawkwatch.cli._sessions import add_session_arguments, find_session
from hawkwatch.errors import HawkwatchError
from hawkwatch.formats.cpu_profile import read_profiles
from hawkwatch.formats.hawkeye_cpu import read_highload
from hawkwatch.formats.profile_exports import EXPORTERS, get_exporter
from hawkwatch.model.profile import (
    PROFILE_MODES,
    CallTree,
    HighLoadEpisode,
    Profile,
    walk_paths,
)
from hawkwatch.store import Session

_VIEWERS = {
    "collapsed": "flamegraph.pl, inferno-flamegraph or https://www.speedscope.app",
    "speedscope": "https://www.speedscope.app (or 'npx speedscope FILE')",
    "pprof": "'go tool pprof -http=: FILE'",
    "svg": "a web browser",
}


class NoProfileError(HawkwatchError):
    """The session holds nothing to export."""

    exit_code = 1


def configure(parser: argparse.ArgumentParser) -> None:
    add_session_arguments(parser)
    parser.add_argument(
        "--episode",
        metavar="KEY",
        help="export one cpu-highload episode (its key, as 'hawkwatch profile --list' shows)",
    )
    parser.add_argument(
        "--format",
        choices=sorted(EXPORTERS),
        default="collapsed",
        help="output format (default: collapsed)",
    )
    parser.add_argument(
        "--mode",
        choices=PROFILE_MODES,
        default="cpu",
        help="profiler samples to count: cpu = threads that were running (default), "
        "wall = every sample of every thread",
    )
    parser.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    parser.add_argument(
        "--symbols",
        action="append",
        default=[],
        metavar="DIR",
        help="iOS sessions: also search this folder for debug files (repeatable); address "
        "frames are symbolicated through the symbol store whenever the symbols extra is there",
    )
    parser.add_argument(
        "--list", action="store_true", help="list the session's episodes and profile windows"
    )


def run(args: argparse.Namespace) -> int:
    session = find_session(args.session, args.root)
    records = session.records().records
    episodes = read_highload(session.path, records, is_hawkwatch=session.is_hawkwatch)
    profiles = read_profiles(session.path, records)
    skipped = len(episodes.skipped) + len(profiles.skipped)
    if args.list:
        for episode in episodes.value:
            print(
                f"episode {episode.key}\t{episode.lasting_s:.1f} s\t"
                f"{episode.average_percent:.1f} %\t{sum(r.count for r in episode.roots)} samples"
            )
        for profile in profiles.value:
            print(
                f"window {profile.start_time:.6f}\t{profile.duration_s:.1f} s\t"
                f"{profile.samples} samples\t{profile.rate_hz:.1f} Hz\t{profile.sampler}"
            )
        return 0
    tree, source = _choose(session, args, episodes.value, profiles.value)
    tree = _symbolicated(session, tree, args.symbols)
    exporter = get_exporter(args.format)
    if args.output:
        path = Path(args.output)
        try:
            if exporter.output_is_binary:
                with path.open("wb") as fb:
                    exporter.render(tree, fb)
            else:
                with path.open("w", encoding="utf-8") as ft:
                    exporter.render(tree, ft)
        except OSError as exc:
            raise NoProfileError(f"{path}: cannot write: {exc.strerror}") from exc
        where = str(path)
    else:
        if exporter.output_is_binary:
            exporter.render(tree, sys.stdout.buffer)
            sys.stdout.buffer.flush()
        else:
            exporter.render(tree, sys.stdout)
            sys.stdout.flush()
        where = "stdout"
    note = f"; skipped {skipped} unreadable record{'s' if skipped != 1 else ''}" if skipped else ""
    if tree.sampler:
        source = f"{source}, sampler {tree.sampler}"
    print(
        f"hawkwatch: wrote {where}: {tree.total:,} samples ({source}){note}; "
        f"open it with {_VIEWERS[args.format]}",
        file=sys.stderr,
    )
    return 0


def _symbolicated(session: Session, tree: CallTree, folders: list[str]) -> CallTree:
    """MTHawkeye's address frames resolved through the session's ``dyld-images`` and the symbol
    store (plus ``--symbols`` folders); left as addresses, with a note, when that cannot be done."""
    if not any(isinstance(frame, int) for path, _ in walk_paths(tree) for frame in path):
        return tree
    from hawkwatch.formats.hawkeye import read_dyld_images
    from hawkwatch.formats.hawkeye_stacks import crash_images

    dyld = read_dyld_images(session.path)
    if dyld is None or not dyld.value.images:
        print(f"hawkwatch: {session.path}: no dyld-images, frames stay addresses", file=sys.stderr)
        return tree
    try:
        from hawkwatch.symbols import Symbolicator, SymbolStore, symbolic, symbolicate_roots

        symbolic()
    except HawkwatchError as exc:
        print(f"hawkwatch: frames stay addresses: {exc}", file=sys.stderr)
        return tree
    arch = dyld.value.arch.split()[0] if dyld.value.arch else None
    symbolicator = Symbolicator(SymbolStore(None, extra=folders))
    roots = symbolicate_roots(tree.roots, crash_images(dyld.value), symbolicator, arch)
    return dataclasses.replace(tree, roots=roots)


def _choose(
    session: Session,
    args: argparse.Namespace,
    episodes: list[HighLoadEpisode],
    profiles: list[Profile],
) -> tuple[CallTree, str]:
    if args.episode is not None:
        for episode in episodes:
            if _same_key(episode.key, args.episode):
                if not episode.roots:
                    raise NoProfileError(
                        f"{session.path}: episode {episode.key} has no stack-frame tree"
                    )
                return episode.tree(), f"cpu-highload episode {episode.key}"
        known = ", ".join(e.key for e in episodes[:10]) or "none"
        raise NoProfileError(
            f"{session.path}: no cpu-highload episode {args.episode!r}; episodes: {known}"
        )
    if profiles:
        tree = build_profile_tree(profiles, args.mode, name=session.name)
        windows = f"{len(profiles)} profiler window{'s' if len(profiles) != 1 else ''}"
        return tree, f"{windows}, {args.mode} samples"
    if episodes:
        roots = merge_roots(episode.roots for episode in episodes)
        tree = CallTree(roots, name=f"{session.name} cpu-highload", mode="cpu")
        return tree, f"{len(episodes)} cpu-highload episode{'s' if len(episodes) != 1 else ''}"
    raise NoProfileError(
        f"{session.path}: no profile in this session (no cpu-profile or cpu-highload records); "
        "record one with 'hawkwatch run --profile -- python app.py'"
    )


def _same_key(key: str, wanted: str) -> bool:
    if key == wanted:
        return True
    try:
        return abs(float(key) - float(wanted)) < 0.005
    except ValueError:
        return False
