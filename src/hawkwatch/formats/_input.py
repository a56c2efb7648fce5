"""Reading an input file named on the command line: bounded, and never blocking on a FIFO."""

from __future__ import annotations

from pathlib import Path

from hawkwatch.errors import FormatError, StoreError
from hawkwatch.store.files import read_regular


def read_input(target: Path, limit: int, what: str) -> bytes:
    """The bytes of an input file, refusing what is missing, not a regular file (a FIFO is
    never opened) or larger than ``limit``, each with one ``FormatError`` line."""
    if not target.exists():
        raise FormatError(str(target), "no such file")
    try:
        data = read_regular(target, limit + 1)
    except StoreError as exc:
        raise FormatError(str(target), str(exc).removeprefix(f"{target}: ")) from exc
    if len(data) > limit:
        raise FormatError(str(target), f"larger than {limit // 2**20} MiB; not {what}")
    return data
