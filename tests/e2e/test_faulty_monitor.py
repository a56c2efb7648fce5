"""A monitor that fails, in a real program under ``hawkwatch run``: disabled, recorded, harmless."""

from __future__ import annotations

import sys

from hawkwatch.model import collections as c
from tests.e2e.conftest import Runner, by_collection, json_of

APP = """
import sys, time
import hawkwatch
from hawkwatch.agent import register_monitor

class BrokenAtStart:
    name = "broken-at-start"
    def start(self, ctx):
        raise PermissionError("cannot open /dev/perf")
    def stop(self): pass
    def after_fork_child(self): pass

class BrokenWhileSampling:
    name = "broken-while-sampling"
    def start(self, ctx):
        self.n = 0
        ctx.every(0.05, self.sample, self)
    def sample(self):
        self.n += 1
        if self.n == 2:
            raise ValueError("sample went wrong")
        print("sample", self.n, flush=True)
    def stop(self):
        print("stopped after", self.n, flush=True)
    def after_fork_child(self): pass

register_monitor(BrokenAtStart)
register_monitor(BrokenWhileSampling)
time.sleep(0.5)
hawkwatch.event("still-running")
print("app finished its work", flush=True)
sys.exit(7)
"""


def test_failing_monitors_are_disabled_recorded_and_the_app_keeps_its_exit_code(
    runner: Runner,
) -> None:
    script = runner.script("app.py", APP)
    result = runner.hawkwatch("run", "--", sys.executable, str(script))
    assert result.returncode == 7
    assert "app finished its work" in result.stdout
    assert "sample 1" in result.stdout and "sample 2" not in result.stdout
    assert "stopped after 2" in result.stdout  # the runtime stopped it, once
    assert "Traceback" not in result.stderr  # one log line per failure, no traceback
    assert sum("broken-" in line for line in result.stderr.splitlines()) == 2

    records = by_collection(runner.only_session())
    errors = {e["plugin"]: e for e in json_of(records[c.HAWKWATCH_ERROR])}
    assert errors["broken-at-start"]["phase"] == "start"
    assert "PermissionError: cannot open /dev/perf" in str(errors["broken-at-start"]["error"])
    assert errors["broken-while-sampling"]["phase"] == "run"
    assert "ValueError: sample went wrong" in str(errors["broken-while-sampling"]["error"])
    assert "raise ValueError" in str(errors["broken-while-sampling"]["traceback"])
    events = [e["event"] for e in json_of(records[c.CUSTOM_TIME_EVENT])]
    assert events == ["App::Start", "still-running", "App::Exit"]
    assert len(records[c.MEMORY_RESIDENT]) >= 1  # the built-in monitors were not affected
    assert json_of(records[c.EXIT_STATE])[-1]["exit_code"] == 7
