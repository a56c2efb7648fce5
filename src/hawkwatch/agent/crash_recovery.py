"""After a process is gone: its faulthandler dump → a ``crash`` record, its exit → classified.

Run by ``hawkwatch run`` right after the child ends (it knows the exit status) and by the next
agent start for earlier sessions of processes that are gone. Whoever comes first does it, once:
classifying is claimed by creating ``exit-classified`` exclusively, the dump by renaming it
(``crash-fault.txt`` → ``….claimed`` → ``….reported``). If the reader itself crashes, the dump
stays on disk, readable, under its claimed name. Records go into the dead session's own store.
"""

from __future__ import annotations

import contextlib
import json
import linecache
import os
import re
import signal
import time
from pathlib import Path
from typing import Any, Final

import msgspec

from hawkwatch.agent import crash_evidence as ev
from hawkwatch.agent.crash_capture import is_in_app, with_fingerprint
from hawkwatch.agent.supervised_exit import claim_classification
from hawkwatch.analysis.exit_classify import ExitFacts, ExitVerdict, classify_exit
from hawkwatch.model.records import (
    Crash,
    CrashRecordFrame,
    ExitClassification,
    ExitState,
    ThreadStack,
    decode_all,
)
from hawkwatch.store import RecordStore, Session

FAULT_NAME: Final = ev.FAULT_NAME
CLAIMED_SUFFIX: Final = ".claimed"
REPORTED_SUFFIX: Final = ".reported"
CLASSIFIED_NAME: Final = ev.CLASSIFIED_NAME

#: faulthandler's words for each fatal signal.
FAULT_SIGNALS: Final = {
    "Segmentation fault": "SIGSEGV",
    "Bus error": "SIGBUS",
    "Floating-point exception": "SIGFPE",
    "Floating point exception": "SIGFPE",
    "Illegal instruction": "SIGILL",
    "Aborted": "SIGABRT",
}
_FATAL = re.compile(r"^Fatal Python error: (.+?)\s*$", re.M)
_THREAD = re.compile(r"^(Current thread|Thread) (0x[0-9a-fA-F]+)(?: \[(.*)\])?")
_FRAME = re.compile(r'^  File "(.*)", line (\d+) in (.*)$')


def parse_fault_dump(
    text: str, when: float, pid: int | None, names: dict[int, str] | None = None
) -> Crash | None:
    """The crash faulthandler wrote (None when the text holds no fatal error); ``names``:
    thread names by ident, known from the agent's evidence file."""
    fatal = _FATAL.search(text)
    if fatal is None:
        return None
    words = fatal.group(1)
    name = FAULT_SIGNALS.get(words, words)
    crashed: list[CrashRecordFrame] = []
    crashed_name = ""
    others: list[tuple[str, int, list[CrashRecordFrame]]] = []
    current: list[CrashRecordFrame] | None = None
    for line in text.splitlines():
        thread = _THREAD.match(line)
        if thread is not None:
            ident = int(thread.group(2), 16)
            label = thread.group(3) or (names or {}).get(ident) or f"thread {thread.group(2)}"
            if thread.group(1) == "Current thread" and not crashed_name:
                current, crashed_name = crashed, label
            else:
                current = []
                others.append((label, ident, current))
            continue
        frame = _FRAME.match(line)
        if frame is not None and current is not None:
            current.append(_frame(frame.group(1), int(frame.group(2)), frame.group(3)))
    threads = tuple(ThreadStack(name=n, ident=i, frames=tuple(f)) for n, i, f in others)
    return with_fingerprint(
        Crash(
            time=when,
            kind="signal",
            fatal=True,
            type=name,
            message=f"Fatal Python error: {words}",
            thread=crashed_name,
            source="faulthandler",
            frames=tuple(crashed),
            threads=threads,
            pid=pid,
        )
    )


def _frame(file: str, line: int, function: str) -> CrashRecordFrame:
    source = linecache.getline(file, line).strip()[:160] or None
    return CrashRecordFrame(
        function=function, file=file, line=line, source=source, in_app=is_in_app(file)
    )


def _claim(path: Path, suffix: str) -> Path | None:
    claimed = path.with_name(path.name + suffix)
    try:
        os.rename(path, claimed)
    except OSError:
        return None
    return claimed


