"""Per-thread CPU times from the OS, tied to Python threads by native id."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from hawkwatch.agent import threads_cpu
from hawkwatch.agent.threads_cpu import ThreadCpuReader


def spin_for_cpu(seconds: float) -> None:
    """Burn this thread's own CPU time (not wall time) for ``seconds``."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        sum(range(1000))


def test_a_busy_thread_gains_cpu_and_a_blocked_one_does_not() -> None:
    reader = ThreadCpuReader()
    release = threading.Event()
    started = threading.Barrier(3)
    done = threading.Event()

    def sleeper() -> None:
        started.wait()
        release.wait()

    def busy() -> None:
        started.wait()
        spin_for_cpu(0.3)
        done.set()
        release.wait()

    threads = [
        threading.Thread(target=sleeper, name="blocked-sleeper"),
        threading.Thread(target=busy, name="busy-spinner"),
    ]
    for thread in threads:
        thread.start()
    try:
        started.wait()
        before = {t.name: t for t in reader.snapshot()}
        assert done.wait(30)
        after = {t.name: t for t in reader.snapshot()}
    finally:
        release.set()
        for thread in threads:
            thread.join()
    busy_delta = after["busy-spinner"].cpu_s - before["busy-spinner"].cpu_s
    idle_delta = after["blocked-sleeper"].cpu_s - before["blocked-sleeper"].cpu_s
    assert busy_delta >= 0.25
    assert idle_delta < 0.05
    assert after["busy-spinner"].ident == threads[1].ident
    assert after["MainThread"].thread is threading.main_thread()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("source", ["clock", "schedstat", "stat"])
def test_every_linux_source_agrees_with_the_threads_own_clock(source: str) -> None:
    read = {
        "clock": threads_cpu._clock_seconds,
        "schedstat": threads_cpu._schedstat_seconds,
        "stat": threads_cpu._stat_seconds,
    }[source]
    spin_for_cpu(0.2)
    me = threading.get_native_id()
    own = time.thread_time()
    assert read(me) == pytest.approx(own, abs=0.05)


def test_threads_that_do_not_exist_read_as_none() -> None:
    reader = ThreadCpuReader()
    assert reader.cpu_seconds(2**31 - 1) is None  # above any pid_max
    assert reader.source in ("clock", "schedstat", "stat", "psutil")
    if sys.platform.startswith("linux"):
        assert reader.source == "clock"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux thread CPU clocks")
def test_another_threads_clock_reads_its_cpu_time() -> None:
    box: dict[str, float] = {}
    done, release = threading.Event(), threading.Event()

    def work() -> None:
        spin_for_cpu(0.1)
        box["own"] = time.thread_time()
        done.set()
        release.wait()

    worker = threading.Thread(target=work)
    worker.start()
    try:
        assert done.wait(30)
        assert worker.native_id is not None
        assert threads_cpu._clock_seconds(worker.native_id) == pytest.approx(box["own"], abs=0.005)
    finally:
        release.set()
        worker.join()
