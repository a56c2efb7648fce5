"""One ``collection,key,value`` record, and what a tolerant reader skipped."""

from typing import NamedTuple


class Record(NamedTuple):
    """A record as stored: three strings, the value restored exactly as it was given."""

    collection: str
    key: str
    value: str


class Skipped(NamedTuple):
    """A line a reader could not use: where it was and why."""

    line: int
    reason: str
