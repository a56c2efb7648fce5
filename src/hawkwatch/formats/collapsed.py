"""The folded-stacks text format (Brendan Gregg's ``stackcollapse`` output, read by
``flamegraph.pl``, inferno and speedscope): one line per distinct stack,
``frame;frame;…;frame count``, outermost frame first.

Frames are written as ``func (file:line)``, ``0x…`` or ``thread NAME``; a ``;`` or line break
inside a frame would split it, so those become ``:`` and a space.
"""

from __future__ import annotations

from typing import Final, TextIO

from hawkwatch.model.profile import CallTree, frame_label, walk_paths

output_file_extension: Final = "txt"
output_is_binary: Final = False
_CLEAN: Final = str.maketrans({";": ":", "\n": " ", "\r": " "})


def render(tree: CallTree, file: TextIO) -> None:
    """One line per stack that has samples of its own, in tree order."""
    for path, count in walk_paths(tree):
        file.write(";".join(frame_label(frame).translate(_CLEAN) for frame in path))
        file.write(f" {count}\n")


def parse(text: str) -> list[tuple[list[str], int]]:
    """Lines back to ``(frames outermost first, count)``; malformed lines raise ``ValueError``."""
    stacks: list[tuple[list[str], int]] = []
    for number, line in enumerate(text.split("\n"), start=1):  # LF only: frames may hold \f
        if not line.strip():
            continue
        frames, sep, count = line.rpartition(" ")
        if not sep or not count.isdigit() or not frames:
            raise ValueError(f"line {number}: expected 'frame;…;frame count'")
        stacks.append((frames.split(";"), int(count)))
    return stacks
