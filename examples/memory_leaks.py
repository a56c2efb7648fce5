"""Three leaks at different rates amid heavy churn, and their non-leaking twins.

Run: ``hawkwatch run --memory -- python examples/memory_leaks.py`` then ``hawkwatch memory``.
Leaks: a module-level cache that never evicts, a class attribute list that only grows, and
closures kept alive by a callback list. Twins: a bounded cache, a list cleared each round, and
callbacks dropped after use — plus churn that allocates a lot and frees it all.
"""

from __future__ import annotations

import itertools
import sys
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import ClassVar


class Payload:
    """What the leaks keep (their growing type)."""

    def __init__(self, size: int) -> None:
        self.data = bytearray(size)


CACHE: dict[int, Payload] = {}
BOUNDED: OrderedDict[int, Payload] = OrderedDict()
CALLBACKS: list[Callable[[], int]] = []


class Entry:
    """What the class-attribute leak keeps."""

    def __init__(self, blob: bytes) -> None:
        self.blob = blob


class Registry:
    items: ClassVar[list[Entry]] = []


def leak_cache(i: int) -> None:
    CACHE[i] = Payload(4000)


def bounded_cache(i: int) -> None:
    BOUNDED[i] = Payload(4000)
    while len(BOUNDED) > 50:
        BOUNDED.popitem(last=False)


def leak_registry(i: int) -> None:
    Registry.items.append(Entry(b"r" * 2500 + str(i).encode()))


def cleared_list(i: int) -> None:
    batch = [Entry(b"c" * 2500 + str(i).encode()) for _ in range(20)]
    batch.clear()


def leak_callback(i: int) -> None:
    blob = b"k" * 1500 + str(i).encode()
    CALLBACKS.append(lambda: len(blob))


def used_callback(i: int) -> None:
    blob = b"u" * 1500 + str(i).encode()
    done = [lambda: len(blob)]
    done.pop()()


def churn(i: int) -> int:
    rows = [{"i": i, "name": f"row {k}", "blob": bytes(200)} for k in range(300)]
    return sum(len(r["blob"]) for r in rows)


STEPS = itertools.count()


def main(seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for step in range(20):
            n = next(STEPS)
            churn(n)
            bounded_cache(n)
            cleared_list(n)
            used_callback(n)
            leak_cache(n)
            if step % 2 == 0:
                leak_registry(n)
            if step % 4 == 0:
                leak_callback(n)
        time.sleep(0.01)


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 20.0)
