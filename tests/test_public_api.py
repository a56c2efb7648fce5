"""The names each layer promises; changing one is a visible diff here."""

from __future__ import annotations

import hawkwatch
import hawkwatch.agent
import hawkwatch.store


def test_the_agents_whole_public_surface() -> None:
    assert sorted(hawkwatch.__all__) == sorted(
        [
            "HawkwatchError",
            "__version__",
            "event",
            "heartbeat",
            "mark_loop_thread",
            "mark_ready",
            "span",
            "start",
            "stop",
            "watch_loop",
        ]
    )
    for name in hawkwatch.__all__:
        assert hasattr(hawkwatch, name)


def test_store_layer_exports() -> None:
    assert {"AppenderFile", "RecordStore", "Session", "read_records", "list_sessions"} <= set(
        hawkwatch.store.__all__
    )
    for name in hawkwatch.store.__all__:
        assert hasattr(hawkwatch.store, name)


def test_agent_layer_exports() -> None:
    assert {"start", "stop", "register_monitor", "Monitor", "AgentContext"} <= set(
        hawkwatch.agent.__all__
    )
