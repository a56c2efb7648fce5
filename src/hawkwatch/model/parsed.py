"""The result shape of every tolerant reader: what was valid, and what was skipped."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

from hawkwatch.model.record import Skipped

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Parsed(Generic[T]):
    """A reader's result: ``value`` holds everything usable, ``skipped`` says what was not."""

    value: T
    skipped: list[Skipped] = field(default_factory=list)
