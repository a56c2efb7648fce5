"""One ``collection,key,value`` record, and what a tolerant reader skipped."""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from hawkwatch._runtime_typing import NamedTuple


class Record(NamedTuple):
    """A record as stored: three strings, the value restored exactly as it was given."""

    collection: str
    key: str
    value: str


class Skipped(NamedTuple):
    """A line a reader could not use: where it was and why."""

    line: int
    reason: str
