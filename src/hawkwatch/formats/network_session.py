"""A session's HTTP requests, wherever they were stored: hawkwatch's ``network-transaction``
records and MTHawkeye's ``network-transactions`` side file (iOS), as one typed list."""

from __future__ import annotations

import os
from pathlib import Path

from hawkwatch.formats.hawkeye_network import read_hawkeye_transactions
from hawkwatch.model import Parsed, Record, Skipped
from hawkwatch.model.records import NetworkAggregate, NetworkTransaction, RecordError


def session_transactions(
    folder: str | os.PathLike[str], records: list[Record]
) -> Parsed[list[NetworkTransaction]]:
    """Typed requests of a session folder (undecodable records are skipped with a reason)."""
    found: list[NetworkTransaction] = []
    skipped: list[Skipped] = []
    for number, record in enumerate(records, start=1):
        if record.collection != NetworkTransaction.collection:
            continue
        try:
            found.append(NetworkTransaction.from_record(record))
        except RecordError as exc:
            skipped.append(Skipped(number, f"{record.collection} {record.key}: {exc}"))
    hawkeye = read_hawkeye_transactions(Path(folder))
    return Parsed(found + hawkeye.value, skipped + hawkeye.skipped)


def session_aggregates(records: list[Record]) -> Parsed[list[NetworkAggregate]]:
    """The agent's ``network-aggregate`` records (every request counted, traced or not)."""
    found: list[NetworkAggregate] = []
    skipped: list[Skipped] = []
    for number, record in enumerate(records, start=1):
        if record.collection != NetworkAggregate.collection:
            continue
        try:
            found.append(NetworkAggregate.from_record(record))
        except RecordError as exc:
            skipped.append(Skipped(number, f"{record.collection} {record.key}: {exc}"))
    return Parsed(found, skipped)
