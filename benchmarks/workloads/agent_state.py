"""Whether the agent in this process is in the state a paired segment needs, for
``steady_paired.py``'s workloads (``steady_cpu.py``, ``steady_http.py``).

"on": an agent runs, with exactly the monitors the default config switches on (none failed at
start), the stall monitor's watchdog thread alive, and, given an asyncio loop, that loop watched
and armed (a ping of the watchdog answered). "off": no agent, no thread of the agent's left, and
``asyncio.BaseEventLoop.run_forever`` no longer wrapped.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from hawkwatch.agent.api import current_agent
from hawkwatch.agent.plugins import default_monitors
from hawkwatch.agent.plugins.stall_loops import TARGETS
from hawkwatch.config import load_config


def agent_threads() -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.name.startswith("hawkwatch"))


def default_monitor_names() -> list[str]:
    """The monitors ``hawkwatch.start()`` starts with this process's environment and folder."""
    return sorted(getattr(f, "__name__", repr(f)) for f in default_monitors(load_config().config))


def running_monitors() -> list[str]:
    agent = current_agent()
    return sorted(type(m).__name__ for m in agent.monitors) if agent is not None else []


def problems(*, expect_on: bool, loop: Any = None) -> list[str]:
    """What differs from the expected state (empty: as expected)."""
    agent = current_agent()
    threads = agent_threads()
    found = []
    if not expect_on:
        if agent is not None:
            found.append("an agent runs")
        if threads:
            found.append(f"the agent's threads are alive: {threads}")
        events = sys.modules.get("asyncio.base_events")
        if events is not None and hasattr(events.BaseEventLoop.run_forever, "__wrapped__"):
            found.append("asyncio's run_forever is still wrapped")
        return found
    if agent is None:
        return ["no agent runs"]
    running = running_monitors()
    expected = default_monitor_names()
    if running != expected:
        found.append(f"monitors {running}, the default config's {expected}")
    if "StallMonitor" in expected and "hawkwatch-stall" not in threads:
        found.append(f"no stall watchdog thread (threads: {threads})")
    if loop is not None:
        targets = [t for t in TARGETS.snapshot() if t.asyncio_loop() is loop]
        if not targets:
            found.append("the asyncio loop is not watched")
        elif not getattr(targets[0], "armed", False):
            found.append("the asyncio loop is watched but not armed (no ping answered)")
    return found
