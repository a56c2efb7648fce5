"""Files opened under the I/O canary behave exactly as without it: each scenario runs twice in the
same test, plain and watched, and the two results (values, exceptions, bytes on disk) are equal.
"""

from __future__ import annotations

import copy
import gc
import io
import mmap
import os
import pickle
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hawkwatch.agent.plugins import io_hooks
from hawkwatch.agent.plugins.io_raw import CanaryFileIO
from tests.agent.plugins.io_support import both, canary, outcome

TEXT = "first line\nsecond — ünïcode\r\nthird\rfourth\n" * 50
BLOB = bytes(range(256)) * 40


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "text.txt").write_bytes(TEXT.encode("utf-8"))
    (tmp_path / "blob.bin").write_bytes(BLOB)
    return tmp_path


def read_with(*args: Any, count: int = -1, **kwargs: Any) -> Any:
    """Open, read, close: the file object itself would never compare equal."""
    with open(*args, **kwargs) as f:
        return f.read(count)


def same(scenario: Callable[[], Any]) -> Any:
    plain, wrapped = both(scenario)
    assert wrapped == plain
    return plain


def test_text_mode_reads_lines_seeks_and_tells(folder: Path) -> None:
    def scenario() -> list[Any]:
        with open(folder / "text.txt", encoding="utf-8") as f:
            got: list[Any] = [f.readline(), f.readline(), f.tell(), f.read(7)]
            mark = f.tell()
            got += [f.readlines()[:3], f.tell()]
            f.seek(mark)
            got += [f.read(5), f.seek(0, io.SEEK_END), f.read(), list(f)]
            f.seek(0)
            got += [sum(1 for _ in f), f.newlines, f.encoding, f.mode, f.line_buffering]
        return got

    result = same(scenario)
    assert result[0] == "first line\n"  # a test that can fail: the plain run read the file


def test_binary_mode_readinto_peek_read1_seek(folder: Path) -> None:
    def scenario() -> list[Any]:
        with open(folder / "blob.bin", "rb") as f:
            into = bytearray(1000)
            view = memoryview(bytearray(333))
            got: list[Any] = [f.readinto(into), bytes(into), f.readinto(view), bytes(view)]
            got += [f.tell(), f.peek(3)[:3], f.read1(100), f.readline(), f.seek(-10, io.SEEK_END)]
            got += [f.read(), f.read(), f.seekable(), f.readable(), f.writable(), f.mode]
        return got

    same(scenario)


def test_unbuffered_raw_file(folder: Path) -> None:
    def scenario() -> list[Any]:
        with open(folder / "blob.bin", "rb", buffering=0) as f:
            into = bytearray(100)
            got: list[Any] = [type(f).__mro__[-4:], f.read(10), f.readinto(into), bytes(into)]
            got += [f.read(None)[:5], f.read(), f.seek(5), f.readall()[:5], f.tell()]
            got += [f.readline(), f.name == str(folder / "blob.bin"), f.closefd, repr(f)]
        return got

    same(scenario)


