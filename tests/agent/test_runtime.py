"""The runtime in-process: session, lifecycle records, the firewall around monitors."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import ClassVar

import pytest

import hawkwatch
from hawkwatch.agent import AgentContext, current_agent, register_monitor, runtime
from hawkwatch.agent import api as agent_api
from hawkwatch.model import collections as c
from hawkwatch.model.records import ExitState
from hawkwatch.store import list_sessions
from tests.builders import agent_records, json_values, run_script, wait_for

pytestmark = pytest.mark.usefixtures("stopped_agent")

QUIET = {"resources_enabled": False, "imports_enabled": False, "gc_enabled": False}


def _events() -> list[str]:
    return [str(v["event"]) for v in json_values(agent_records(c.CUSTOM_TIME_EVENT))]


def test_start_creates_one_session_with_metadata_and_lifecycle(hawkwatch_home: Path) -> None:
    assert hawkwatch.start(app_name="shop", app_version="1.4.2", **QUIET) is True
    assert hawkwatch.start() is True  # idempotent: no second session
    sessions = list_sessions(hawkwatch_home)
    assert len(sessions) == 1
    metadata = sessions[0].metadata
    assert metadata["app_name"] == "shop"
    assert metadata["app_version"] == "1.4.2"
    assert _events() == ["App::Start"]
    launch = json.loads(agent_records(c.APP_LAUNCH)[-1].value)
    assert launch["process_start"] > 0 and launch["agent_started"] >= launch["process_start"]


def test_event_span_and_ready_records(hawkwatch_home: Path) -> None:
    hawkwatch.start(**QUIET)
    hawkwatch.event("cache-warmed", extra="3,200 keys\nin 2 shards")
    hawkwatch.event("config", extra={"workers": 4})
    with hawkwatch.span("rebuild-index"):
        pass
    with pytest.raises(KeyError), hawkwatch.span("lookup"):
        raise KeyError("x")
    hawkwatch.mark_ready()
    hawkwatch.mark_ready()  # only the first counts

    events = json_values(agent_records(c.CUSTOM_TIME_EVENT))
    assert [e["event"] for e in events] == ["App::Start", "cache-warmed", "config", "App::Ready"]
    assert events[1]["extra"] == "3,200 keys\nin 2 shards"
    assert json.loads(str(events[2]["extra"])) == {"workers": 4}
    spans = json_values(agent_records(c.CUSTOM_SPAN))
    assert [s["name"] for s in spans] == ["rebuild-index", "lookup"]
    assert "error" not in spans[0] and spans[1]["error"] == "KeyError"
    assert all(s["thread"] == "MainThread" and float(s["duration_ms"]) >= 0 for s in spans)
    launch = json.loads(agent_records(c.APP_LAUNCH)[-1].value)
    assert launch["ready"] > 0 and launch["duration_s"] == pytest.approx(
        launch["ready"] - launch["process_start"], abs=1e-5
    )


class FailsToStart:
    name: ClassVar[str] = "fails-to-start"

    def start(self, ctx: AgentContext) -> None:
        raise OSError("no such device")

    def stop(self) -> None:
        pass

    def after_fork_child(self) -> None:
        pass


class FailsWhileSampling:
    name: ClassVar[str] = "fails-while-sampling"
    instances: ClassVar[list[FailsWhileSampling]] = []

    def __init__(self) -> None:
        self.samples = 0
        self.stopped = False
        FailsWhileSampling.instances.append(self)

    def start(self, ctx: AgentContext) -> None:
        ctx.every(0.01, self.sample, self)

    def sample(self) -> None:
        self.samples += 1
        if self.samples == 3:
            raise ZeroDivisionError("bad sample")

    def stop(self) -> None:
        self.stopped = True

    def after_fork_child(self) -> None:
        pass


@pytest.fixture
def faulty_monitors():
    saved = list(agent_api._holder.extra_factories)
    FailsWhileSampling.instances.clear()
    yield
    agent_api._holder.extra_factories[:] = saved


@pytest.mark.usefixtures("faulty_monitors")
def test_failing_monitors_are_disabled_and_recorded_and_the_app_never_sees_it(
    hawkwatch_home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    register_monitor(FailsToStart)
    register_monitor(FailsWhileSampling)
    with caplog.at_level(logging.WARNING, logger="hawkwatch"):
        assert hawkwatch.start(resources_interval_s=0.05, imports_enabled=False) is True
        assert wait_for(lambda: len(agent_records(c.HAWKWATCH_ERROR)) >= 2)

    errors = {e["plugin"]: e for e in json_values(agent_records(c.HAWKWATCH_ERROR))}
    assert errors["fails-to-start"]["phase"] == "start"
    assert "OSError: no such device" in str(errors["fails-to-start"]["error"])
    assert errors["fails-while-sampling"]["phase"] == "run"
    assert "ZeroDivisionError: bad sample" in str(errors["fails-while-sampling"]["error"])
    assert "Traceback" in str(errors["fails-while-sampling"]["traceback"])
    sampler = FailsWhileSampling.instances[0]
    assert sampler.stopped
    assert sampler.samples == 3
    # the built-in monitors carry on
    assert wait_for(lambda: len(agent_records(c.MEMORY_RESIDENT)) >= 1)
    agent = current_agent()
    assert agent is not None
    names = [m.name for m in agent.monitors]
    assert names == [
        *("crash", "launch", "gc", "resources", "stall", "cpu", "memory", "network", "io")
    ]
    assert sum("fails-while-sampling" in r.getMessage() for r in caplog.records) == 1


def test_unknown_option_is_recorded_not_raised(
    hawkwatch_home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="hawkwatch"):
        assert hawkwatch.start(resources_intervall_s=1, **QUIET) is True
    errors = json_values(agent_records(c.HAWKWATCH_ERROR))
    assert errors[0]["phase"] == "config"
    assert "resources_intervall_s" in str(errors[0]["error"])
    assert "resources.interval_s" in str(errors[0]["error"])
    assert any("resources_intervall_s" in r.getMessage() for r in caplog.records)


def test_exit_records_app_exit_and_a_clean_exit_state(hawkwatch_home: Path) -> None:
    hawkwatch.start(**QUIET)
    agent = current_agent()
    assert agent is not None and agent.session is not None
    runtime.at_exit()
    records = agent.session.records().records
    [record] = [r for r in records if r.collection == c.EXIT_STATE]
    state = ExitState.from_record(record)
    assert state == ExitState(
        clean=True,
        exit_code=None,
        signal=None,
        signal_name=None,
        reason="unknown",
        exception=None,
        source="agent",
        time=state.time,
    )
    assert record.key == f"{state.time:.6f}"
    # every field is written, null when unknown (readers of older records rely on the names)
    assert list(json.loads(record.value)) == [
        "clean",
        "exit_code",
        "signal",
        "signal_name",
        "reason",
        "exception",
        "source",
        "time",
    ]
    assert json.loads(records[-2].value)["event"] == "App::Exit"
    assert current_agent() is None


def test_after_stop_the_api_does_nothing(hawkwatch_home: Path) -> None:
    hawkwatch.start(**QUIET)
    hawkwatch.stop()
    hawkwatch.event("ignored")
    with hawkwatch.span("ignored"):
        pass
    hawkwatch.mark_ready()
    session = list_sessions(hawkwatch_home)[0]
    names = [json.loads(r.value)["event"] for r in session.records(c.CUSTOM_TIME_EVENT)]
    assert names == ["App::Start", "hawkwatch::Stop"]


def test_an_unwritable_home_means_no_agent_and_no_exception(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("HAWKWATCH_HOME", str(blocker))
    monkeypatch.chdir(tmp_path)
    assert hawkwatch.start(**QUIET) is False
    assert current_agent() is None
    hawkwatch.event("still fine")


def test_errors_survived_are_recorded_at_most_ten_per_plugin_and_minute(
    hawkwatch_home: Path,
) -> None:
    hawkwatch.start(**QUIET)
    for number in range(25):
        runtime.report_error("noisy", "run", ValueError(f"bad value {number}"))
    runtime.report_error("other", "run", "a message, not an exception")
    errors = json_values(agent_records(c.HAWKWATCH_ERROR))
    noisy = [e for e in errors if e["plugin"] == "noisy"]
    assert [e["error"] for e in noisy] == [f"ValueError: bad value {n}" for n in range(10)]
    assert "Traceback" not in str(noisy[0].get("traceback", ""))  # never raised: no frames
    assert [e["error"] for e in errors if e["plugin"] == "other"] == ["a message, not an exception"]
    agent = current_agent()
    assert agent is not None and agent.errors_dropped == 15


def test_report_error_without_an_agent_never_raises() -> None:
    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no text")

    runtime.report_error("any", "run", Unprintable())  # nothing to record into, nothing raised


class ForkAware:
    name: ClassVar[str] = "fork-aware"
    calls: ClassVar[list[str]] = []

    def start(self, ctx: AgentContext) -> None:
        self.calls.append("start")

    def before_fork(self) -> None:
        self.calls.append("before_fork")

    def after_fork_in_parent(self) -> None:
        self.calls.append("after_fork_in_parent")

    def after_fork_child(self) -> None:
        self.calls.append("after_fork_child")

    def stop(self) -> None:
        self.calls.append("stop")


@pytest.mark.usefixtures("faulty_monitors")
def test_the_runtime_calls_each_monitors_fork_lifecycle(hawkwatch_home: Path) -> None:
    import os
    import warnings

    ForkAware.calls.clear()
    register_monitor(ForkAware)
    hawkwatch.start(**QUIET)
    read, write = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # pytest's own threads
        pid = os.fork()
    if pid == 0:  # the child: report what it saw, never return into pytest
        try:
            os.write(write, ",".join(ForkAware.calls).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        in_child = pipe.read().decode()
    os.waitpid(pid, 0)
    wait_for(lambda: "after_fork_in_parent" in ForkAware.calls)  # 3.13+: at the next call
    assert in_child == "start,before_fork,after_fork_child,start"
    assert ForkAware.calls == ["start", "before_fork", "after_fork_in_parent"]
    hawkwatch.stop()
    assert ForkAware.calls[-1] == "stop"


# A monitor whose before-fork step imports ``logging``, as an agent thread's first message would
# while the thread is being stopped for the fork: ``logging`` then registers its fork hooks in
# the middle of this fork.
LOGGING_IMPORTED_DURING_A_FORK = """
import os, sys, threading
import hawkwatch
from hawkwatch.agent import register_monitor

