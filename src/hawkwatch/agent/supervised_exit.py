"""How a dead session's program ended, recorded for the common end without msgspec.

``hawkwatch run``'s supervisor writes an ``exit-state`` for every program, and for one that
ended with an exit code and left no crash behind (no faulthandler dump, no ``crash`` record)
also the ``exit-classification``: both as ``model.plain_records`` (the bytes the typed records
write), with the store and the standard library. An earlier session whose agent recorded its
own end is classified the same way (by the supervisor and by the agent's next start).
Everything else (a signal, a crash, a dump to parse, an end the agent never recorded) goes to
``crash_recovery``, which loads the typed model. The supervisor looks for earlier sessions with
``os`` alone, and loads more only when one may still need classifying.
"""

from __future__ import annotations

import os
import time

from hawkwatch.agent.exit_files import (
    CLASSIFIED_NAME,
    EVIDENCE_NAME,
    FAULT_NAME,
    INTENT_NAME,
    MAX_SESSIONS_LOOKED_AT,
)
from hawkwatch.model import collections as c
from hawkwatch.model.plain_records import EXIT_STATE, PlainRecord, exit_classification

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from hawkwatch.analysis.exit_status import Verdict


def write_exit(folder: str | os.PathLike[str], returncode: int) -> bool:
    """Append the supervisor's ``exit-state`` to the dead program's session; for a normal end
    also classify it (once: not when someone else claimed it). False: the classification is
    left to ``crash_recovery.finish_session``."""
    from hawkwatch.store.records import RecordStore

    number = -returncode if returncode < 0 else None
    state = EXIT_STATE(
        clean=returncode >= 0,
        exit_code=returncode if returncode >= 0 else None,
        signal=number,
        signal_name=_signal_name(number),
        reason=None,
        exception=None,
        source="supervisor",
        time=round(time.time(), 6),
    )
    verdict = normal_end(folder, returncode)
    store = RecordStore(folder)  # the writer is gone: this also recovers its buffer
    try:
        store.write(state)
        if verdict is not None and claim_classification(folder):
            store.write(_classification(verdict, "supervisor"))
    finally:
        store.close()
    return verdict is not None


def finish_sessions(folders: Iterable[str | os.PathLike[str]]) -> int:
    """Classify these gone sessions (the next-start path: nobody saw their exit status); how
    many were done here. A normal end (the agent's own exit record, no crash) is written with
    the plain records; any other loads ``crash_recovery``."""
    from hawkwatch.store.records import RecordStore

    done = 0
    for folder in folders:
        verdict = normal_end(folder, None)
        if verdict is None:
            from pathlib import Path

            from hawkwatch.agent.crash_recovery import finish_session

            done += finish_session(Path(folder), None, source="next-start") is not None
        elif claim_classification(folder):
            store = RecordStore(folder)  # the writer is gone: this also recovers its buffer
            try:
                store.write(_classification(verdict, "next-start"))
            finally:
                store.close()
            done += 1
    return done


def load_for_exit() -> None:
    """Import what ``write_exit`` needs for a normal end (the store and its writer's lock, the
    store's reading side, the readers' record type and ``json`` to read the exit records back,
    the verdicts), so that a supervisor can load it while its program runs: the store itself
    loads none of these (the agent starts without them)."""
    import fcntl  # noqa: F401
    import json  # noqa: F401

    import hawkwatch.analysis.exit_status
    import hawkwatch.model.record
    import hawkwatch.store.appender_read
    import hawkwatch.store.records  # noqa: F401


def _classification(verdict: Verdict, source: str) -> PlainRecord:
    kind, exit_code, signal_number, evidence = verdict
    return exit_classification(
        time=time.time(),
        kind=kind,
        exit_code=exit_code,
        signal=signal_number,
        evidence=evidence,
        source=source,
    )


