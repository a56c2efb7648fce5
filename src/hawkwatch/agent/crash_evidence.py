"""Evidence about how a process will end, gathered while it runs, read after it is gone.

At start the agent writes ``exit-evidence.json`` in its session folder: the boot id and the
memory cgroup's ``oom_kill`` counter (cgroup v2 ``memory.events``, v1 ``memory.oom_control``)
with the cgroup's folder, so whoever classifies the exit later can read the counter again and
see whether it grew. ``os._exit`` writes ``exit-intent.json``; the memory level is kept in
``memory-level.json``. Each file is written whole and renamed into place: readable after a
kill at any moment.

Paths are ``str`` and JSON is written by ``plain_records.json_text``: the start and the
``os._exit`` hook import neither ``pathlib`` nor ``json`` (``read_json`` imports ``json``: a
reader of earlier sessions, off the start).
"""

from __future__ import annotations

import errno
import os
import threading

from hawkwatch.agent import cgroups
from hawkwatch.agent.exit_files import (
    CLASSIFIED_NAME,
    EVIDENCE_NAME,
    FAULT_NAME,
    INTENT_NAME,
    MAX_SESSIONS_LOOKED_AT,
)
from hawkwatch.model.plain_records import json_text
from hawkwatch.store.files import path_join, path_text

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any, Final

    from hawkwatch.store import Session

__all__ = [
    "CLASSIFIED_NAME",
    "EVIDENCE_NAME",
    "FAULT_NAME",
    "INTENT_NAME",
    "MAX_SESSIONS_LOOKED_AT",
]

LEVEL_NAME: Final = "memory-level.json"
BOOT_ID: Final = "/proc/sys/kernel/random/boot_id"
_KMSG_MAX_RECORDS: Final = 20_000


def gone_unclassified(root: str | os.PathLike[str], before_name: str) -> list[Session]:
    """Sessions before ``before_name`` (newest first, the last ``MAX_SESSIONS_LOOKED_AT``)
    with exit evidence, not yet classified, whose process is gone: ``crash_recovery``'s work,
    found without loading it (and the typed model) when there is none."""
    from hawkwatch.store import list_sessions
    from hawkwatch.store._process import is_same_process_alive

    found = []
    earlier = [s for s in list_sessions(root) if s.name < before_name]
    for session in reversed(earlier[-MAX_SESSIONS_LOOKED_AT:]):
        folder = session.folder
        if os.path.exists(path_join(folder, CLASSIFIED_NAME)) or not os.path.exists(
            path_join(folder, EVIDENCE_NAME)
        ):
            continue
        metadata = session.metadata
        pid, started = metadata.get("pid"), metadata.get("start_time")
        if (
            isinstance(pid, int)
            and isinstance(started, int | float)
            and is_same_process_alive(pid, float(started))
        ):
            continue
        found.append(session)
    return found


def boot_id(path: str | os.PathLike[str] = BOOT_ID) -> str | None:
    try:
        return cgroups.read_text(path).strip() or None
    except OSError:
        return None


def memory_cgroup(
    proc_cgroup: str | os.PathLike[str] = "/proc/self/cgroup",
    mountinfo: str | os.PathLike[str] = "/proc/self/mountinfo",
) -> tuple[str, int] | None:
    """The folder of this process's memory cgroup and its version, when mounted here."""
    groups = cgroups.memberships(proc_cgroup)
    mounts = cgroups.mounts(mountinfo)
    if "memory" in groups and "memory" in mounts:
        folder = cgroups.resolve(mounts["memory"], groups["memory"])
        if folder is not None and os.path.exists(path_join(folder, "memory.oom_control")):
            return folder, 1
    if "" in groups and "cgroup2" in mounts:
        folder = cgroups.resolve(mounts["cgroup2"], groups[""])
        if folder is not None and os.path.exists(path_join(folder, "memory.events")):
            return folder, 2
    return None


def oom_kill_count(folder: str | os.PathLike[str], version: int) -> int | None:
    """The cgroup's ``oom_kill`` counter (kills by the kernel's OOM killer in it)."""
    name = "memory.events" if version == 2 else "memory.oom_control"
    try:
        text = cgroups.read_text(path_join(path_text(folder), name))
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "oom_kill" and value.strip().isdigit():
            return int(value)
    return None


def kernel_oom_line(pid: int, device: str = "/dev/kmsg") -> str | None:
    """The kernel's "Killed process <pid>" line, when the kernel log is readable."""
    import re  # a reader of a dead session's end: never at the agent's start

    pattern = re.compile(rf"(Killed process|Memory cgroup out of memory: Killed process) {pid}\b")
    try:
        fd = os.open(device, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    found: str | None = None
    try:
        for _ in range(_KMSG_MAX_RECORDS):
            try:
                chunk = os.read(fd, 8192)
            except OSError as exc:
                if exc.errno == errno.EPIPE:  # overwritten while reading: go on
                    continue
                break  # EAGAIN: the end
            if not chunk:
                break
            text = chunk.decode("utf-8", "replace")
            message = text.split(";", 1)[-1].strip()
            if pattern.search(message):
                found = message[:300]
    finally:
        os.close(fd)
    return found


def write_json(path: str, value: Any) -> None:
    """Write ``json.dumps(value, separators=(",", ":"))`` to ``path``, whole, then rename it
    into place (no ``json`` import: this runs at start and in the ``os._exit`` hook)."""
    folder, name = os.path.split(path)
    temporary = os.path.join(folder, f".{name}.{os.getpid()}.tmp")
    text = json_text(value)
    with open(temporary, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(temporary, path)


def read_json(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    import json  # earlier sessions' files: read by crash_recovery, off the agent's start

    try:
        with open(path, encoding="utf-8") as f:
            data = json.loads(f.read())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def record_start_evidence(folder: str, pid: int) -> dict[str, Any]:
    """Write ``exit-evidence.json`` for this process; returns what it wrote."""
    main = threading.main_thread()
    value: dict[str, Any] = {
        "pid": pid,
        "boot_id": boot_id(),
        "threads": {str(main.ident): main.name},
    }
    cgroup = memory_cgroup()
    if cgroup is not None:
        path, version = cgroup
        value["cgroup"] = {
            "path": path,
            "version": version,
            "oom_kill": oom_kill_count(path, version),
        }
    write_json(path_join(folder, EVIDENCE_NAME), value)
    return value


def write_intent(folder: str, code: int) -> None:
    """``os._exit(code)`` is being called (plain ``open``/``write``: the process ends next)."""
    try:
        write_json(path_join(folder, INTENT_NAME), {"os_exit": code})
    except OSError:
        pass
