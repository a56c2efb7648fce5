"""Adaptive per-site sampling of the I/O canary: a site's first files are all watched (the
warm-up), then, while no issue is found there, one in ``sample_every``; a site with an issue is
watched fully for good; a file opened on a loop thread is always watched; what went unwatched is
said in the records. The choice is a countdown per site, not random: these tests know which
file is watched."""

from __future__ import annotations

import asyncio
import gc
import io
import warnings
from pathlib import Path

import pytest

from hawkwatch.agent.plugins.io_issues import SiteSampling
from hawkwatch.agent.plugins.io_raw import CanaryFileIO
from hawkwatch.model.io import IoRules
from tests.agent.plugins.io_support import Canary, canary

leaks = pytest.mark.filterwarnings(
    "ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning"
)
W, U = "watched", "unwatched"
#: These tests read one file again and again on purpose: not the repeated-read rule's business
#: (it would fire at the fifth watched read and make the site fully watched).
NO_REPEATS = IoRules(repeated_read=False)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data.bin"
    path.write_bytes(bytes(range(256)) * 16)
    return path


def read_at_one_site(path: Path, *, leak: bool = False) -> tuple[str, bytes]:
    """Open and read ``path`` from one line; whether the canary watched the file."""
    f = open(path, "rb")  # noqa: SIM115 - closed below unless leaking on purpose
    raw = f.raw
    content = f.read()
    if not leak:
        f.close()
    return (W if isinstance(raw, CanaryFileIO) else U), content


def sampling_of(watched: Canary, function: str) -> SiteSampling:
    [site] = [s for s in watched.collector.sites.values() if s[0].co_name == function]  # type: ignore[union-attr]
    sampling = site[5]
    assert isinstance(sampling, SiteSampling)
    return sampling


def test_warm_up_then_one_file_in_k(data: Path) -> None:
    with canary(NO_REPEATS, warmup=4, sample_every=3) as watched:
        seen = [read_at_one_site(data) for _ in range(13)]
        sampling = sampling_of(watched, "read_at_one_site")
    assert [kind for kind, _ in seen] == [W, W, W, W, U, U, W, U, U, W, U, U, W]
    assert {content for _, content in seen} == {data.read_bytes()}  # the same bytes either way
    assert (sampling.watched, sampling.unwatched, sampling.every) == (7, 6, 3)
    assert watched.written == []


def test_sample_every_1_watches_every_file(data: Path) -> None:
    with canary(NO_REPEATS, warmup=0, sample_every=1) as watched:
        seen = [read_at_one_site(data)[0] for _ in range(40)]
        sampling = sampling_of(watched, "read_at_one_site")
    assert seen == [W] * 40
    assert (sampling.watched, sampling.unwatched) == (40, 0)


def read_through_pathlib(path: Path) -> bytes:
    return path.read_bytes()


def test_pathlib_openers_are_sampled_at_their_callers_site(data: Path) -> None:
    with canary(NO_REPEATS, warmup=2, sample_every=4) as watched:
        contents = [read_through_pathlib(data) for _ in range(10)]
        sampling = sampling_of(watched, "read_through_pathlib")
    assert contents == [data.read_bytes()] * 10
    # 2 in the warm-up; then 3 skipped, 1 watched: files 6 and 10.
    assert (sampling.watched, sampling.unwatched) == (4, 6)


@leaks
def test_a_site_with_an_issue_is_watched_fully_and_its_record_says_what_went_unwatched(
    data: Path,
) -> None:
    with canary(NO_REPEATS, warmup=2, sample_every=3) as watched:
        # One call site: W W (warm-up), U U, then the next watched file is dropped open.
        seen = [read_at_one_site(data, leak=i == 4)[0] for i in range(15)]
        gc.collect()
        sampling = sampling_of(watched, "read_at_one_site")
    assert seen[:5] == [W, W, U, U, W]
    [issue] = watched.issues("unclosed")
    assert issue.frames[0].function == "read_at_one_site"
    assert (issue.unwatched, issue.sampled_one_in, issue.count) == (2, 3, 1)
    assert seen[5:] == [W] * 10  # fully watched for good
    assert (sampling.every, sampling.unwatched) == (1, 2)


@leaks
def test_a_site_with_an_issue_in_its_warm_up_is_never_sampled(data: Path) -> None:
    with canary(NO_REPEATS, warmup=3, sample_every=2) as watched:
        seen = [read_at_one_site(data, leak=i == 0)[0] for i in range(12)]
        gc.collect()
    assert seen == [W] * 12
    [issue] = watched.issues("unclosed")
    assert (issue.unwatched, issue.sampled_one_in) == (0, 1)  # count misses nothing