def normal_end(folder: str | os.PathLike[str], returncode: int | None) -> Verdict | None:
    """The verdict on a program that ended normally and left no crash behind, as
    ``crash_recovery`` would decide it: with exit status ``returncode`` (>= 0) seen by the
    supervisor, or (None: nobody saw it) with the agent's own exit record; None for any other
    end."""
    if returncode is not None and returncode < 0:
        return None
    try:
        if os.stat(os.path.join(folder, FAULT_NAME)).st_size > 0:
            return None
    except FileNotFoundError:
        pass
    except OSError:
        return None
    import json

    from hawkwatch.analysis.exit_status import agent_verdict, exited_verdict
    from hawkwatch.store.records import read_records

    agent: dict[str, Any] | None = None
    for record in read_records(folder).records:
        if record.collection == c.CRASH:
            return None
        if record.collection != c.EXIT_STATE:
            continue
        try:
            value = json.loads(record.value)
        except (ValueError, RecursionError):
            return None
        if not _plain_exit_state(value):
            return None  # not what the agent writes: crash_recovery's typed reader decides
        if value.get("source") == "agent":
            agent = value
    if returncode is not None:
        return exited_verdict(returncode, agent, None)
    if agent is None:
        return None  # killed, crashed, OOM, a reboot...: crash_recovery weighs the evidence
    try:
        with open(os.path.join(folder, INTENT_NAME), "rb") as f:
            intent = json.loads(f.read().decode("utf-8"))
    except FileNotFoundError:
        intent = {}
    except (OSError, ValueError, RecursionError):
        return None
    os_exit = intent.get("os_exit") if isinstance(intent, dict) else None
    return agent_verdict(agent, os_exit if isinstance(os_exit, int) else None, None)


def _plain_exit_state(value: object) -> bool:
    """An ``exit-state`` value the typed model would read the same (the fields the verdict
    uses, of their types)."""
    if not isinstance(value, dict):
        return False
    code = value.get("exit_code")
    return (
        isinstance(value.get("reason"), str | None)
        and isinstance(value.get("exception"), str | None)
        and isinstance(value.get("source"), str)
        and (code is None or (isinstance(code, int) and not isinstance(code, bool)))
    )


def finish_gone_sessions(root: str, *, before: float) -> int:
    """Classify the gone sessions in ``root`` that started before the Unix time ``before``
    (``hawkwatch run``'s supervisor, while its program runs; call when ``earlier_work``)."""
    from hawkwatch.agent.crash_evidence import gone_unclassified
    from hawkwatch.model.session_name import format_session_name

    gone = gone_unclassified(root, format_session_name(before))
    return finish_sessions(session.folder for session in gone)


def claim_classification(folder: str | os.PathLike[str]) -> bool:
    """Classifying a dead session is claimed by creating ``exit-classified`` exclusively."""
    try:
        fd = os.open(
            os.path.join(folder, CLASSIFIED_NAME), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644
        )
    except OSError:
        return False
    os.close(fd)
    return True


def earlier_work(root: str, before_name: str) -> bool:
    """Whether a session in ``root`` named before ``before_name`` may still need its exit
    classified (one of the last ``MAX_SESSIONS_LOOKED_AT``, with exit evidence, not yet
    classified): ``crash_evidence.gone_unclassified``'s question, asked with ``os`` alone."""
    try:
        with os.scandir(root) as listing:
            names = sorted(
                entry.name
                for entry in listing
                if _session_shaped(entry.name) and entry.name < before_name and entry.is_dir()
            )
    except OSError:
        return False
    for name in names[-MAX_SESSIONS_LOOKED_AT:]:
        folder = os.path.join(root, name)
        if not os.path.exists(os.path.join(folder, CLASSIFIED_NAME)) and os.path.exists(
            os.path.join(folder, EVIDENCE_NAME)
        ):
            return True
    return False


def _session_shaped(name: str) -> bool:
    """``YYYY-MM-DD_HH-MM-SS+mmm`` (``store.session``'s pattern, without ``re``)."""
    return (
        len(name) == 23
        and name[4] == name[7] == "-"
        and name[10] == "_"
        and name[13] in "-:"
        and name[16] in "-:"
        and name[19] == "+"
        and (name[:4] + name[5:7] + name[8:10] + name[11:13] + name[14:16] + name[17:19]
             + name[20:]).isdigit()
    )  # fmt: skip


def _signal_name(number: int | None) -> str | None:
    if number is None:
        return None
    import signal  # not at the agent's start: it builds three enums (~3 M instructions)

    try:
        return signal.Signals(number).name
    except ValueError:
        return None
