"""Forked and spawned children each get a session of their own, with their own records."""

from __future__ import annotations

import sys

from hawkwatch.model import collections as c
from tests.e2e.conftest import Runner, by_collection, json_of

FORKING_APP = """
import os, sys, threading, time
import hawkwatch

hawkwatch.start(app_name="forker", resources_interval_s=0.05)
hawkwatch.event("parent-before-fork")
pid = os.fork()
if pid == 0:
    hawkwatch.event("child-only")
    time.sleep(0.4)                      # several sampling intervals in the child
    sys.exit(0)
os.waitpid(pid, 0)
hawkwatch.event("parent-after-fork")
time.sleep(0.2)
print("threads", sorted(t.name for t in threading.enumerate()))
"""


def _events(session) -> list[str]:
    return [e["event"] for e in json_of(by_collection(session).get(c.CUSTOM_TIME_EVENT, []))]


def test_os_fork_child_gets_its_own_session(runner: Runner) -> None:
    script = runner.script("forker.py", FORKING_APP)
    result = runner.python("-W", "error::DeprecationWarning", str(script))
    assert result.returncode == 0, result.stderr
    assert "multi-threaded" not in result.stderr  # our threads are paused across fork()
    assert "'hawkwatch-scheduler'" in result.stdout  # and running again in the parent
    parent, child = sorted(
        runner.sessions(),
        key=lambda s: (
            s.metadata["pid"] != s.metadata["ppid"] and s.metadata.get("parent_session") is not None
        ),
    )
    assert child.metadata["parent_session"] == parent.name
    assert child.metadata["ppid"] == parent.metadata["pid"]
    assert _events(parent) == ["App::Start", "parent-before-fork", "parent-after-fork", "App::Exit"]
    assert _events(child) == ["App::Start", "child-only", "App::Exit"]
    child_records = by_collection(child)
    assert len(child_records[c.MEMORY_RESIDENT]) >= 1  # the child's sampler thread runs
    assert json_of(child_records[c.EXIT_STATE])[0]["exit_code"] == 0
    assert child.metadata["app_name"] == "forker"


MULTIPROCESSING_APP = """
import multiprocessing as mp, os, sys
import hawkwatch

def work(tag):
    hawkwatch.event("worker-" + tag)
    return os.getpid()

if __name__ == "__main__":
    if not hawkwatch.start():            # under hawkwatch run: already running, returns True
        sys.exit("agent not started")
    method = sys.argv[1]
    pool = mp.get_context(method).Pool(2)
    pids = pool.map(work, ["a", "b", "c", "d"])
    pool.close()
    pool.join()                          # workers leave on their own, through os._exit
    print("pids", len(set(pids)))
"""


def _worker_sessions(runner: Runner):
    """The main process's session and its workers'."""
    sessions = runner.sessions()
    pids = {s.metadata["pid"] for s in sessions}
    main = [s for s in sessions if s.metadata["ppid"] not in pids]
    assert len(main) == 1, [(s.metadata["pid"], s.metadata["ppid"]) for s in sessions]
    return main[0], [s for s in sessions if s != main[0]]


def test_multiprocessing_fork_workers_get_sessions(runner: Runner) -> None:
    script = runner.script("pool.py", MULTIPROCESSING_APP)
    result = runner.python(str(script), "fork")
    assert result.returncode == 0, result.stderr
    main, workers = _worker_sessions(runner)
    assert len(workers) == 2
    seen = sorted(e for w in workers for e in _events(w) if e.startswith("worker-"))
    assert seen == ["worker-a", "worker-b", "worker-c", "worker-d"]
    assert all(w.metadata["parent_session"] == main.name for w in workers)
    assert not any(e.startswith("worker-") for e in _events(main))
    # workers leave through os._exit; the agent still records how
    for worker in workers:
        exits = json_of(by_collection(worker)[c.EXIT_STATE])
        assert [e["reason"] for e in exits] == ["multiprocessing-worker"]
    assert all(w.metadata["ppid"] == main.metadata["pid"] for w in workers)


def test_multiprocessing_spawn_workers_are_covered_by_hawkwatch_run_children(
    runner: Runner,
) -> None:
    script = runner.script("pool.py", MULTIPROCESSING_APP)
    result = runner.hawkwatch("run", "--children", "--", sys.executable, str(script), "spawn")
    assert result.returncode == 0, result.stderr
    main, workers = _worker_sessions(runner)
    # spawn starts fresh interpreters (and a resource tracker); the two pool workers did the work
    doing_work = [w for w in workers if any(e.startswith("worker-") for e in _events(w))]
    assert 1 <= len(doing_work) <= 2
    seen = sorted(e for w in doing_work for e in _events(w) if e.startswith("worker-"))
    assert seen == ["worker-a", "worker-b", "worker-c", "worker-d"]
    assert all(w.metadata["supervised"] is False for w in workers)
    assert main.metadata["supervised"] is True


HAMMER_APP = """
import os, sys, threading, time
import hawkwatch

hawkwatch.start(resources_interval_s=0.05)
stop = False
def hammer():
    while not stop:
        hawkwatch.event("hammer")              # keeps the store's lock busy
threads = [threading.Thread(target=hammer) for _ in range(2)]
for t in threads:
    t.start()
children = []
for i in range(20):
    pid = os.fork()
    if pid == 0:
        hawkwatch.event(f"child-{i}")
        os._exit(0)
    children.append(pid)
codes = [os.waitpid(pid, 0)[1] for pid in children]
stop = True
for t in threads:
    t.join()
print("children ok", codes == [0] * 20)
"""


def test_forking_while_other_threads_write_never_deadlocks_a_child(runner: Runner) -> None:
    script = runner.script("hammer.py", HAMMER_APP)
    result = runner.python(str(script), timeout=60)  # a deadlocked child would hang waitpid
    assert result.returncode == 0, result.stderr
    assert "children ok True" in result.stdout
    child_events = sorted(
        e for s in runner.sessions() for e in _events(s) if e.startswith("child-")
    )
    assert child_events == sorted(f"child-{i}" for i in range(20))


PROFILED_FORKING_APP = """
import os, sys, threading, time
import hawkwatch

hawkwatch.start(profiler_enabled=True, profiler_rate_hz=200, profiler_window_s=0.2)
time.sleep(0.3)
pid = os.fork()
if pid == 0:
    sys.exit(0)
os.waitpid(pid, 0)
time.sleep(0.3)
print("threads", sorted(t.name for t in threading.enumerate()))
"""


def test_the_profiler_thread_is_paused_across_fork(runner: Runner) -> None:
    script = runner.script("profiled_forker.py", PROFILED_FORKING_APP)
    result = runner.python("-W", "error::DeprecationWarning", str(script))
    assert result.returncode == 0, result.stderr
    assert "multi-threaded" not in result.stderr
    assert "'hawkwatch-profiler'" in result.stdout  # sampling again in the parent
    parent = next(s for s in runner.sessions() if s.metadata.get("parent_session") is None)
    windows = by_collection(parent)[c.CPU_PROFILE]
    assert len(windows) >= 2  # windows before and after the fork
