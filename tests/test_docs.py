"""The reference docs list what the code has: every option, every collection name."""

from __future__ import annotations

from pathlib import Path

from hawkwatch.config import option_specs
from hawkwatch.model import collections as c

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_every_option_and_its_variable_is_documented() -> None:
    text = (DOCS / "configuration.md").read_text()
    for spec in option_specs():
        assert f"`{spec.name}`" in text, spec.name
        assert f"`{spec.env_var}`" in text, spec.env_var


def test_every_collection_the_agent_writes_is_documented() -> None:
    text = (DOCS / "collections.md").read_text()
    written = [
        c.LAUNCH_TIME,
        c.MEMORY_RESIDENT,
        c.RESIDENT_FOOTPRINT,
        c.AVAILABLE_MEMORY,
        c.CPU,
        c.THREADS_COUNT,
        c.GC_PAUSE,
        c.APP_LAUNCH,
        c.IMPORT_TIME,
        c.CUSTOM_TIME_EVENT,
        c.CUSTOM_SPAN,
        c.EXIT_STATE,
        c.HAWKWATCH_ERROR,
    ]
    for name in written:
        assert f"| `{name}` |" in text, name
