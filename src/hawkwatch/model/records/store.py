"""What the store itself records: lines it had to drop while the disk could not take them."""

from __future__ import annotations

from typing import Any, ClassVar

from hawkwatch.model import collections as c
from hawkwatch.model.records._codec import Count, Finite, JsonRecord, parse_number, time_key


class StoreDropped(JsonRecord, frozen=True):
    """Records lost while ``records.mtlog`` could not be written (disk full, quota, I/O error).

    Written once the file is writable again; key: when the first write failed.
    """

    collection: ClassVar[str] = c.STORE_DROPPED

    since: Finite
    until: Finite
    records: Count
    bytes: Count
    reason: str

    def record_key(self) -> str:
        return time_key(self.since)

    @classmethod
    def fields_from_key(cls, key: str) -> dict[str, Any]:
        return {"since": parse_number(key)}
