"""The store's one background thread: flushes appenders and writes queued records.

Every request goes through a ``queue.SimpleQueue``, whose ``put`` never blocks and may be called
from ``gc`` callbacks, finalizers and signal handlers. The thread starts on first use, wakes at
least every 15 minutes to flush every open appender (MTAppenderFile's timer).

This module registers no process hooks of its own: the agent's runtime calls ``before_fork``,
``after_fork_in_parent``, ``after_fork_in_child`` and ``flush_all_at_exit``. So that a child forked
without those hooks (``libc.fork()``, or no agent running) never writes the parent's queued
records a second time, the worker notices a changed pid on its next use and starts afresh, with
the parent's appenders detached.
"""

from __future__ import annotations

import os
import threading
from _weakrefset import WeakSet  # weakref.WeakSet itself, without the rest of weakref
from collections.abc import Callable

from hawkwatch._lazylog import lazy_logger

try:  # queue.SimpleQueue and queue.Empty themselves, without the rest of queue
    from _queue import Empty, SimpleQueue
except ImportError:  # pragma: no cover - other Pythons
    from queue import Empty, SimpleQueue

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Final

    from hawkwatch.store.appender import AppenderFile

log = lazy_logger(__name__)

FLUSH_INTERVAL_S: Final = 15 * 60.0
DRAIN_TIMEOUT_S: Final = 5.0
FORK_JOIN_TIMEOUT_S: Final = 1.0

# A request: (action, appender, payload).
_Request = tuple[str, "AppenderFile | None", object]


class _Worker:
    def __init__(self) -> None:
        self.queue: SimpleQueue[_Request] = SimpleQueue()
        self.appenders: WeakSet[AppenderFile] = WeakSet()
        self.thread: threading.Thread | None = None
        self.start_lock = threading.Lock()
        self.stopping = False
        self.shut_out = False  # the interpreter is finalizing: no thread can start any more
        self.pid = os.getpid()

    def ensure_running(self) -> None:
        if self.pid != os.getpid():
            after_fork_in_child()
            _state.ensure_running()
            return
        thread = self.thread
        if thread is not None and thread.is_alive():
            return
        # Never wait for the lock: whoever holds it is starting the thread already. The holder
        # may even be this thread, re-entered from a gc callback that writes a record (a gc can
        # run inside ``is_alive`` below): waiting would deadlock it (seen on 3.12).
        if not self.start_lock.acquire(blocking=False):
            return
        try:
            thread = self.thread
            if (thread is not None and thread.is_alive()) or self.stopping:
                return  # running, or paused for a fork (restarted right after it)
            previous, self.thread = thread, threading.Thread(
                target=self._run, name="hawkwatch-store", daemon=True
            )
            try:
                self.thread.start()
            except RuntimeError:  # "can't create new thread at interpreter shutdown" (3.12+)
                self.thread = previous
                self.shut_out = True
        finally:
            self.start_lock.release()

    def work_inline(self) -> None:
        """At interpreter shutdown, where 3.12+ starts no thread: do the queued work here.

        Never waits for an appender that an outer frame of this thread may hold (a ``gc``
        callback or finalizer writing at exit): such a line stays queued for the next call.
        Flush requests are dropped: a full buffer flushes itself, ``flush_all_at_exit`` flushes
        the rest, and the buffer is a file that outlives the process anyway.
        """
        kept: list[_Request] = []
        while True:
            try:
                request = self.queue.get_nowait()
            except Empty:
                break
            action, appender, payload = request
            if action == "append" and appender is not None and isinstance(payload, bytes):
                try:
                    if not appender.try_append_encoded(payload):
                        kept.append(request)
                except Exception:
                    log.exception("hawkwatch store: a write at exit failed")
            elif action == "drain" and isinstance(payload, threading.Event):
                payload.set()
        for request in kept:
            self.queue.put(request)

    def stop_for_fork(self) -> None:
        """Stop the thread before ``fork()``, leaving queued work for after the fork.

        ``stopping`` stays set until ``resume_after_fork``, so no other thread restarts it in
        between. A thread stuck in a slow write is waited for only briefly.
        """
        self.stopping = True
        thread = self.thread
        if thread is not None and thread.is_alive():
            self.queue.put(("wake", None, None))
            thread.join(FORK_JOIN_TIMEOUT_S)

    def resume_after_fork(self) -> None:
        self.stopping = False
        if self.thread is not None:  # it had been started: work may be waiting
            self.ensure_running()

    def _run(self) -> None:
        while True:
            if self.stopping:
                return
            try:
                action, appender, payload = self.queue.get(timeout=FLUSH_INTERVAL_S)
            except Empty:
                for each in list(self.appenders):
                    _guarded(each.flush)
                continue
            if action == "append" and appender is not None:
                _guarded(appender.append_encoded, payload)
            elif action == "flush" and appender is not None:
                _guarded(appender.flush_if_due)
            elif action == "drain" and isinstance(payload, threading.Event):
                payload.set()


def _guarded(call: Callable[..., object], *args: object) -> None:
    try:
        call(*args)
    except Exception:  # the store's own firewall: a failed write must not kill the thread
        log.exception("hawkwatch store: background write failed")


_state = _Worker()
_held_locks: set[int] = set()  # writer-lock descriptors of this process (closed in a fork child)


def hold_lock(fd: int | None) -> int | None:
    if fd is not None:
        _held_locks.add(fd)
    return fd


def release_lock(fd: int | None) -> None:
    if fd is not None and fd in _held_locks:
        _held_locks.discard(fd)
        try:
            os.close(fd)
        except OSError:
            log.debug("hawkwatch store: closing a lock failed", exc_info=True)


def register(appender: AppenderFile) -> None:
    """Track an open appender for the periodic flush."""
    _state.appenders.add(appender)


def unregister(appender: AppenderFile) -> None:
    _state.appenders.discard(appender)


def request_flush(appender: AppenderFile) -> None:
    """Ask the background thread to flush ``appender``; never blocks."""
    _state.ensure_running()
    if not _state.shut_out:
        _state.queue.put(("flush", appender, None))


def submit_append(appender: AppenderFile, data: bytes) -> None:
    """Queue an encoded line for ``appender``; never blocks, safe from callbacks."""
    _state.ensure_running()
    _state.queue.put(("append", appender, data))
    if _state.shut_out:
        _state.work_inline()


def drain(timeout_s: float = DRAIN_TIMEOUT_S) -> bool:
    """Wait until everything queued before this call has been written. False on timeout."""
    if _state.pid != os.getpid():
        after_fork_in_child()
    if _state.shut_out:
        _state.work_inline()
        return _state.queue.empty()
    if _state.thread is None:
        return True  # nothing was ever queued
    if threading.current_thread() is _state.thread:
        return False
    _state.ensure_running()
    done = threading.Event()
    _state.queue.put(("drain", None, done))
    return done.wait(timeout_s)


def flush_all_at_exit() -> None:
    """At exit: write what is queued and flush every open appender of this process."""
    if _state.pid != os.getpid():
        return  # a child forked without hooks: the queue and appenders are the parent's
    drain()
    for appender in list(_state.appenders):
        _guarded(appender.flush)


def before_fork() -> None:
    _state.stop_for_fork()


def after_fork_in_parent() -> None:
    _state.resume_after_fork()


def after_fork_in_child() -> None:
    """Start afresh: the parent's queue and appenders are never written from here."""
    global _state
    inherited = list(_state.appenders)
    _state = _Worker()
    for appender in inherited:
        appender._detach_after_fork()
    for fd in list(_held_locks):  # the child's copies: the parent's lock stays held
        release_lock(fd)
