"""The worker's alert loop: thresholds every minute, digests of ended windows, due deliveries.

Runs on its own thread beside the pipeline loop, so a slow or dead receiver never holds up
uploads. Any number of workers may run it: windows and deliveries are claimed in the database.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from sqlalchemy import Engine

from hawkwatch.server.alerts.deliver import AlertSettings, deliver_due
from hawkwatch.server.alerts.trigger import evaluate_thresholds, queue_digests

log = logging.getLogger("hawkwatch.server")

THRESHOLD_EVERY_S = 60.0


class Runner:
    def __init__(self, engine: Engine, settings: AlertSettings,
                 clock: Callable[[], float] = time.time) -> None:  # fmt: skip
        self.engine, self.settings, self.clock = engine, settings, clock
        self._thresholds_at: float | None = None

    def tick(self) -> int:
        """One round; returns how many deliveries were attempted."""
        now = self.clock()
        if self._thresholds_at is None or now - self._thresholds_at >= THRESHOLD_EVERY_S:
            self._thresholds_at = now
            evaluate_thresholds(self.engine, now)
        queue_digests(self.engine, now)
        return deliver_due(self.engine, self.settings, now)

    def run(self, stop: threading.Event, idle_s: float = 1.0) -> None:
        while not stop.is_set():
            try:
                if self.tick():
                    continue
            except Exception:  # the database went away: wait and try again
                log.exception("hawkwatch server: the alert loop failed")
            stop.wait(idle_s)


def start_thread(engine: Engine, settings: AlertSettings, stop: threading.Event) -> None:
    threading.Thread(target=Runner(engine, settings).run, args=(stop,),
                     name="hawkwatch-alerts", daemon=True).start()  # fmt: skip
