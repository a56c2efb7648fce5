"""One job: an upload → its session row, issues and occurrences, committed with the job's end.

A session envelope is a snapshot: a newer sequence of the same session replaces the older one's
occurrences; an older one arriving late changes nothing. An iOS crash report is symbolicated
against the server's symbol store (when it has the images) and grouped with the CLI's crash
fingerprint. An MTHawkeye session folder (a tar) is read as a session.
"""

from __future__ import annotations

import io
import linecache
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, delete, insert, select, update

from hawkwatch.analysis.crash_grouping import epoch
from hawkwatch.analysis.session_report import build_session_report
from hawkwatch.model import Record
from hawkwatch.model.envelope import decode_envelope
from hawkwatch.report.json_report import to_json_dict
from hawkwatch.server import jobs, rollups
from hawkwatch.server.alerts.trigger import Watch
from hawkwatch.server.findings import IssueHit, crash_hit, exit_kind, session_hits
from hawkwatch.server.schema import envelopes, issues, occurrences, sessions


class LeaseLost(Exception):
    """Another worker took the job over; this one's results were rolled back."""


@dataclass(frozen=True)
class SessionResult:
    name: str
    sequence: int
    app_version: str | None
    start_time: float | None
    exit_kind: str
    launch_s: float | None
    report: dict[str, Any]
    stalled: bool = False


def process(
    engine: Engine, claim: jobs.Claim, symbols_root: Path | None = None,
    now: float | None = None,
) -> None:  # fmt: skip
    """Run one claimed job to its end (or raise, leaving the job for ``jobs.fail``). Alerts it
    fires are queued in the same transaction; ``now`` is their clock (intervals)."""
    with engine.connect() as db:
        row = db.execute(select(envelopes).where(envelopes.c.id == claim.envelope_row)).one()
    if row.kind == "session":
        session, hits = _from_envelope(row.body)
    elif row.name.endswith((".tar", ".tar.gz", ".tgz")):
        session, hits = _from_mthawkeye_tar(row.name, row.body)
    else:
        session, hits = None, [_from_crash(row.name, row.body, row.received, symbols_root)]
    with engine.begin() as db:
        watch = Watch(db, row.project_id, time.time() if now is None else now)
        session_id, reported = None, set[int]()
        if session is not None:
            session_id, reported = _store_session(db, row.project_id, session, row.received)
            if session_id is None:  # an older snapshot than the one stored: nothing to change
                hits = []
        release = session.app_version if session is not None else None
        counted = []
        for hit in hits:
            if session is None:  # a crash report names its app's version itself
                release = hit.detail.get("app_version") or None
            issue_id, created, resolved_in = _upsert_issue(db, row.project_id, hit)
            db.execute(insert(occurrences).values(
                issue_id=issue_id, session_id=session_id, envelope_id=row.id,
                received=row.received, time=hit.time, release=release, detail=hit.detail,
            ))  # fmt: skip
            watch.seen(issue_id, created, release, resolved_in=resolved_in,
                       again=issue_id in reported)  # fmt: skip
            counted.append((issue_id, release, hit.time))
        rollups.add(db, session_id, counted)
        if not jobs.finish(db, claim):
            raise LeaseLost(f"job {claim.job_id}")


def _session_result(
    name: str, sequence: int, records: list[Record], metadata: dict[str, Any], source: str
) -> tuple[SessionResult, list[IssueHit]]:
    report = build_session_report(
        records, metadata, name=name, source=source,  # type: ignore[arg-type]
        read_line=linecache.getline,
    )  # fmt: skip
    launch_ms = report.launch.duration_ms if report.launch is not None else None
    result = SessionResult(
        name=name,
        sequence=sequence,
        app_version=report.session.app_version,
        start_time=report.session.start_time,
        exit_kind=exit_kind(report),
        launch_s=launch_ms / 1000 if launch_ms else None,
        report=to_json_dict(report),
        stalled=report.stalls is not None and report.stalls.count > 0,
    )
    return result, session_hits(report, records)


def _from_envelope(body: bytes) -> tuple[SessionResult, list[IssueHit]]:
    envelope = decode_envelope(body)
    return _session_result(
        envelope.session_name, envelope.sequence, envelope.as_records(),
        envelope.session.metadata, "hawkwatch",
    )  # fmt: skip


def _from_mthawkeye_tar(name: str, body: bytes) -> tuple[SessionResult, list[IssueHit]]:
    from hawkwatch.store import Session

    with tempfile.TemporaryDirectory(prefix="hawkwatch-upload-") as folder:
        with tarfile.open(fileobj=io.BytesIO(body)) as archive:
            archive.extractall(folder, filter="data")
        records_file = next(Path(folder).rglob("records.mtlog"), None) or next(
            Path(folder).rglob("records.mmap2")
        )
        session = Session.open(records_file.parent)
        records = session.records().records
        return _session_result(name, 0, records, session.metadata, "mthawkeye")


