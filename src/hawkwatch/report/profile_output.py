"""A profile's JSON (``hawkwatch-profile``: the call tree as MTHawkeye-style nodes) and
``ProfileListing`` (``hawkwatch profile --list``) as text and JSON (``hawkwatch-profile-list``)."""

from __future__ import annotations

from typing import Any, Final, TextIO

import msgspec

from hawkwatch.api.profile import ProfileListing
from hawkwatch.model.profile import CallTree
from hawkwatch.model.records.cpu import tree_nodes
from hawkwatch.report._json import document

FORMAT: Final = "hawkwatch-profile"
LIST_FORMAT: Final = "hawkwatch-profile-list"
FORMAT_VERSION: Final = 1


def tree_to_json(tree: CallTree) -> dict[str, Any]:
    """Outermost frames at the roots; ``proportion`` = count / total samples."""
    return document(
        FORMAT,
        FORMAT_VERSION,
        {
            "name": tree.name,
            "mode": tree.mode,
            "total": tree.total,
            "interval_s": tree.interval_s,
            "start_time": tree.start_time,
            "duration_s": tree.duration_s,
            "roots": msgspec.to_builtins(tree_nodes(tree.roots)),
        },
    )


def render_text(result: ProfileListing, file: TextIO) -> None:
    """One line per episode (key, lasting, CPU %, samples), then per profiler window."""
    for episode in result.episodes:
        file.write(
            f"episode {episode.key}\t{episode.lasting_s:.1f} s\t"
            f"{episode.average_percent:.1f} %\t{sum(r.count for r in episode.roots)} samples\n"
        )
    for window in result.windows:
        file.write(
            f"window {window.start_time:.6f}\t{window.duration_s:.1f} s\t"
            f"{window.samples} samples\t{window.rate_hz:.1f} Hz\t{window.sampler}\n"
        )


def listing_to_json(result: ProfileListing) -> dict[str, Any]:
    return document(
        LIST_FORMAT,
        FORMAT_VERSION,
        {
            "session": result.session,
            "episodes": [
                {
                    "key": episode.key,
                    "start_time": episode.start_time,
                    "lasting_s": episode.lasting_s,
                    "average_percent": episode.average_percent,
                    "samples": sum(root.count for root in episode.roots),
                }
                for episode in result.episodes
            ],
            "windows": [
                {
                    "start_time": window.start_time,
                    "duration_s": window.duration_s,
                    "samples": window.samples,
                    "rate_hz": window.rate_hz,
                    "sampler": window.sampler,
                }
                for window in result.windows
            ],
        },
    )
