"""A session's HTTP requests, wherever they were stored: hawkwatch's ``network-transaction``
records and MTHawkeye's ``network-transactions`` side file (iOS), as one typed list."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TypeVar

from hawkwatch.formats.hawkeye_network import read_hawkeye_transactions
from hawkwatch.model import Parsed, Record, Skipped
from hawkwatch.model.records import NetworkAggregate, NetworkTransaction, RecordError

_Decoded = TypeVar("_Decoded", NetworkTransaction, NetworkAggregate)


def session_transactions(
    folder: str | os.PathLike[str], records: list[Record]
) -> Parsed[list[NetworkTransaction]]:
    """Typed requests of a session folder (undecodable records are skipped with a reason)."""
    own = _decoded(records, NetworkTransaction)
    hawkeye = read_hawkeye_transactions(Path(folder))
    return Parsed(own.value + hawkeye.value, own.skipped + hawkeye.skipped)


def session_aggregates(records: list[Record]) -> Parsed[list[NetworkAggregate]]:
    """The agent's ``network-aggregate`` records (every request counted, traced or not)."""
    return _decoded(records, NetworkAggregate)


def _decoded(records: list[Record], kind: type[_Decoded]) -> Parsed[list[_Decoded]]:
    """The records of ``kind``'s collection, typed (undecodable ones skipped with a reason)."""
    found: list[_Decoded] = []
    skipped: list[Skipped] = []
    for number, record in enumerate(records, start=1):
        if record.collection != kind.collection:
            continue
        try:
            found.append(kind.from_record(record))
        except RecordError as exc:
            skipped.append(Skipped(number, f"{record.collection} {record.key}: {exc}"))
    return Parsed(found, skipped)
