"""The stall monitor's files in the session folder: faulthandler backstop and hang markers.

* ``stall-backstop.txt``: when C code holds the GIL, no Python thread runs, the watchdog
  included. ``faulthandler.dump_traceback_later`` runs a C thread that needs no GIL; armed for
  the threshold and re-armed by the watchdog's checks, it fires only when the watchdog could
  not run for a while, and then writes every thread's stack here. Re-arming is not free: it
  waits, holding the GIL, for the previous C thread to end (0.05–0.5 ms), so it is re-armed
  only once the last arming is older than ``timeout - 2 × interval``: it then fires after two
  to ``timeout / interval`` missed checks. Its timeout follows the most demanding loop watched
  (``stall_thresholds.Thresholds.backstop``): 0.2 s with an asyncio loop (re-armed on every
  check), 0.4 s with only GUI or heartbeat loops (re-armed every other check).
  The watchdog turns what it finds into a sample of the stall in progress and empties the
  file; what is left at stop becomes a stall record, what is left in a dead process's session
  becomes ``hang-kill`` at the next launch.
  ``dump_traceback_later`` is one per process, and the app's own (or pytest's
  ``faulthandler_timeout``) comes first: while the backstop runs, the module's
  ``dump_traceback_later`` and ``cancel_dump_traceback_later`` are wrapped to see the app's calls
  (``AppWatchdog``); while the app has a later-dump pending (until a second after it was
  due) the backstop steps aside, and it never cancels one it did not arm. A later-dump armed
  before the agent started cannot be seen: ``stall.backstop = false`` leaves faulthandler
  alone entirely.
* ``hang-<thread id>.json``: written when a stall passes the threshold, refreshed while it
  lasts, removed when it ends (KSCrash's hang sidecar). Found in the folder of a process that
  is gone, it means that process died during the hang.
* ``stall-watched.json``: which threads are watched loops, so a dump read at the next launch
  can name the loop thread.
"""

from __future__ import annotations

import faulthandler
import os
import stat
import threading
import time
from collections.abc import Callable

from hawkwatch._lazylog import lazy_logger
from hawkwatch.model.plain_records import json_text
from hawkwatch.store import Session, list_sessions
from hawkwatch.store._process import is_same_process_alive
from hawkwatch.store.files import path_join

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import IO, Any, Final

    from hawkwatch.model.records import HangKill
    from hawkwatch.model.stack import Stack

log = lazy_logger(__name__)

BACKSTOP_NAME: Final = "stall-backstop.txt"
WATCHED_NAME: Final = "stall-watched.json"
MARKER_PREFIX: Final = "hang-"
REPORTED_SUFFIX: Final = ".reported"
MAX_SESSIONS_LOOKED_AT: Final = 20
MAX_MARKERS_PER_SESSION: Final = 64
MAX_DUMP_BYTES: Final = 4 << 20
APP_DUMP_GRACE_S: Final = 1.0
"""How long after its due time the app's later-dump still counts as pending: faulthandler's
thread needs a core to fire it, and on a loaded host it gets one late; arming the backstop
meanwhile would cancel the app's dump before it fired."""


class AppWatchdog:
    """Sees the app's own ``faulthandler`` later-dumps, so the backstop can step aside.

    Installed by wrapping the module's two functions (the app and pytest call them through the
    module); ``uninstall`` puts the originals back unless someone replaced the wrappers since.
    One lock orders the app's calls with the backstop's arming, so neither undoes the other.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.lock = threading.Lock()
        self.until = 0.0  # monotonic end of the app's pending later-dump; inf when repeating
        self._clock = clock
        self._arm: Callable[..., None] = faulthandler.dump_traceback_later
        self._cancel: Callable[[], None] = faulthandler.cancel_dump_traceback_later
        self._arm_wrapper: Callable[..., None] | None = None
        self._cancel_wrapper: Callable[[], None] | None = None

    def install(self) -> None:
        original_arm, original_cancel = self._arm, self._cancel

        def dump_traceback_later(timeout: float, repeat: bool = False, *a: Any, **k: Any) -> None:
            with self.lock:
                original_arm(timeout, repeat, *a, **k)
                due = self._clock() + float(timeout) + APP_DUMP_GRACE_S
                self.until = float("inf") if repeat else due

        def cancel_dump_traceback_later() -> None:
            with self.lock:
                original_cancel()
                self.until = 0.0

        dump_traceback_later.__doc__ = original_arm.__doc__
        cancel_dump_traceback_later.__doc__ = original_cancel.__doc__
        self._arm_wrapper, self._cancel_wrapper = dump_traceback_later, cancel_dump_traceback_later
        faulthandler.dump_traceback_later = dump_traceback_later
        faulthandler.cancel_dump_traceback_later = cancel_dump_traceback_later

    def uninstall(self) -> None:
        if faulthandler.dump_traceback_later is self._arm_wrapper:
            faulthandler.dump_traceback_later = self._arm
        if faulthandler.cancel_dump_traceback_later is self._cancel_wrapper:
            faulthandler.cancel_dump_traceback_later = self._cancel

    def app_pending(self) -> bool:
        """True while the app's own later-dump may still fire (call with ``lock`` held)."""
        return self._clock() < self.until

    def arm(self, timeout: float, file: IO[bytes]) -> bool:
        """Arm the backstop's later-dump unless the app has one pending; True when armed."""
        with self.lock:
            if self.app_pending():
                return False
            self._arm(timeout, repeat=False, file=file)
            return True

    def cancel(self) -> None:
        """Cancel the backstop's later-dump, never the app's."""
        with self.lock:
            if not self.app_pending():
                self._cancel()

    def forget_after_fork(self) -> None:
        """In a forked child: another thread may have held the lock; the wrappers go."""
        self.lock = threading.Lock()
        self.uninstall()


