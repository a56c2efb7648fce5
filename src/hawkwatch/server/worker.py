"""The pipeline worker loop: ``hawkwatch server worker``, or a thread inside ``server run``.

Between jobs it runs the retention pass (``retention.prune``) at start and every
``prune_every_s``; on PostgreSQL an advisory lock lets one worker of many do it at a time.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

from sqlalchemy import Engine

from hawkwatch.server.alerts import AlertSettings
from hawkwatch.server.pipeline import run_once
from hawkwatch.server.retention import Retention, prune

log = logging.getLogger("hawkwatch.server")

PRUNE_EVERY_S = 3600.0


def work(
    engine: Engine, stop: threading.Event, *, idle_s: float = 0.5,
    symbols_root: Path | None = None, retention: Retention | None = None,
    prune_every_s: float = PRUNE_EVERY_S, alerts: AlertSettings | None = None,
) -> None:  # fmt: skip
    """Run jobs until ``stop`` is set; sleep ``idle_s`` when there is none. With ``alerts``, the
    alert loop (thresholds, digests, deliveries) runs beside it on its own thread."""
    if alerts is not None:
        from hawkwatch.server.alerts import runner

        runner.start_thread(engine, alerts, stop)
    next_prune = time.monotonic()
    while not stop.is_set():
        if retention is not None and time.monotonic() >= next_prune:
            next_prune = time.monotonic() + prune_every_s
            try:
                log.info("hawkwatch server: retention %s", prune(engine, retention).as_dict())
            except Exception:  # the database went away: the next pass tries again
                log.exception("hawkwatch server: the retention pass failed")
        try:
            if run_once(engine, symbols_root):
                continue
        except Exception:  # the database went away: wait and try again
            log.exception("hawkwatch server: the worker could not claim a job")
        stop.wait(idle_s)


def start_thread(engine: Engine, symbols_root: Path | None = None,
                 retention: Retention | None = None,
                 alerts: AlertSettings | None = None) -> threading.Event:  # fmt: skip
    """A worker on a daemon thread; set the returned event to stop it."""
    stop = threading.Event()
    threading.Thread(
        target=work, args=(engine, stop),
        kwargs={"symbols_root": symbols_root, "retention": retention, "alerts": alerts},
        name="hawkwatch-worker", daemon=True,
    ).start()  # fmt: skip
    return stop
