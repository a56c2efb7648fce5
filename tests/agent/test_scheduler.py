"""The one scheduler thread: runs jobs, reports and drops a failing job, stops promptly."""

from __future__ import annotations

import threading
import time

from hawkwatch.agent.scheduler import Scheduler


def _wait_for(predicate, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.005)
    return predicate()


def test_jobs_run_repeatedly_on_one_named_thread() -> None:
    errors: list[tuple[object, BaseException]] = []
    scheduler = Scheduler(on_error=lambda owner, exc: errors.append((owner, exc)))
    threads: list[str] = []
    owner_a, owner_b = object(), object()
    scheduler.every(0.01, lambda: threads.append(threading.current_thread().name), owner_a)
    scheduler.every(0.01, lambda: threads.append(threading.current_thread().name), owner_b)
    scheduler.start()
    try:
        assert _wait_for(lambda: len(threads) >= 10)
    finally:
        assert scheduler.stop()
    assert set(threads) == {"hawkwatch-scheduler"}
    assert errors == []


def test_a_failing_job_is_reported_with_its_owner_and_not_run_again() -> None:
    errors: list[tuple[object, BaseException]] = []
    scheduler = Scheduler(on_error=lambda owner, exc: errors.append((owner, exc)))
    calls = []
    healthy = []
    bad_owner = object()

    def failing() -> None:
        calls.append(1)
        raise RuntimeError("sampling broke")

    scheduler.every(0.01, failing, bad_owner)
    scheduler.every(0.01, lambda: healthy.append(1), object())
    scheduler.start()
    try:
        assert _wait_for(lambda: len(healthy) >= 10)
    finally:
        scheduler.stop()
    assert calls == [1]
    assert len(errors) == 1
    assert errors[0][0] is bad_owner
    assert str(errors[0][1]) == "sampling broke"


def test_cancel_removes_every_job_of_an_owner_even_one_in_flight() -> None:
    scheduler = Scheduler(on_error=lambda owner, exc: None)
    owner = object()
    started = threading.Event()
    release = threading.Event()
    runs = []

    def slow() -> None:
        runs.append(1)
        started.set()
        release.wait(5)

    scheduler.every(0.01, slow, owner)
    scheduler.start()
    try:
        assert started.wait(5)
        scheduler.cancel(owner)  # while the job runs
        release.set()
        witness: list[int] = []  # a job on the same interval: had the slow one returned, it runs
        scheduler.every(0.01, lambda: witness.append(1), object())
        assert _wait_for(lambda: len(witness) >= 10)
    finally:
        scheduler.stop()
    assert runs == [1]


def test_stop_returns_promptly_when_idle_and_restart_works() -> None:
    scheduler = Scheduler(on_error=lambda owner, exc: None)
    ticks = []
    scheduler.every(3600, lambda: ticks.append(1), object())
    scheduler.start()
    started = time.monotonic()
    assert scheduler.stop()
    assert time.monotonic() - started < 1.0
    assert not scheduler.is_running()
    scheduler.every(0.01, lambda: ticks.append(2), object())
    scheduler.start()
    try:
        assert _wait_for(lambda: 2 in ticks)
    finally:
        scheduler.stop()
