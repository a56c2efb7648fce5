"""Jobs on both databases: concurrent workers never take the same job, and a worker killed
mid-job (SIGKILL, holding its lease) has its job taken over and processed exactly once."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import threading
import time

from sqlalchemy import Engine, func, select

from hawkwatch.model.envelope import Envelope, EnvelopeSession, encode_envelope
from hawkwatch.model.records import GcPause
from hawkwatch.server import admin, jobs
from hawkwatch.server.ingest import accept
from hawkwatch.server.pipeline import drain
from hawkwatch.server.schema import jobs as jobs_table
from hawkwatch.server.schema import sessions


def queue_envelopes(engine: Engine, count: int) -> int:
    key = admin.add_project(engine, "shop")
    project = admin.project_for_key(engine, key)
    assert project is not None
    for number in range(count):
        record = GcPause(start=1_700_000_000.0 + number, generation=2, duration_ms=20.0)
        body = encode_envelope(Envelope(
            id=f"s{number}:1", session=EnvelopeSession(f"s{number}"),
            records=[tuple(record.to_record())],  # type: ignore[list-item]
        ))  # fmt: skip
        assert accept(engine, project[0], body, content_encoding=None, artifact_name=None,
                      envelope_id=None).status == 202  # fmt: skip
    return project[0]


def test_concurrent_claims_take_distinct_jobs(engine: Engine) -> None:
    queue_envelopes(engine, 12)
    taken: list[int] = []
    lock = threading.Lock()

    def worker() -> None:
        while (claim := jobs.claim(engine)) is not None:
            with lock:
                taken.append(claim.job_id)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(taken) == sorted(set(taken)) and len(taken) == 12


def test_a_worker_killed_mid_job_loses_nothing_and_duplicates_nothing(engine: Engine) -> None:
    queue_envelopes(engine, 3)
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time
        from hawkwatch.server import jobs
        from hawkwatch.server.database import make_engine
        claim = jobs.claim(make_engine({engine.url.render_as_string(hide_password=False)!r}),
                           lease_s=1.0)
        print(claim.job_id, flush=True)
        time.sleep(600)  # mid-job: the lease is held, nothing committed
    """)], stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert holder.stdout is not None
    held = int(holder.stdout.readline())
    holder.send_signal(signal.SIGKILL)
    holder.wait(30)
    holder.stdout.close()
    assert drain(engine) == 2  # the held job's lease has not run out yet
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and drain(engine) == 0:
        time.sleep(0.2)  # until the lease expires and the job is taken over
    with engine.connect() as db:
        states = dict(db.execute(select(jobs_table.c.id, jobs_table.c.state)).all())
        attempts = db.execute(select(jobs_table.c.attempts).where(jobs_table.c.id == held)).scalar()
        stored = db.execute(select(func.count()).select_from(sessions)).scalar()
    assert set(states.values()) == {"done"} and len(states) == 3
    assert attempts == 2 and stored == 3
