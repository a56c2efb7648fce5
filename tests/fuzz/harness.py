"""Run one call under a hang watchdog and a memory probe, and classify what happened.

``ok``: returned. ``rejected``: a ``HawkwatchError`` (the clear one-line error the CLI prints).
``internal``: any other exception - a bug. ``hang``: still running after ``HANG_S`` (a blocked
open of a FIFO, an endless loop); the watchdog is a SIGALRM, so even a blocked system call ends.
"""

from __future__ import annotations

import contextlib
import io
import signal
import tracemalloc
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import FrameType

from hawkwatch.errors import HawkwatchError

HANG_S = 30.0
"""Far beyond any input here (milliseconds each): only a real hang gets near it."""


SUMMARY: list[str] = []
"""One line per corpus run, printed at the end of the test session (``conftest.py``)."""


class Hang(Exception):
    pass


@dataclass
class Tally:
    """Outcomes by kind, the failures with their input, the largest memory peak seen."""

    counts: Counter[str] = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    peak_bytes: int = 0
    peak_input: str = ""

    def line(self, title: str) -> str:
        parts = ", ".join(f"{k} {v:,}" for k, v in sorted(self.counts.items()))
        return (
            f"{title}: {sum(self.counts.values()):,} runs ({parts}); "
            f"largest memory peak {self.peak_bytes / 2**20:.1f} MiB ({self.peak_input})"
        )


@contextlib.contextmanager
def watchdog(seconds: float = HANG_S) -> Iterator[None]:
    def expired(_signum: int, _frame: FrameType | None) -> None:
        raise Hang(f"still running after {seconds:.0f} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_one(tally: Tally, label: str, call: Callable[[], object], *, measure: bool) -> object:
    """Call and classify; with ``measure``, the call's peak traced memory is noted."""
    if measure:
        tracemalloc.start()
    try:
        with watchdog():
            result = call()
        tally.counts["ok"] += 1
        return result
    except Hang as exc:
        tally.counts["hang"] += 1
        tally.failures.append(f"HANG {label}: {exc}")
    except HawkwatchError:
        tally.counts["rejected"] += 1
    except Exception as exc:  # the point: anything else is an internal error
        tally.counts["internal"] += 1
        tally.failures.append(f"INTERNAL {label}: {type(exc).__name__}: {str(exc)[:200]}")
    finally:
        if measure:
            _current, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            if peak > tally.peak_bytes:
                tally.peak_bytes, tally.peak_input = peak, label
    return None


def cli(args: list[str]) -> int:
    """``hawkwatch --debug ARGS`` in this process, output discarded; internal errors raise."""
    from hawkwatch.cli import main

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return main(["--debug", *args])
