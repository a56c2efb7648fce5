"""Opening the appender's files: regular files only, and a buffer whose blocks are reserved.

A FIFO planted where a store file belongs must not block the open; a sparse buffer on a nearly
full filesystem must fail here, not kill the process with SIGBUS when a page is first touched.
"""

from __future__ import annotations

import errno
import mmap
import os
import stat

from hawkwatch.errors import StoreError


def open_regular(path: str | os.PathLike[str], flags: int) -> int:
    """Open a regular file for writing; ``StoreError`` naming ``path`` for anything else.

    ``O_NONBLOCK`` keeps a FIFO planted at ``path`` from blocking the open forever.
    """
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise StoreError(f"{path}: not a regular file")
    except OSError:
        pass
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), 0o644)
    except OSError as exc:
        raise StoreError(f"{path}: cannot open for writing: {exc.strerror}") from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise StoreError(f"{path}: not a regular file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def map_buffer(path: str | os.PathLike[str], size: int) -> mmap.mmap:
    fd = open_regular(path, os.O_RDWR | os.O_CREAT)
    try:
        if os.fstat(fd).st_size != size:
            os.ftruncate(fd, size)
        _reserve_blocks(fd, path, size)
        return mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    except OSError as exc:
        raise StoreError(f"{path}: cannot map the buffer: {exc.strerror}") from exc
    finally:
        os.close(fd)


def _reserve_blocks(fd: int, path: str | os.PathLike[str], size: int) -> None:
    """Make the filesystem back every page of the buffer now.

    A sparse file (``ftruncate`` alone) maps fine, but touching a page the filesystem then
    cannot allocate kills the process with SIGBUS. ``posix_fallocate`` reserves the blocks (a
    no-op for those already there); where it is unsupported the file is written out instead.
    """
    try:
        os.posix_fallocate(fd, 0, size)
        return
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
            raise _no_room(path, size, exc) from exc
    except AttributeError:  # no posix_fallocate on this platform (macOS)
        pass
    try:
        data = os.pread(fd, size, 0).ljust(size, b"\x00")
        written = 0
        while written < size:
            written += os.pwrite(fd, data[written:], written)
        os.fsync(fd)
    except OSError as exc:
        raise _no_room(path, size, exc) from exc


def _no_room(path: str | os.PathLike[str], size: int, exc: OSError) -> StoreError:
    return StoreError(
        f"{path}: cannot reserve the {size // 1024} KB buffer ({exc.strerror}); not recording"
    )
