"""``network-transaction``: one HTTP request (one hop of a redirect chain) and its phases.

Phases follow ``detectors.md`` §6.4 (TLS is its own phase, not inside TCP; a phase that did not
happen is null). The URL and headers were redacted by the agent before this record was made.
"""

from __future__ import annotations

from typing import Any, ClassVar

import msgspec

from hawkwatch.model import collections as c
from hawkwatch.model.records._codec import (
    Count,
    Finite,
    JsonRecord,
    NonNegative,
    parse_number,
)

PHASES = ("queue", "dns", "tcp", "tls", "send", "ttfb", "receive", "total")


class Phases(msgspec.Struct, frozen=True):
    """Milliseconds per phase; None when the phase did not happen (or was not observable).
    Positional too (in ``PHASES`` order), for the agent's one per request."""

    queue: NonNegative | None = None
    dns: NonNegative | None = None
    tcp: NonNegative | None = None
    tls: NonNegative | None = None
    send: NonNegative | None = None
    ttfb: NonNegative | None = None
    receive: NonNegative | None = None
    total: NonNegative | None = None


class CallSite(msgspec.Struct, frozen=True, array_like=True):
    """An app frame that made the request: ``[function, file, line]``."""

    function: str
    file: str
    line: int


class NetworkTransaction(JsonRecord, frozen=True, kw_only=False):
    """One request; key: its start (Unix s) and a per-process index, ``<start>_<index>``.

    Positional, unlike other records: the agent makes one per request, and msgspec matches 21
    keywords ten times slower than it takes 21 arguments (so ``index``, with a default, comes
    after the fields without one).
    """

    collection: ClassVar[str] = c.NETWORK_TRANSACTION

    start: Finite
    method: str
    url: str
    host: str
    library: str
    index: Count = 0
    status: int | None = None
    http_version: str | None = None
    reused: bool | None = None
    phases_ms: Phases = msgspec.field(default_factory=Phases)
    request_bytes: Count | None = None
    response_bytes: Count | None = None
    response_header_bytes: Count | None = None
    error: str | None = None
    failed_phase: str | None = None
    thread: str | None = None
    task: str | None = None
    on_loop_thread: bool = False
    frames: tuple[CallSite, ...] = ()
    redirect_to: str | None = None
    query_digest: str | None = None
    """A short digest of the query as sent (its values are redacted in ``url``): tells two
    requests to the same path with different parameters apart, without keeping them."""
    traced: bool = True
    """False: a request the agent did not trace (head sampling, ``network-aggregate``), recorded
    because it failed, was slow or blocked a loop's thread: its phases are null but ``total``,
    and ``reused``, sizes, thread and call sites are unknown."""

    def record_key(self) -> str:
        return start_index_key(self.start, self.index)

    @classmethod
    def fields_from_key(cls, key: str) -> dict[str, Any]:
        return start_index_fields(key)


def start_index_key(start: float, index: int) -> str:
    """``<start>_<index>``: the key of the network collections (time_key's format, one step)."""
    return f"{start:.6f}_{index}"


def start_index_fields(key: str) -> dict[str, Any]:
    """The fields ``start_index_key`` made ``key`` of (an index that is not a number: none)."""
    moment, _, index = key.partition("_")
    fields: dict[str, Any] = {"start": parse_number(moment)}
    if index.isdigit():
        fields["index"] = int(index)
    return fields
