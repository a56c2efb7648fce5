"""Reading files that may be anything: never block on a FIFO, never read without bound.

Session folders and iOS artifacts come from elsewhere; a FIFO, a directory or a huge file where
a small regular file is expected must give a clear error, not a hang or an out-of-memory kill.

The store's writing side names its files with ``str`` paths (``path_text``): the agent's start
does not import ``pathlib``, which brings ``fnmatch``, ``re``, ``enum`` and (up to 3.12)
``urllib.parse`` with it, some 40 M instructions. Readers and the public API keep ``Path``.
"""

from __future__ import annotations

import os
import stat

from hawkwatch.errors import StoreError


def path_text(path: str | os.PathLike[str]) -> str:
    """``str(Path(path))`` without ``pathlib``: the same text, so messages and files that name
    a path read as before (``a//b/./c/`` is ``a/b/c``; ``..`` stays)."""
    text = os.fspath(path)
    if not isinstance(text, str):
        raise TypeError(f"a path must be str or os.PathLike[str], not {type(text).__name__}")
    if os.sep != "/" or os.altsep:  # pragma: no cover - Windows: pathlib's own rules
        from pathlib import Path

        return str(Path(text))
    root = ""
    if text.startswith("/"):  # POSIX keeps exactly two leading slashes
        root = "//" if text.startswith("//") and not text.startswith("///") else "/"
    parts = [part for part in text.split("/") if part and part != "."]
    return root + "/".join(parts) or "."


def path_join(folder: str, name: str) -> str:
    """``str(Path(folder) / name)`` without ``pathlib``."""
    return path_text(os.path.join(folder, name))


def path_name(text: str) -> str:
    """``Path(text).name`` of a ``path_text`` (``""`` for ``/`` and ``.``)."""
    name = text.rpartition("/")[2]
    return "" if name == "." else name


def read_regular(path: str | os.PathLike[str], limit: int, *, too_big: str | None = None) -> bytes:
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


def read_side_file(path: str | os.PathLike[str], limit: int = MAX_SIDE_FILE_BYTES) -> bytes:
    """A session's side file: b"" when missing; ``StoreError`` naming it when it cannot be read,
    is not a regular file, or is larger than ``limit``."""
    return read_regular(path, limit, too_big="too large to read")