def test_a_file_opened_on_a_loop_thread_is_always_watched(data: Path) -> None:
    # A loop, not a comprehension (a frame of its own before 3.12, none since): the opening
    # site's top four frames are read_at_one_site, reads, deeper, one_site whoever calls.
    def reads(count: int) -> list[str]:
        seen = []
        for _ in range(count):
            seen.append(read_at_one_site(data)[0])  # noqa: PERF401 - see above
        return seen

    def deeper(count: int) -> list[str]:
        return reads(count)

    def one_site(count: int) -> list[str]:
        return deeper(count)

    async def on_the_loop() -> list[str]:
        return one_site(6)

    with canary(NO_REPEATS, warmup=1, sample_every=1000) as watched:
        before = one_site(3)  # off the loop: sampled after the first
        during = asyncio.run(on_the_loop())
        after = one_site(2)
        sampling = sampling_of(watched, "read_at_one_site")
    assert before == [W, U, U]
    assert during == [W] * 6  # the same code on the loop thread: watched
    assert after == [U, U]
    assert (sampling.watched, sampling.unwatched) == (7, 4)


def write_at_one_site(path: Path, text: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def read_whole(path: Path) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def test_an_unwatched_write_still_ends_a_row_of_identical_reads(tmp_path: Path) -> None:
    """Reading a file again after it changed is right, even when the change went unwatched."""
    path = tmp_path / "state.txt"

    def write_then_read(reads: int) -> list[str]:
        write_at_one_site(path, "same size")
        return [read_whole(path) for _ in range(reads)]

    with canary(IoRules(repeat_count=3), warmup=5, sample_every=1000) as watched:
        # Six writes warm the writing site up (the sixth is unwatched); then each of four
        # reads follows a write that goes unwatched: the same bytes, but no repeated read.
        reads = [write_then_read(reads) for reads in (0,) * 6 + (1,) * 4]
        writer = sampling_of(watched, "write_at_one_site")
        assert (writer.watched, writer.unwatched) == (5, 5)
        assert reads[6:] == [["same size"]] * 4
        assert watched.issues("repeated-read") == []
        for _ in range(3):  # unchanged between reads: the rule fires
            read_whole(path)
    [issue] = watched.issues("repeated-read")
    assert issue.frames[0].function == "read_whole"


def test_text_and_binary_files_read_and_write_the_same_bytes_when_unwatched(
    tmp_path: Path,
) -> None:
    def round_trip(i: int) -> tuple[str, bytes, bool]:
        text = f"line {i}\r\nüñï\n" * 50
        write_at_one_site(tmp_path / f"{i}.txt", text)
        with open(tmp_path / f"{i}.txt", "rb") as f:
            raw = f.read()
        with open(tmp_path / f"{i}.txt", encoding="utf-8", newline="") as f:
            f.seek(3)
            return f.read(), raw, isinstance(f.buffer.raw, io.FileIO)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plain = [round_trip(i) for i in range(8)]
        with canary(warmup=2, sample_every=3) as watched:
            sampled = [round_trip(i) for i in range(8)]
            skipped = sum(s[5].unwatched for s in watched.collector.sites.values())
    assert sampled == plain
    assert skipped == 3 * 4  # three sites, files 3, 4, 6 and 7 of each unwatched


def open_for_writing(target: object) -> None:
    with open(target, "w", encoding="utf-8") as f:  # type: ignore[call-overload]
        f.write("x")


def test_a_bad_argument_at_a_sampled_site_fails_as_io_open_says(tmp_path: Path) -> None:
    with canary(NO_REPEATS, warmup=1, sample_every=100) as watched:
        outcomes = []
        for target in (tmp_path / "a.txt", 3.5, tmp_path / "b.txt"):  # 3.5 comes unwatched
            try:
                open_for_writing(target)
                outcomes.append("ok")
            except TypeError as exc:
                outcomes.append(str(exc))
        assert watched.collector.active  # not the canary's failure
        watched.collector.failure.raise_if_failed()
    with pytest.raises(TypeError) as plain:
        open(3.5, "w", encoding="utf-8")  # type: ignore[call-overload]  # noqa: SIM115
    assert outcomes == ["ok", str(plain.value), "ok"]
