"""Reading files that may be anything: never block on a FIFO, never read without bound.

Session folders and iOS artifacts come from elsewhere; a FIFO, a directory or a huge file where
a small regular file is expected must give a clear error, not a hang or an out-of-memory kill.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from hawkwatch.errors import StoreError


def read_regular(path: Path, limit: int, *, too_big: str | None = None) -> bytes:
    """Up to ``limit`` bytes of a regular file; b"" if it does not exist.

    Anything else that exists - a directory, a FIFO (never opened, so never blocks), a file
    that cannot be read - is a ``StoreError`` naming ``path``. With ``too_big``, a file longer
    than ``limit`` is an error with that text instead of being cut.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except (FileNotFoundError, NotADirectoryError):
        return b""
    except OSError as exc:
        raise StoreError(f"{path}: cannot read: {exc.strerror}") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise StoreError(f"{path}: not a regular file")
        if too_big is not None and info.st_size > limit:
            raise StoreError(f"{path}: {too_big} ({info.st_size:,} bytes; the limit is {limit:,})")
        chunks: list[bytes] = []
        remaining = limit
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise StoreError(f"{path}: cannot read: {exc.strerror}") from exc
    finally:
        os.close(fd)


MAX_SIDE_FILE_BYTES = 256 * 1024 * 1024
"""Largest side file of a session (``dyld-images``, profiles, stack-frame trees) a reader loads."""


def read_side_file(path: Path, limit: int = MAX_SIDE_FILE_BYTES) -> bytes:
    """A session's side file: b"" when missing; ``StoreError`` naming it when it cannot be read,
    is not a regular file, or is larger than ``limit``."""
    return read_regular(path, limit, too_big="too large to read")
