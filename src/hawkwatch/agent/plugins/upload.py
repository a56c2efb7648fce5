"""The uploader: sends this session's records, and those of earlier sessions not sent yet, to a
collector (``upload.url`` + ``upload.key``; off when either is missing).

The session store is the offline queue: what the collector acknowledged is remembered in each
session folder (``upload.json``), so the sessions of a process that died are sent by the next
start. Sending runs on a thread of its own (``hawkwatch-upload``, a ``Scheduler``) because a slow
or unreachable collector must never hold up sampling; each attempt is bounded by a timeout and a
few retries with backoff, and a failure waits for the next round. Nothing is sent at exit (that
would delay it): the next start, ``hawkwatch run``'s supervisor or ``hawkwatch upload`` sends it.
"""

from __future__ import annotations

import logging
from typing import ClassVar

from hawkwatch.agent.monitor import AgentContext, DeferredFailure
from hawkwatch.agent.scheduler import Scheduler

log = logging.getLogger(__name__)


class UploadMonitor:
    name: ClassVar[str] = "upload"

    def __init__(self) -> None:
        self._ctx: AgentContext | None = None
        self._thread: Scheduler | None = None
        self._failure = DeferredFailure()
        self._warned = False

    def start(self, ctx: AgentContext) -> None:
        # imported here, on the thread that starts the agent: a lazy import on the upload
        # thread could leave a forked child waiting on the import lock
        from hawkwatch import uploader

        self._uploader = uploader
        self._ctx = ctx
        config = ctx.config.upload
        self._thread = Scheduler(self._on_error, name="hawkwatch-upload")
        self._thread.every(min(config.interval_s, 2.0), self._first_round, self._first_round)
        self._thread.every(config.interval_s, self.send, self)
        self._thread.start()
        ctx.every(1.0, self._failure.raise_if_failed, self)

    def _first_round(self) -> None:
        """Earlier sessions soon after start (once; then the periodic rounds)."""
        if self._thread is not None:
            self._thread.cancel(self._first_round)
        self.send()

    def send(self) -> int:
        """One round: every session under the root with records not yet acknowledged."""
        ctx = self._ctx
        if ctx is None:
            return 0
        config = ctx.config.upload
        sent = 0
        for session in self._uploader.pending_sessions(ctx.session.path.parent):
            try:
                self._uploader.upload_session(session, config.url or "", config.key or "",
                                              retries=config.retries)  # fmt: skip
            except self._uploader.UploadError as exc:
                if not self._warned:
                    log.warning("hawkwatch: upload to %s failed (will retry): %s", config.url, exc)
                    self._warned = True
                return sent
            sent += 1
        return sent

    def _on_error(self, owner: object, exc: BaseException) -> None:
        if isinstance(exc, Exception):
            self._failure.capture(exc)

    def stop(self) -> None:
        self._ctx = None
        if self._thread is not None:
            self._thread.stop()
            self._thread = None

    def after_fork_child(self) -> None:
        if self._thread is not None:
            self._thread.reset_after_fork()
        self._thread = None
        self._ctx = None