def _read_fault(folder: Path, pid: int | None) -> tuple[Crash | None, Path | None]:
    path = folder / FAULT_NAME
    try:
        if path.stat().st_size == 0:
            return None, None
    except OSError:
        return None, None
    claimed = _claim(path, CLAIMED_SUFFIX)
    if claimed is None:
        return None, None
    try:
        text = claimed.read_text("utf-8", "replace")
        when = claimed.stat().st_mtime
    except OSError:
        return None, claimed
    evidence = ev.read_json(folder / ev.EVIDENCE_NAME) or {}
    known = evidence.get("threads")
    names = (
        {int(k): str(v) for k, v in known.items() if k.isdigit()} if isinstance(known, dict) else {}
    )
    return parse_fault_dump(text, when, pid, names), claimed


def gather_facts(
    folder: Path, returncode: int | None, fault: Crash | None, records: Any
) -> ExitFacts:
    """Everything known about the end of the session in ``folder``."""
    evidence = ev.read_json(folder / ev.EVIDENCE_NAME)
    agent_exit: dict[str, Any] | None = None
    for state in records.of(ExitState):
        if state.source == "agent":
            agent_exit = msgspec.to_builtins(state)
    fatal_exception = next(
        (x.type for x in records.of(Crash) if x.fatal and x.kind == "exception"), None
    )
    intent = ev.read_json(folder / ev.INTENT_NAME) or {}
    level = ev.read_json(folder / ev.LEVEL_NAME) or {}
    cgroup = (evidence or {}).get("cgroup") or {}
    before = cgroup.get("oom_kill") if isinstance(cgroup.get("oom_kill"), int) else None
    after: int | None = None
    if isinstance(cgroup.get("path"), str) and cgroup.get("version") in (1, 2):
        after = ev.oom_kill_count(Path(cgroup["path"]), int(cgroup["version"]))
    pid = (evidence or {}).get("pid")
    kernel = None
    unexplained = fault is None and agent_exit is None
    if isinstance(pid, int) and unexplained and returncode in (None, -signal.SIGKILL):
        kernel = ev.kernel_oom_line(pid)
    os_exit = intent.get("os_exit")
    hang = any(folder.glob("hang-*.json")) or any(folder.glob("hang-*.json.reported"))
    return ExitFacts(
        returncode=returncode,
        agent_exit=agent_exit,
        os_exit_code=os_exit if isinstance(os_exit, int) else None,
        fatal_signal=fault.type if fault is not None else None,
        fatal_exception=fatal_exception,
        hang=hang,
        oom_kill_before=before,
        oom_kill_after=after,
        oom_cgroup=cgroup.get("path") if isinstance(cgroup.get("path"), str) else None,
        kernel_oom_line=kernel,
        memory_level=level.get("level") if isinstance(level.get("level"), int) else None,
        boot_id_then=(evidence or {}).get("boot_id"),
        boot_id_now=ev.boot_id(),
        has_agent_evidence=evidence is not None,
        fatal_signals_watched=not _faulthandler_was_the_apps(folder),
    )


def _faulthandler_was_the_apps(folder: Path) -> bool:
    about = Session(folder).metadata.get("crash")
    return isinstance(about, dict) and "faulthandler" in about


def ev_json(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def finish_session(
    folder: Path, returncode: int | None, *, source: str
) -> tuple[ExitVerdict, Crash | None] | None:
    """Turn a dead session's dump into a crash record and classify its exit, once.

    None when someone else already did (or is doing) it.
    """
    if not claim_classification(folder):
        return None
    session = Session(folder)
    pid = session.metadata.get("pid")
    fault, claimed = _read_fault(folder, pid if isinstance(pid, int) else None)
    records = decode_all(session.records().records)
    facts = gather_facts(folder, returncode, fault, records)
    verdict = classify_exit(facts)
    store = RecordStore(folder)  # the writer is gone: this also recovers its buffer
    try:
        if fault is not None:
            store.write(fault)
        item = ExitClassification(
            time=time.time(),
            kind=verdict.kind,
            exit_code=verdict.exit_code,
            signal=verdict.signal,
            evidence=verdict.evidence,
            source=source,
        )
        store.write(item)
    finally:
        store.close()
    if claimed is not None:
        with contextlib.suppress(OSError):
            os.rename(claimed, claimed.with_name(FAULT_NAME + REPORTED_SUFFIX))
    return verdict, fault
