"""The stall point stack (Matrix), its fingerprint and title frame, and duration percentiles.

Pure functions on ``model.stack`` stacks, shared by the agent (which picks the point stack when
a stall ends) and by the report (which groups stalls by it). Standard library only.

Matrix's rule (``../shared/design/detectors.md`` §1.2): among the samples taken while the loop
was stalled, the point stack is the one whose innermost frame stayed the same for the most
consecutive samples, the most recent on ties; each of its frames gets a repeat count, the number
of samples that hold that frame anywhere. Matrix compares instruction addresses; a Python
"same innermost frame" is the same function in the same file (the line moves inside a loop that
spins, and a loop that spins *is* the blocking frame).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import NamedTuple

from hawkwatch.model.stack import PyFrame, Stack

FINGERPRINT_FRAMES = 32
"""Frames (innermost first) that make a point stack's fingerprint; deeper callers don't split."""


class Sample(NamedTuple):
    """One or more identical consecutive samples of the stalled thread."""

    time: float
    stack: Stack
    captured: int = 1


class PointStack(NamedTuple):
    """The chosen sample (its position in the samples given), and a repeat count per frame."""

    position: int
    stack: Stack
    repeats: tuple[int, ...]
    run: int
    """Consecutive samples with the same innermost function, ending at the chosen one."""


def _top(stack: Stack) -> tuple[str, str] | None:
    return (stack[0].func, stack[0].file) if stack else None


def point_stack(samples: Sequence[Sample]) -> PointStack | None:
    """Matrix's point stack over ``samples`` (oldest first); None when no sample has a frame.

    The longest run of samples with one innermost function wins (the latest run on a tie).
    Within it, the stack seen most often is chosen (its latest sample; the earliest-seen stack
    on a tie), not simply the run's last sample: a loop blocked in ``time.sleep(1.0)`` at line
    n is sampled there many times and perhaps once at line n + 1 as it wakes; line n blocked it.
    """
    best: tuple[int, int] | None = None  # (run, index)
    run = 0
    previous: tuple[str, str] | None = None
    seen: dict[Stack, list[int]] = {}  # in the current run: stack -> [count, first, last index]
    for index, sample in enumerate(samples):
        top = _top(sample.stack)
        if top is None:
            run, previous = 0, None
            continue
        if top == previous:
            run += sample.captured
        else:
            run, seen = sample.captured, {}
        previous = top
        entry = seen.setdefault(sample.stack, [0, index, index])
        entry[0] += sample.captured
        entry[2] = index
        if best is None or run >= best[0]:
            _count, _first, last = max(seen.values(), key=lambda e: (e[0], -e[1]))
            best = (run, last)
    if best is None:
        return None
    run, index = best
    chosen = samples[index].stack
    repeats = tuple(sum(s.captured for s in samples if frame in s.stack) for frame in chosen)
    return PointStack(index, chosen, repeats, run)


def fingerprint(stack: Sequence[PyFrame]) -> str:
    """A short stable id of a stack: function and file of each frame, line numbers left out.

    Lines are left out so that one blocking function groups together wherever in its body the
    samples caught it, and a file edited between releases keeps its groups.
    """
    import hashlib  # when a stall is recorded, not when the agent starts (OpenSSL: ~2 ms)

    digest = hashlib.sha1(usedforsecurity=False)
    for frame in stack[:FINGERPRINT_FRAMES]:
        digest.update(f"{frame.func}\0{frame.file}\n".encode("utf-8", "replace"))
    return digest.hexdigest()[:16]


def title_index(stack: Sequence[PyFrame], is_library: Callable[[str], bool]) -> int:
    """The blocking frame: the first frame whose file is not library code, else frame 0.

    MTHawkeye's "title frame" (first frame outside the system libraries): ``time.sleep`` is C,
    ``re.match`` is library Python; the frame that called them is the one a reader can fix.
    """
    for index, frame in enumerate(stack):
        if not is_library(frame.file):
            return index
    return 0


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values`` by linear interpolation; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    position = (len(ordered) - 1) * min(max(q, 0.0), 1.0)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


# Compiled at the first dump read (``re``'s cache keeps them), not when the agent's stall
# monitor imports this module at every start.
_THREAD_LINE = r"^(?:Current thread|Thread) (0x[0-9a-fA-F]+)"
_FRAME_LINE = r'^  File "(.*)", line (\d+) in (.*)$'


def parse_faulthandler(text: str) -> dict[int, Stack]:
    """Thread stacks (innermost first) from ``faulthandler``'s text, by thread ident.

    The text is what ``faulthandler.dump_traceback_later`` writes: a ``Timeout (...)!`` line,
    then per thread ``Thread 0x<ident> (most recent call first):`` and ``  File "f", line n in
    name`` lines. faulthandler gives ``co_name``, not the qualified name. Unreadable lines are
    skipped; a truncated dump gives what it holds.
    """
    stacks: dict[int, list[PyFrame]] = {}
    current: list[PyFrame] | None = None
    thread_line, frame_line = re.compile(_THREAD_LINE), re.compile(_FRAME_LINE)
    for line in text.splitlines():
        thread = thread_line.match(line)
        if thread is not None:
            current = stacks.setdefault(int(thread.group(1), 16), [])
            continue
        frame = frame_line.match(line)
        if frame is not None and current is not None:
            current.append(PyFrame(frame.group(3), frame.group(1), int(frame.group(2)), ""))
    return {ident: tuple(frames) for ident, frames in stacks.items()}