def _from_crash(name: str, body: bytes, received: float, symbols_root: Path | None) -> IssueHit:
    from hawkwatch.formats.crash import parse_crash
    from hawkwatch.report.crash_json import crash_to_json

    report = parse_crash(body, source=name).value
    missing = []
    if symbols_root is not None and symbols_root.is_dir():
        from hawkwatch.symbols.store import SymbolStore
        from hawkwatch.symbols.symbolicate import images_without_debug_files, symbolicate

        store = SymbolStore(symbols_root)
        report = symbolicate(report, store)
        missing = images_without_debug_files(report, store)
    when = epoch(report.timestamp) or received
    return crash_hit(report, when, {"artifact": name, **crash_to_json(report, missing)})


def _store_session(
    db: Connection, project_id: int, result: SessionResult, received: float
) -> tuple[int | None, set[int]]:
    """Insert or replace the session; None when a newer snapshot is stored already. With it, the
    issues an older snapshot of the session reported already (not new occurrences for alerts)."""
    existing = db.execute(
        select(sessions.c.id, sessions.c.sequence)
        .where(sessions.c.project_id == project_id)
        .where(sessions.c.name == result.name)
    ).first()
    values = {
        "sequence": result.sequence, "app_version": result.app_version,
        "start_time": result.start_time, "exit_kind": result.exit_kind,
        "launch_s": result.launch_s, "report": result.report, "received": received,
        "stalled": result.stalled,
    }  # fmt: skip
    if existing is None:
        return int(db.execute(
            insert(sessions).values(project_id=project_id, name=result.name, **values)
            .returning(sessions.c.id)
        ).scalar_one()), set()  # fmt: skip
    if existing.sequence > result.sequence:
        return None, set()
    reported = set(db.execute(
        select(occurrences.c.issue_id).where(occurrences.c.session_id == existing.id).distinct()
    ).scalars())  # fmt: skip
    rollups.remove_session(db, existing.id)
    db.execute(delete(occurrences).where(occurrences.c.session_id == existing.id))
    db.execute(update(sessions).where(sessions.c.id == existing.id).values(**values))
    return int(existing.id), reported


def _upsert_issue(
    db: Connection, project_id: int, hit: IssueHit
) -> tuple[int, bool, str | None]:
    """The issue's id, whether this hit created it, and the release it is resolved in if it is."""
    found = db.execute(
        select(issues.c.id, issues.c.first_seen, issues.c.last_seen, issues.c.status,
               issues.c.resolved_in_release)
        .where(issues.c.project_id == project_id)
        .where(issues.c.kind == hit.kind)
        .where(issues.c.fingerprint == hit.fingerprint)
    ).first()
    if found is None:
        return int(db.execute(
            insert(issues).values(
                project_id=project_id, kind=hit.kind, fingerprint=hit.fingerprint,
                title=hit.title[:500], culprit=(hit.culprit or "")[:500] or None,
                first_seen=hit.time, last_seen=hit.time, example=hit.detail,
            ).returning(issues.c.id)
        ).scalar_one()), True, None  # fmt: skip
    db.execute(update(issues).where(issues.c.id == found.id).values(
        first_seen=min(found.first_seen, hit.time), last_seen=max(found.last_seen, hit.time),
    ))  # fmt: skip
    resolved_in = found.resolved_in_release if found.status == "resolved" else None
    return int(found.id), False, resolved_in


def run_once(
    engine: Engine, symbols_root: Path | None = None, *,
    clock: Callable[[], float] = time.time,
) -> bool:  # fmt: skip
    """Claim and run one job; False when there was none. A failure is recorded on the job."""
    claim = jobs.claim(engine)
    if claim is None:
        return False
    try:
        process(engine, claim, symbols_root, now=clock())
    except LeaseLost:
        pass
    except Exception as exc:  # noqa: BLE001 - a bad upload or a bug: recorded on the job, retried
        jobs.fail(engine, claim, f"{type(exc).__name__}: {exc}")
    return True


def drain(
    engine: Engine, symbols_root: Path | None = None, *, deadline_s: float = 60.0,
    clock: Callable[[], float] = time.time,
) -> int:  # fmt: skip
    """Run jobs until none is left (or the deadline); returns how many ran."""
    ran = 0
    ends = time.monotonic() + deadline_s
    while time.monotonic() < ends and run_once(engine, symbols_root, clock=clock):
        ran += 1
    return ran
