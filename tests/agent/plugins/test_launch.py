"""Launch timing: milestones in order, the last record carrying ready and the duration."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import hawkwatch
from hawkwatch.model import collections as c
from tests.builders import agent_records

pytestmark = pytest.mark.usefixtures("stopped_agent")


def test_app_launch_is_rewritten_at_ready(hawkwatch_home: Path) -> None:
    hawkwatch.start(resources_enabled=False, gc_enabled=False, imports_enabled=False)
    first = json.loads(agent_records(c.APP_LAUNCH)[-1].value)
    assert first["ready"] == 0 and first["duration_s"] == 0
    hawkwatch.mark_ready()
    records = agent_records(c.APP_LAUNCH)
    assert len(records) == 2 and {r.key for r in records} == {"0"}
    last = json.loads(records[-1].value)
    assert last["process_start"] <= last["agent_started"] <= last["ready"]
    assert last["duration_s"] == pytest.approx(last["ready"] - last["process_start"], abs=1e-5)


def test_disabled_launch_monitor_writes_no_app_launch(hawkwatch_home: Path) -> None:
    hawkwatch.start(
        launch_enabled=False, resources_enabled=False, gc_enabled=False, imports_enabled=False
    )
    hawkwatch.mark_ready()
    assert agent_records(c.APP_LAUNCH) == []
    events = [json.loads(r.value)["event"] for r in agent_records(c.CUSTOM_TIME_EVENT)]
    assert events == ["App::Start", "App::Ready"]
