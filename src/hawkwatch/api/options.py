"""``hawkwatch check-config`` as a function: every option's effective value and its source."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hawkwatch.config import load_config, option_specs


@dataclass(frozen=True, slots=True)
class OptionRow:
    option: str
    value: Any
    #: "default", "environment", a file path, or "command line"
    source: str
    env: str
    doc: str


@dataclass(frozen=True, slots=True)
class OptionTable:
    """The effective options, in documentation order, and the file they were read from."""

    file: str | None
    options: tuple[OptionRow, ...]


def effective_options(overrides: Mapping[str, str] | None = None) -> OptionTable:
    """Options as the agent would see them, checked strictly (``ConfigError`` on the first
    unknown option or bad value, in ``overrides``, the environment or the config file)."""
    loaded = load_config(overrides, strict=True)
    rows = []
    for spec in option_specs():
        section = getattr(loaded.config, spec.section) if spec.section else loaded.config
        rows.append(
            OptionRow(
                option=spec.name,
                value=getattr(section, spec.field_name),
                source=loaded.sources.get(spec.name, "default"),
                env=spec.env_var,
                doc=spec.doc,
            )
        )
    return OptionTable(str(loaded.file) if loaded.file else None, tuple(rows))
