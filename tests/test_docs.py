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
    for name in c.AGENT_COLLECTIONS:
        assert f"| `{name}` |" in text, name