class Backstop:
    """The faulthandler later-dump, armed into the session's ``stall-backstop.txt``."""

    def __init__(self, session: Session, timeout: float, rearm_every: float) -> None:
        self.path = path_join(session.folder, BACKSTOP_NAME)
        self.timeout = timeout
        """The timeout it was last armed with (``retune`` only asks for the next one)."""
        self._wanted = (timeout, rearm_every)
        self._armed_at = 0.0
        self._file: IO[bytes] | None = open(self.path, "ab+")  # noqa: SIM115 - held for the session
        self.armed_wall = 0.0
        self.armed = False
        self.app = AppWatchdog()
        self.app.install()

    def retune(self, timeout: float, rearm_every: float) -> None:
        """Another timeout (the loops watched changed): the next ``arm`` applies it at once."""
        if (timeout, rearm_every) != self._wanted:
            self._wanted = (timeout, rearm_every)
            self._armed_at = float("-inf")

    def arm(self, now: float) -> None:
        """Arm (or re-arm) unless it was armed less than ``rearm_every`` ago (``now``: perf)."""
        timeout, rearm_every = self._wanted
        if self._file is None or (self.armed and now - self._armed_at < rearm_every):
            return
        if not self.app.arm(timeout, self._file):
            self.armed = False  # the app's own watchdog is pending: step aside
            return
        self.timeout = timeout
        self.armed_wall = time.time()
        self._armed_at = now
        self.armed = True

    def cancel(self) -> None:
        if self.armed:
            self.app.cancel()
            self.armed = False

    def take(self) -> tuple[float, dict[int, Stack]] | None:
        """What faulthandler wrote since the last call (when, stacks by thread), file emptied."""
        f = self._file
        if f is None or os.fstat(f.fileno()).st_size == 0:
            return None
        f.seek(0)
        text = f.read().decode("utf-8", "replace")
        f.truncate(0)
        self.armed = False  # it fired: the next check arms it again
        from hawkwatch.analysis.stall import parse_faulthandler

        return self.armed_wall + self.timeout, parse_faulthandler(text)

    def close(self, *, remove_if_empty: bool) -> None:
        self.cancel()
        self.app.uninstall()
        f, self._file = self._file, None
        if f is None:
            return
        try:
            empty = os.fstat(f.fileno()).st_size == 0
        finally:
            f.close()
        if empty and remove_if_empty:
            try:
                os.unlink(self.path)
            except OSError:
                pass

    def forget_after_fork(self) -> None:
        """In a forked child: the parent's faulthandler thread does not exist here."""
        self._file = None
        self.armed = False
        self.app.forget_after_fork()


def write_json_atomically(path: str, value: Any) -> None:
    """``json.dumps(value, separators=(",", ":"))`` into ``path``, renamed into place."""
    text = json_text(value)  # no json import: written from the watchdog and at start
    temporary = path + ".tmp"
    with open(temporary, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(temporary, path)


def marker_path(session: Session, thread_id: int) -> str:
    return path_join(session.folder, f"{MARKER_PREFIX}{thread_id}.json")


def write_marker(path: str, info: dict[str, Any], stack: Stack) -> None:
    from hawkwatch.model.records.stall import frames_of  # at a stall: on the watchdog thread

    write_json_atomically(path, {**info, "stack": frames_of(stack)})


def write_watched(session: Session, watched: dict[int, dict[str, str]]) -> None:
    write_json_atomically(
        path_join(session.folder, WATCHED_NAME), {str(k): v for k, v in watched.items()}
    )


def hang_kills(current: Session) -> list[HangKill]:
    """``hang-kill`` values for earlier sessions of dead processes that died during a stall.

    Each marker (and leftover backstop dump) is claimed by renaming it, so two processes
    starting together report it once, and a later launch does not report it again.
    """
    found: list[HangKill] = []
    earlier = [s for s in list_sessions(os.path.dirname(current.folder)) if s.name < current.name]
    for session in reversed(earlier[-MAX_SESSIONS_LOOKED_AT:]):
        try:
            found.extend(_hang_kills_of(session))
        except Exception as exc:  # reading the past must never disable the present
            log.warning(
                "hawkwatch: skipped damaged session %s: %s: %s",
                session.name,
                type(exc).__name__,
                str(exc)[:200],
            )
    return found


def _hang_kills_of(session: Session) -> list[HangKill]:
    found: list[HangKill] = []
    markers = sorted(_markers(session.folder))[:MAX_MARKERS_PER_SESSION]
    backstop = path_join(session.folder, BACKSTOP_NAME)
    has_dump = _non_empty(backstop)
    if not markers and not has_dump:
        return found
    if _still_running(session):
        return found
    from pathlib import Path  # with the typed model: only when an earlier run left a hang

    from hawkwatch.agent.plugins.stall_hang_kills import claim_hang_kills

    found_markers = [Path(marker) for marker in markers]
    return claim_hang_kills(session, found_markers, Path(backstop) if has_dump else None)


def _markers(folder: str) -> list[str]:
    """Hang markers that are regular files (a FIFO or folder by that name is not one)."""
    found: list[str] = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                name = entry.name
                is_marker = name.startswith(MARKER_PREFIX) and name.endswith(".json")
                if is_marker and entry.is_file(follow_symlinks=False):
                    found.append(entry.path)
    except OSError:
        return []
    return found


def _still_running(session: Session) -> bool:
    metadata = session.metadata
    pid, started = metadata.get("pid"), metadata.get("start_time")
    if not isinstance(pid, int) or not isinstance(started, int | float):
        return False
    return is_same_process_alive(pid, float(started))


def _non_empty(path: str) -> bool:
    """A regular file with something in it (a FIFO or device is never read)."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_size > 0
