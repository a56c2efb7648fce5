"""The report's crash and exit sections: ``crash`` and ``exit-classification`` records (pure).

The exit comes from the last ``exit-classification`` (written by ``hawkwatch run`` or the next
agent start); without one it is classified here from the ``exit-state`` records and the fatal
crashes, by the same rules (``exit_classify``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

import msgspec

from hawkwatch.analysis.exit_classify import ExitFacts, classify_exit
from hawkwatch.analysis.series import offset
from hawkwatch.model import Record
from hawkwatch.model.records import (
    Crash,
    CrashRecordFrame,
    ExitClassification,
    decode_all,
)
from hawkwatch.model.records import ExitState as ExitStateRecord
from hawkwatch.model.report import (
    BreadcrumbRow,
    CrashCauseRow,
    CrashFrameRow,
    CrashRow,
    CrashThreadRow,
    ExitState,
)


def _frames(frames: Iterable[CrashRecordFrame]) -> tuple[CrashFrameRow, ...]:
    return tuple(CrashFrameRow(f.function, f.file, f.line, f.source) for f in frames)


def crash_rows(crashes: Iterable[Crash], start: float | None) -> list[CrashRow]:
    """Every decoded ``crash`` record, in time order."""
    rows = [
        CrashRow(
            kind=crash.kind,
            fatal=crash.fatal,
            type=crash.type,
            message=crash.message,
            thread=crash.thread,
            frames=_frames(crash.frames),
            threads=tuple(CrashThreadRow(t.name, _frames(t.frames)) for t in crash.threads),
            fingerprint=crash.fingerprint,
            breadcrumbs=tuple(BreadcrumbRow(b.time, b.kind, b.text) for b in crash.breadcrumbs),
            time=crash.time,
            offset_s=offset(crash.time, start),
            source=crash.source,
            title=crash.title,
            causes=tuple(
                CrashCauseRow(k.type, k.message, k.relation, _frames(k.frames))
                for k in crash.causes
            ),
        )
        for crash in crashes
    ]
    return sorted(rows, key=lambda row: row.time)


def summarize_exit(
    state: ExitState | None,
    exit_states: list[ExitStateRecord],
    classifications: list[ExitClassification],
    crashes: list[CrashRow],
    *,
    start: float | None,
) -> ExitState | None:
    """``state`` (the last ``exit-state``) with its kind and evidence filled in."""
    chosen = classifications[-1] if classifications else None
    if chosen is not None:
        if state is None:
            return ExitState(
                time=chosen.time,
                offset_s=offset(chosen.time, start),
                clean=chosen.kind in ("clean", "exit-code", "exception"),
                exit_code=chosen.exit_code,
                signal=chosen.signal,
                source=chosen.source,
                kind=chosen.kind,
                evidence=chosen.evidence,
            )
        return dataclasses.replace(
            state,
            kind=chosen.kind,
            evidence=chosen.evidence,
            source=chosen.source,
            exit_code=state.exit_code if state.exit_code is not None else chosen.exit_code,
            signal=state.signal if state.signal is not None else chosen.signal,
        )
    if state is None:
        return None
    verdict = classify_exit(_facts(exit_states, crashes))
    return dataclasses.replace(state, kind=verdict.kind, evidence=verdict.evidence)


def _facts(exit_states: list[ExitStateRecord], crashes: list[CrashRow]) -> ExitFacts:
    returncode: int | None = None
    agent: dict[str, Any] | None = None
    for state in exit_states:
        value: dict[str, Any] = msgspec.to_builtins(state)
        if value.get("source") == "supervisor":
            code, number = value.get("exit_code"), value.get("signal")
            if isinstance(number, int):
                returncode = -number
            elif isinstance(code, int):
                returncode = code
        elif value.get("source") == "agent":
            agent = value
    fatal_signal = next((c.type for c in crashes if c.fatal and c.kind == "signal"), None)
    fatal_exception = next((c.type for c in crashes if c.fatal and c.kind == "exception"), None)
    return ExitFacts(
        returncode=returncode,
        agent_exit=agent,
        fatal_signal=fatal_signal,
        fatal_exception=fatal_exception,
    )


def session_exit_kind(records: Iterable[Record]) -> str | None:
    """How the session's process ended (exit vocabulary), None when nothing says so yet."""
    wanted = {ExitClassification.collection, ExitStateRecord.collection, Crash.collection}
    decoded = decode_all(record for record in records if record.collection in wanted)
    classified = decoded.of(ExitClassification)
    if classified:
        return classified[-1].kind
    states = decoded.of(ExitStateRecord)
    if not states:
        return None
    return classify_exit(_facts(states, crash_rows(decoded.of(Crash), None))).kind