@pytest.mark.parametrize("mode", ["w", "a", "x", "r+", "w+", "a+", "wb", "ab", "r+b", "w+b", "xb"])
def test_every_write_mode_leaves_the_same_bytes(tmp_path: Path, mode: str) -> None:
    def scenario() -> list[Any]:
        path = tmp_path / f"out-{mode.replace('+', 'p')}"
        path.write_bytes(b"existing\n")
        if "x" in mode:
            path.unlink()
        data: Any = "héllo\nworld\n" if "b" not in mode else "héllo\nworld\n".encode()
        got: list[Any] = []
        with open(path, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as f:
            got += [f.write(data), f.tell()]
            if "+" in mode:
                f.seek(0)
                got.append(f.read())
            got += [f.truncate(4), f.mode]
        got.append(path.read_bytes())
        got.append(outcome(lambda: open(path, mode).close()))  # x on an existing file
        return got

    same(scenario)


@pytest.mark.parametrize("newline", [None, "", "\n", "\r", "\r\n"])
def test_newline_translation(tmp_path: Path, newline: str | None) -> None:
    def scenario() -> list[Any]:
        path = tmp_path / "nl.txt"
        with open(path, "w", encoding="utf-8", newline=newline) as f:
            f.write("a\nb\r\nc\rd")
        with open(path, encoding="utf-8", newline=newline) as f:
            lines = f.readlines()
        return [path.read_bytes(), lines]

    same(scenario)


def test_encodings_and_their_errors(folder: Path) -> None:
    def scenario() -> list[Any]:
        text = folder / "text.txt"
        return [
            outcome(lambda: read_with(text, encoding="utf-16")),
            outcome(lambda: read_with(text, encoding="latin-1", errors="replace", count=40)),
            outcome(lambda: read_with(text, encoding="ascii")),
            outcome(lambda: read_with(text, encoding="ascii", errors="surrogateescape")[-9:]),
            outcome(lambda: read_with(text, encoding="no-such-codec")),
        ]

    result = same(scenario)
    assert result[2][0] == "UnicodeDecodeError"
    assert result[4][0] == "LookupError"


def test_mmap_of_the_descriptor(folder: Path) -> None:
    def scenario() -> list[Any]:
        path = folder / "mapped.bin"
        path.write_bytes(BLOB)
        with open(path, "r+b") as f, mmap.mmap(f.fileno(), 0) as mapped:
            got: list[Any] = [mapped[:4], mapped.find(b"\xff\x00"), len(mapped)]
            mapped[0:4] = b"HAWK"
            mapped.flush()
        got.append(path.read_bytes()[:8])
        return got

    same(scenario)


@pytest.mark.parametrize("buffering", [-1, 0])
def test_pickling_and_copying_are_refused_the_same_way(folder: Path, buffering: int) -> None:
    def scenario() -> list[Any]:
        with open(folder / "blob.bin", "rb", buffering=buffering) as f:
            got = [outcome(lambda: pickle.dumps(f)), outcome(lambda: copy.copy(f))]
            got.append(outcome(lambda: pickle.dumps(f, protocol=0)))
        with open(folder / "text.txt", encoding="utf-8") as t:
            got += [outcome(lambda: pickle.dumps(t)), outcome(lambda: pickle.dumps(t.buffer.raw))]
        return got

    result = same(scenario)
    assert result[0][0] == "TypeError"


def test_wrapped_files_are_instances_of_every_io_class(folder: Path) -> None:
    def scenario() -> list[Any]:
        with open(folder / "text.txt", encoding="utf-8") as f:
            raw = f.buffer.raw
            checks = [
                isinstance(f, io.TextIOWrapper),
                isinstance(f, io.TextIOBase),
                isinstance(f.buffer, io.BufferedReader),
                isinstance(raw, io.FileIO),
                isinstance(raw, io.RawIOBase),
                isinstance(raw, io.IOBase),
                repr(f),
                repr(f.buffer),
                repr(raw),
                raw.mode,
                f.buffer.mode,
            ]
        return [*checks, f.closed, raw.closed]

    same(scenario)
    with canary(), open(folder / "blob.bin", "rb") as f:
        assert type(f.raw) is CanaryFileIO  # the one difference, on purpose


def test_wrong_arguments_fail_exactly_as_io_open_says(folder: Path) -> None:
    text = str(folder / "text.txt")

    def scenario() -> list[Any]:
        calls: list[Callable[[], Any]] = [
            lambda: read_with(folder / "missing.txt"),
            lambda: read_with(folder),
            lambda: read_with(text, "rw"),
            lambda: read_with(text, "rr"),
            lambda: read_with(text, "q"),
            lambda: read_with(text, "rb", encoding="utf-8"),
            lambda: read_with(text, "rb", newline=""),
            lambda: read_with(text, "r", buffering=0),
            lambda: read_with(text, "r", newline="x"),
            lambda: read_with(text, "r", newline=5),
            lambda: read_with(text, "r", encoding=5),
            lambda: read_with(text, buffering="big"),
            lambda: read_with(3.5),
            lambda: read_with([text]),
            read_with,
            lambda: read_with(text, foo=1),
            lambda: read_with(text, "r", -1, None, None, None, True, None, "extra"),
            lambda: read_with(text, mode=b"r"),
            lambda: read_with(text, "r", buffering=-5, count=3),
        ]
        return [outcome(call) for call in calls]

    result = same(scenario)
    assert result[0][0] == "FileNotFoundError"
    assert result[-1] == ("value", "fir")


def test_descriptors_openers_fdopen_and_pathlib(folder: Path) -> None:
    def scenario() -> list[Any]:
        path = folder / "blob.bin"
        fd = os.open(path, os.O_RDONLY)
        with open(fd, "rb", closefd=False) as f:
            got: list[Any] = [f.read(5), f.name == fd]
        got.append(os.read(fd, 5))
        with os.fdopen(fd, "rb") as f:
            got.append(f.read(5))
        got.append(outcome(lambda: os.fstat(fd)))
        with open(path, "rb", opener=os.open) as f:
            got.append(f.read(3))
        out = folder / "pathlib.txt"
        got += [out.write_text("x\ny", encoding="utf-8"), out.read_bytes(), out.read_text("utf-8")]
        wfd = os.open(folder / "os.bin", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        got += [os.write(wfd, b"abc"), os.write(wfd, memoryview(b"defg")), os.close(wfd)]
        got.append((folder / "os.bin").read_bytes())
        return got

    result = same(scenario)
    assert result[0] == BLOB[:5]


def test_line_buffered_text_reaches_the_disk_at_each_newline(tmp_path: Path) -> None:
    def scenario() -> list[Any]:
        path = tmp_path / "lines.txt"
        with open(path, "w", buffering=1, encoding="utf-8") as f:
            f.write("one\ntw")
            on_disk = path.read_bytes()
            got = [on_disk, f.line_buffering]
        return got

    assert same(scenario)[0] == b"one\ntw"  # a newline flushes what is pending


def test_an_unclosed_file_still_warns_and_closes(folder: Path) -> None:
    def scenario() -> list[Any]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            f = open(folder / "text.txt", encoding="utf-8")  # noqa: SIM115 - dropped on purpose
            raw = f.buffer.raw
            f.read(3)
            del f
            gc.collect()
        return [[(w.category, str(w.message)) for w in caught], raw.closed]

    result = same(scenario)
    assert result[1] is True and result[0][0][0] is ResourceWarning


def test_open_stored_as_a_class_attribute_is_not_bound(folder: Path) -> None:
    def scenario() -> list[Any]:
        class Reader:
            opener = open

            def first(self) -> str:
                with self.opener(folder / "text.txt", encoding="utf-8") as f:
                    return f.readline()

        return [Reader().first()]

    same(scenario)
    with canary():
        assert open.__wrapped__ is io_hooks.REAL_OPEN  # type: ignore[attr-defined]
        assert open.__name__ == "open" and open.__doc__ == io_hooks.REAL_OPEN.__doc__


def test_warnings_of_io_open_name_the_callers_line(folder: Path) -> None:
    script = (
        "import warnings, sys\n"
        "from tests.agent.plugins.io_support import canary\n"
        "warnings.simplefilter('always')\n"
        "def scenario():\n"
        "    with warnings.catch_warnings(record=True) as caught:\n"
        "        warnings.simplefilter('always')\n"
        f"        open({str(folder / 'text.txt')!r}).close()\n"
        f"        open({str(folder / 'text.txt')!r}, 'rb', buffering=1).close()\n"
        "    return [(w.category.__name__, w.filename, w.lineno) for w in caught]\n"
        "plain = scenario()\n"
        "with canary():\n"
        "    wrapped = scenario()\n"
        "print(plain == wrapped, plain)\n"
    )
    import subprocess

    done = subprocess.run(
        [sys.executable, "-X", "warn_default_encoding", "-c", script],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[3],
        check=True,
    )
    assert done.stdout.startswith("True [('EncodingWarning', '<string>', 7), ('RuntimeWarning'")


@pytest.mark.parametrize("buffering", [-1, 1, 4096])
def test_a_terminal_reached_through_a_link_is_line_buffered_as_io_open_does(
    tmp_path: Path, buffering: int
) -> None:
    """The default buffering asks the raw file whether it is a terminal (as io.open does)."""
    leader, follower = os.openpty()
    try:
        link = tmp_path / "tty"  # outside /dev: the canary wraps it
        link.symlink_to(os.ttyname(follower))

        def scenario() -> list[Any]:
            with open(link, "w", buffering=buffering, encoding="utf-8") as f:
                got = [f.line_buffering, f.buffer.raw.isatty(), type(f.buffer).__name__]
                f.write("line\n")
            got.append(os.read(leader, 100).replace(b"\r", b""))  # after close: never blocks
            return got

        result = same(scenario)
        assert result[0] is (buffering != 4096) and result[3] == b"line\n"
        with canary(), open(link, "w", buffering=buffering, encoding="utf-8") as f:
            assert type(f.buffer.raw) is CanaryFileIO  # the canary's layering was under test
    finally:
        os.close(leader)
        os.close(follower)
