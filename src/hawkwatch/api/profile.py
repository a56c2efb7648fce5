"""``hawkwatch profile`` as functions: a session's CPU profile as one call tree, and what it holds.

The tree comes from the continuous profiler's windows (``mode`` "cpu" or "wall"), else from the
CPU high-load episodes merged, or from one episode chosen by key. MTHawkeye's address frames are
symbolicated through the session's ``dyld-images`` and the symbol store when the ``symbols``
extra is installed; what could not be done is said in ``ProfileResult.notes``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import msgspec

from hawkwatch.analysis.calltree import build_profile_tree, merge_roots
from hawkwatch.analysis.cpu_report import outside_sampler_note
from hawkwatch.api.session import PathLike, Session
from hawkwatch.api.symbols import open_symbol_store
from hawkwatch.errors import HawkwatchError
from hawkwatch.model.profile import (
    CallTree,
    HighLoadEpisode,
    Profile,
    ProfileMode,
    walk_paths,
)


class NoProfileError(HawkwatchError):
    """The session holds nothing to export."""

    exit_code = 1


@dataclass(frozen=True, slots=True)
class ProfileResult:
    """A call tree and where its samples came from."""

    tree: CallTree
    #: e.g. "3 profiler windows, cpu samples"
    source: str
    #: episodes or windows that could not be read
    skipped: int
    #: why frames stayed addresses, when they did; why py-spy did not sample, when it did not
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ProfileListing:
    """A session's high-load episodes and profiler windows."""

    session: str
    episodes: tuple[HighLoadEpisode, ...]
    windows: tuple[Profile, ...]


def profile_listing(session: Session) -> ProfileListing:
    """What ``profile`` can export from ``session``."""
    return ProfileListing(
        session.name, tuple(session.highload.value), tuple(session.profiles.value)
    )


def profile(
    session: Session,
    *,
    episode: str | None = None,
    mode: ProfileMode = "cpu",
    symbols: Sequence[PathLike] = (),
) -> ProfileResult:
    """The session's CPU profile, or one high-load ``episode`` (by key); ``NoProfileError``.

    ``symbols``: folders also searched for debug files (iOS sessions' address frames).
    """
    if symbols:
        open_symbol_store(None, symbols)  # a missing folder is an error even when unused
    tree, source = _choose(session, episode, mode)
    tree, notes = _symbolicated(session, tree, symbols)
    outside = outside_sampler_note(session.metadata)
    if outside is not None:
        notes = (*notes, outside)
    return ProfileResult(tree, source, session.side_file_problems, notes)


def _choose(session: Session, episode: str | None, mode: ProfileMode) -> tuple[CallTree, str]:
    episodes: list[HighLoadEpisode] = session.highload.value
    profiles: list[Profile] = session.profiles.value
    if episode is not None:
        for candidate in episodes:
            if _same_key(candidate.key, episode):
                if not candidate.roots:
                    raise NoProfileError(
                        f"{session.path}: episode {candidate.key} has no stack-frame tree"
                    )
                return candidate.tree(), f"cpu-highload episode {candidate.key}"
        known = ", ".join(e.key for e in episodes[:10]) or "none"
        raise NoProfileError(
            f"{session.path}: no cpu-highload episode {episode!r}; episodes: {known}"
        )
    if profiles:
        tree = build_profile_tree(profiles, mode, name=session.name)
        return tree, f"{_count(len(profiles), 'profiler window')}, {mode} samples"
    if episodes:
        roots = merge_roots(candidate.roots for candidate in episodes)
        tree = CallTree(roots, name=f"{session.name} cpu-highload", mode="cpu")
        return tree, _count(len(episodes), "cpu-highload episode")
    raise NoProfileError(
        f"{session.path}: no profile in this session (no cpu-profile or cpu-highload records); "
        "record one with 'hawkwatch run --profile -- python app.py'"
    )


def _symbolicated(
    session: Session, tree: CallTree, folders: Sequence[PathLike]
) -> tuple[CallTree, tuple[str, ...]]:
    if not any(isinstance(frame, int) for path, _ in walk_paths(tree) for frame in path):
        return tree, ()
    from hawkwatch.formats.hawkeye import read_dyld_images
    from hawkwatch.formats.hawkeye_stacks import crash_images

    dyld = read_dyld_images(session.path)
    if dyld is None or not dyld.value.images:
        return tree, (f"{session.path}: no dyld-images, frames stay addresses",)
    try:
        from hawkwatch.symbols import Symbolicator, symbolic, symbolicate_roots

        symbolic()
    except HawkwatchError as exc:
        return tree, (f"frames stay addresses: {exc}",)
    arch = dyld.value.arch.split()[0] if dyld.value.arch else None
    symbolicator = Symbolicator(open_symbol_store(None, folders))
    roots = symbolicate_roots(tree.roots, crash_images(dyld.value), symbolicator, arch)
    return msgspec.structs.replace(tree, roots=roots), ()


def _same_key(key: str, wanted: str) -> bool:
    if key == wanted:
        return True
    try:
        return abs(float(key) - float(wanted)) < 0.005
    except ValueError:
        return False


def _count(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"
