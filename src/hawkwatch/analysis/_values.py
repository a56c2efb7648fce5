"""Tolerant readers of record keys and values; each raises ``ValueError`` with a short reason.

Record values come from other processes, older agents and iPhones: anything may be malformed.
The reasons name what was expected, so a report's findings say why a record was skipped.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, Final, TypeVar

from hawkwatch.model import Record
from hawkwatch.model.report import Finding

T = TypeVar("T")

MAX_MAGNITUDE: Final = 1e15
"""Larger numbers are no measurement (1e15 s is 30 million years, 1e15 MB a zettabyte); refusing
them keeps sums and time-weighted products far from overflow."""


def parse_number(text: str, what: str = "value") -> float:
    """A finite float written as text (``%.6f``, ``%lf``, NSNumber description, JSON number)."""
    try:
        number = float(text)
    except ValueError:
        raise ValueError(f"{what} is not a number") from None
    return _checked(number, what)


def _checked(number: float, what: str) -> float:
    if not math.isfinite(number):
        raise ValueError(f"{what} is not a finite number")
    if abs(number) > MAX_MAGNITUDE:
        raise ValueError(f"{what} is out of range")
    return number


def parse_object(text: str) -> dict[str, Any]:
    """A JSON object."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise ValueError("value is not JSON") from None
    if not isinstance(data, dict):
        raise ValueError("value is not a JSON object")
    return data


def number_field(data: dict[str, Any], name: str) -> float:
    """A required finite number (JSON number, or a numeric string as MTHawkeye sometimes writes)."""
    number = optional_number(data, name)
    if number is None:
        raise ValueError(f"missing number {name!r}")
    return number


def optional_number(data: dict[str, Any], name: str) -> float | None:
    """A finite number, or None when absent or null; ``ValueError`` when it is something else."""
    raw = data.get(name)
    if raw is None:
        return None
    if isinstance(raw, bool):
        raise ValueError(f"{name!r} is not a number")
    if isinstance(raw, int | float):
        try:
            number = float(raw)
        except OverflowError:
            raise ValueError(f"{name!r} is out of range") from None
        return _checked(number, repr(name))
    if isinstance(raw, str):
        return parse_number(raw, repr(name))
    raise ValueError(f"{name!r} is not a number")


def optional_int(data: dict[str, Any], name: str) -> int | None:
    """An integer, or None when absent, null or not an integer."""
    raw = data.get(name)
    return raw if isinstance(raw, int) and not isinstance(raw, bool) else None


def optional_text(data: dict[str, Any], name: str) -> str | None:
    """A string; other JSON values are given in compact JSON; None when absent or null."""
    raw = data.get(name)
    if raw is None:
        return None
    if isinstance(raw, str):
        return raw
    try:
        return json.dumps(raw, separators=(",", ":"), ensure_ascii=False)
    except RecursionError:
        return "(too deeply nested to show)"


def time_and_object(record: Record, time_field: str) -> tuple[float, dict[str, Any]]:
    """The record's JSON value and its time: ``time_field`` in the value, else the key."""
    data = parse_object(record.value)
    moment = optional_number(data, time_field)
    if moment is None:
        moment = parse_number(record.key, "key")
    return moment, data


class Findings:
    """Counts skipped records per (collection, reason), remembering the first key."""

    def __init__(self) -> None:
        self._found: dict[tuple[str, str], list[Any]] = {}

    def add(self, record: Record, reason: str) -> None:
        entry = self._found.setdefault((record.collection, reason), [0, record.key])
        entry[0] += 1

    def result(self) -> tuple[Finding, ...]:
        return tuple(
            Finding(collection, reason, count, first_key)
            for (collection, reason), (count, first_key) in sorted(self._found.items())
        )


def parse_each(records: list[Record], findings: Findings, parse: Callable[[Record], T]) -> list[T]:
    """``parse`` every record, in order; a record it rejects (``ValueError``) becomes a finding."""
    rows: list[T] = []
    for record in records:
        try:
            rows.append(parse(record))
        except ValueError as exc:
            findings.add(record, str(exc))
    return rows


def offset(moment: float, start: float | None) -> float | None:
    """Seconds since ``start``, or None when the start is unknown."""
    return None if start is None else moment - start
