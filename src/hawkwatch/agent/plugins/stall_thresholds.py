"""Each kind of loop's stall threshold and ping interval, and the one backstop they share.

A stall is as long as its users feel it: an asyncio loop blocked for 100 ms delays every request
in flight by 100 ms (asyncio's own ``slow_callback_duration``), so asyncio loops (uvloop too)
have ``stall.asyncio_threshold_s``; a GUI loop (Qt, Tk) or a ``heartbeat()`` loop keeps
MTHawkeye's 400 ms, ``stall.threshold_s``.

Every loop is pinged (or beats) every ``stall.interval_s``: a GUI loop at most every half its
threshold, as before; an asyncio loop at most every threshold, not half of it. Pinging asyncio
loops every 50 ms would double the monitor's idle cost only to sharpen the estimate of spells
near 100 ms. The price is a coarse bound: with pings a whole threshold apart, "the loop may have
been quiet for the threshold" holds for spells of half of it, so there the *estimate* itself
must reach the threshold (``needed``), not half of it.
"""

from __future__ import annotations

from collections.abc import Iterable

from hawkwatch.config import StallConfig

ASYNCIO = "asyncio"


class Thresholds:
    """Thresholds and ping intervals by kind of loop (``Target.kind``), in seconds.

    ``others``: Qt, Tk and ``heartbeat()`` loops (``stall.threshold_s``); ``asyncio``:
    asyncio loops (``stall.asyncio_threshold_s``).
    """

    __slots__ = ("asyncio", "interval_s", "others")

    def __init__(self, others: float, asyncio: float, interval_s: float) -> None:
        self.others = others
        self.asyncio = asyncio
        self.interval_s = interval_s

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Thresholds):
            return NotImplemented
        return (self.others, self.asyncio, self.interval_s) == (
            other.others,
            other.asyncio,
            other.interval_s,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Thresholds({self.others!r}, {self.asyncio!r}, {self.interval_s!r})"

    @classmethod
    def of(cls, config: StallConfig) -> Thresholds:
        return cls(config.threshold_s, config.asyncio_threshold_s, config.interval_s)

    def threshold(self, kind: str) -> float:
        return self.asyncio if kind == ASYNCIO else self.others

    def interval(self, kind: str) -> float:
        if kind == ASYNCIO:
            return min(self.interval_s, self.asyncio)
        return min(self.interval_s, self.others / 2)

    def needed(self, kind: str) -> float:
        """How long a spell's estimate must be: half the threshold when pings are at most half
        a threshold apart (the estimate is off by up to half an interval), else all of it."""
        threshold = self.threshold(kind)
        return threshold / 2 if self.interval(kind) <= threshold / 2 else threshold

    def fastest(self) -> float:
        """The watchdog's pace at its fastest, whichever loops turn up."""
        return min(self.interval(ASYNCIO), self.interval(""))

    def pace(self, kinds: Iterable[str]) -> float:
        """The watchdog's pace while these loops are watched: that of the most demanding."""
        return min((self.interval(kind) for kind in kinds), default=self.fastest())

    def backstop(self, kinds: Iterable[str]) -> tuple[float, float]:
        """(timeout, re-arm every) of the faulthandler backstop while these loops are watched.

        ``dump_traceback_later`` is one per process, but a thread that holds the GIL stops the
        watchdog for every loop at once, so one later-dump serves them all: it is tuned to the
        most demanding loop watched right now (the lowest threshold), so that a GIL-holding
        stall of an asyncio loop has its stack too, and a process with only GUI or heartbeat
        loops keeps the 400 ms backstop and its cheaper re-arming. Each loop still judges a
        dump by its own threshold: a dump is only a sample of a spell that is a stall anyway.
        The timeout is at least two paces, and re-arming waits until at most two paces before
        it would fire: it fires only after two missed checks, never for a watchdog a little
        late (re-arming holds the GIL for 0.05–0.5 ms, so it is not done more than needed).
        """
        kinds = list(kinds)
        pace = self.pace(kinds)
        lowest = min((self.threshold(kind) for kind in kinds), default=self.others)
        timeout = max(lowest, 2 * pace)
        return timeout, max(0.0, timeout - 2 * pace)
