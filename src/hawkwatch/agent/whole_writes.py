"""Unbuffered standard streams that write all of every write while py-spy stops the program.

With ``python -u`` or ``PYTHONUNBUFFERED`` (the usual setting in containers), ``sys.stdout`` and
``sys.stderr`` are text layers straight over the raw file, and the text layer ignores how many
bytes a raw write took (CPython gh-85393, open): a short write loses the rest of the text. A
write to a full pipe comes back short when the writer is stopped part way, and py-spy in
blocking mode (``hawkwatch run --profile``) stops the program up to 100 times a second: a
program printing 200 kB lines to a slow reader lost the ends of 273 of 2,735 of them. The same
streams over a buffered layer that flushes after each write keep ``-u``'s promise (every write
has reached the file before it returns) and write the rest of a short write, as buffered
streams always do.
"""

from __future__ import annotations

import io
import os
import sys


class _FlushedWriter(io.BufferedWriter):
    """A buffered writer that flushes at once: unbuffered to the reader, whole writes."""

    def write(self, data: bytes, /) -> int:  # type: ignore[override]
        written = super().write(data)
        self.flush()
        return written


def make_writes_whole() -> None:
    """Give unbuffered ``sys.stdout``/``sys.stderr`` a layer that writes short writes' rest
    (streams already buffered, or not plain, are left as they are; nothing on Windows).

    Meant for the bootstrap, before the program's code holds the streams."""
    if os.name != "posix":
        return
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if type(stream) is not io.TextIOWrapper or type(stream.buffer) is not io.FileIO:
            continue  # buffered already (whole writes), or the program's own stream
        raw = stream.buffer
        if raw.closed or not raw.writable():
            continue
        own_raw = io.FileIO(raw.fileno(), "wb", closefd=False)  # the old stream's close spares it
        own_raw.name = raw.name  # "<stdout>", as before
        whole = io.TextIOWrapper(
            _FlushedWriter(own_raw),
            encoding=stream.encoding,
            errors=stream.errors,
            newline="\n",  # as CPython opens them on POSIX: no translation
            line_buffering=stream.line_buffering,
            write_through=True,
        )
        whole.mode = stream.mode  # type: ignore[misc]
        stream.flush()
        if getattr(sys, f"__{name}__") is stream:
            setattr(sys, f"__{name}__", whole)
        setattr(sys, name, whole)
