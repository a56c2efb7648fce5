"""Opening session files without trusting what is on disk: regular files only, bounded reads,
and the lock that keeps a session folder to one writer.

A folder from an earlier run may hold anything where a file is expected: a FIFO (opening it for
reading waits forever for a writer), a device, a directory, a 2 GB file. The agent reads such
files while the app starts, so every read here opens with ``O_NONBLOCK``, checks ``S_ISREG`` on
the open descriptor (no race with a rename) and reads at most a cap.
"""

from __future__ import annotations

import errno
import os
import stat

from hawkwatch.errors import StoreError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Final

LOCK_NAME: Final = "records.lock"
SMALL_FILE_BYTES: Final = 1 << 20  # session.json, hang markers, stall-watched.json


def read_regular(path: str | os.PathLike[str], limit: int = SMALL_FILE_BYTES) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes; ``OSError`` for anything else
    (FIFO, device, directory, symlink loop, too large), without ever blocking."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        if info.st_size > limit:
            raise OSError(errno.EFBIG, f"larger than {limit} bytes", str(path))
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 16, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:  # it grew while being read
            raise OSError(errno.EFBIG, f"larger than {limit} bytes", str(path))
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_regular_text(path: str | os.PathLike[str], limit: int = SMALL_FILE_BYTES) -> str:
    """``read_regular`` decoded as UTF-8 (``ValueError`` when it is not)."""
    return read_regular(path, limit).decode("utf-8")


def lock_for_writing(folder: str) -> int | None:
    """Take the session's writer lock (``flock`` on ``records.lock``); the descriptor to keep
    open while writing, or None where the file system cannot lock.

    ``StoreError`` when another process holds it: two writers on one folder would lose and
    duplicate records. The descriptor is close-on-exec; a forked child must close its copy.
    """
    import fcntl

    try:
        os.makedirs(folder, exist_ok=True)
        fd = os.open(
            os.path.join(folder, LOCK_NAME),
            os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW,
            0o644,
        )
    except OSError as exc:
        raise StoreError(f"{folder}: cannot open {LOCK_NAME}: {exc.strerror}") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise StoreError(f"{folder}: another process is writing this session") from None
        return None  # no locking here (some network file systems): write unlocked
    return fd