class ImportsLoggingBeforeFork:
    name = "imports-logging"
    def start(self, ctx): pass
    def stop(self): pass
    def after_fork_child(self): pass
    def before_fork(self):
        import logging
        return 0

register_monitor(ImportsLoggingBeforeFork)
hawkwatch.start(resources_enabled=False, imports_enabled=False, gc_enabled=False)
print("logging before the fork:", "logging" in sys.modules, flush=True)
pid = os.fork()
if pid == 0:
    import logging
    logging.getLogger("app").warning("the child logs")
    os._exit(0)
os.waitpid(pid, 0)
import logging
worker = threading.Thread(target=lambda: logging.getLogger("app").warning("a thread logs"))
worker.start()
worker.join(10)
print("hung" if worker.is_alive() else "logging works", flush=True)
os._exit(0)
"""


def test_logging_imported_during_a_fork_prints_nothing_and_its_lock_is_free(
    hawkwatch_home: Path, tmp_path: Path
) -> None:
    done = run_script(tmp_path, LOGGING_IMPORTED_DURING_A_FORK)
    assert done.stdout.splitlines() == ["logging before the fork: False", "logging works"]
    assert "un-acquired" not in done.stderr and "Exception ignored" not in done.stderr
    assert "the child logs" in done.stderr and "a thread logs" in done.stderr
