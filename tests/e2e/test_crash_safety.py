"""Crash safety of the records file under SIGKILL, with real writer processes.

A child process appends records to one session folder as fast as it can and acknowledges each
record number on a pipe once ``store()`` has returned. The parent SIGKILLs it at a random
moment, then checks that every acknowledged record reads back, in order, exactly once, with
no damaged line; the next round's child reopens the same folder, which recovers the previous
round's buffer. Kill moments are spread over start-up and recovery, appends, and flushes
(some rounds flush after every few records, which puts many flushes in the kill window).
"""

from __future__ import annotations

import os
import random
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hawkwatch.model import Record
from hawkwatch.store import read_records
from tests.builders import JOURNAL_SIZE, MMAP_SIZE, lines_bytes, mmap_image, write_appender

ROUNDS = 55
STARTUP_KILL_EVERY = 6  # every 6th round is killed while the child starts (or recovers)
REOPEN_EVERY = 10  # a separate process reopens (recovers) the folder every 10 rounds
READY_TIMEOUT_S = 30.0
# Kill moments after the writer is ready: log-uniform, so short and long runs are equally
# likely per decade. Any run longer than a millisecond or so already lands at a random phase of
# the buffer's fill-and-flush cycle; longer runs only add data that every check reads again.
KILL_AFTER_MIN_S = 0.002
KILL_AFTER_MAX_S = 0.150
COLLECTION = "crash"

# Shared by the parent and the child: the value each record must have.
VALUE_SOURCE = """
def value_for(round_, n):
    size = 60 + (n * 7919 + round_ * 104729) % 440
    unit = "%d.%d|,{" % (round_, n)
    return (unit * (size // len(unit) + 1))[:size]
"""

CHILD_SOURCE = (
    VALUE_SOURCE
    + """
import os, sys
from hawkwatch.store.records import RecordStore

folder, round_, flush_every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
store = RecordStore(folder, launch_time=1.0)
os.write(1, b"ready\\n")
n = 0
while True:
    store.store("crash", "%d-%d" % (round_, n), value_for(round_, n))
    os.write(1, b"%d\\n" % n)  # acknowledged only once store() has returned
    n += 1
    if flush_every and n % flush_every == 0:
        store.flush()
"""
)

_namespace: dict[str, object] = {}
exec(VALUE_SOURCE, _namespace)
value_for = _namespace["value_for"]


def read_for(fd: int, seconds: float, into: bytearray, *, until: bytes | None = None) -> bool:
    """Read ``fd`` into ``into`` for ``seconds`` (or until ``until`` arrives); False at EOF."""
    deadline = time.monotonic() + seconds
    while until is None or until not in into:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return True
        ready, _, _ = select.select([fd], [], [], remaining)
        if ready:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return False
            into += chunk
    return True


class Checker:
    """What the folder must hold: per round, every acknowledged record and at most one more."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.verified: list[Record] = []  # records of finished rounds, as last read
        self.counts: list[int] = []  # records found per finished round

    def check(self, round_: int, last_acked: int, how: str) -> None:
        result = read_records(self.folder)
        assert result.skipped == [], f"{how}: damaged lines after round {round_}"
        records = result.records
        assert records[: len(self.verified)] == self.verified, (
            f"{how}: records of earlier rounds changed after round {round_}"
        )
        new = records[len(self.verified) :]
        if not self.verified and new and new[0].collection == "launch-time":
            new = new[1:]
        for n, record in enumerate(new):
            expected = Record(COLLECTION, f"{round_}-{n}", value_for(round_, n))
            assert record == expected, f"{how}: round {round_}, record {n} is {record!r:.80}"
        # Acked records must all be there; one more may have been stored just before the kill.
        assert last_acked + 1 <= len(new) <= last_acked + 2, (
            f"{how}: round {round_} acked 0..{last_acked} but {len(new)} records were read"
        )
        self.verified = records
        self.counts.append(len(new))

    def recheck(self, how: str) -> None:
        """Everything verified so far reads back unchanged."""
        result = read_records(self.folder)
        assert result.skipped == [], how
        assert result.records == self.verified, f"{how}: records changed"


def run_python(source: str, *args: str) -> None:
    subprocess.run([sys.executable, "-c", source, *args], check=True, timeout=60)


@pytest.mark.slow
def test_every_acknowledged_record_survives_sigkill_at_random_moments(tmp_path):
    rng = random.Random()
    seed = rng.randrange(1 << 32)
    rng.seed(seed)
    print(f"crash loop seed {seed}")
    folder = tmp_path / "2024-06-11_10-00-00+000"
    script = tmp_path / "writer.py"
    script.write_text(CHILD_SOURCE)
    checker = Checker(folder)
    startup_s = 0.2  # time from spawn to "ready", updated as measured
    kills = in_flush = with_unflushed = 0

    for round_ in range(ROUNDS):
        startup_kill = round_ % STARTUP_KILL_EVERY == STARTUP_KILL_EVERY - 1
        flush_every = rng.choice([0, 0, 1, 3, 10])
        acks = bytearray()
        spawned = time.monotonic()
        with subprocess.Popen(
            [sys.executable, str(script), str(folder), str(round_), str(flush_every)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ) as child:
            fd = child.stdout.fileno()
            if startup_kill:
                alive = read_for(fd, rng.uniform(0.0, startup_s * 1.2), acks)
            else:
                alive = read_for(fd, READY_TIMEOUT_S, acks, until=b"ready\n")
                assert b"ready\n" in acks, f"the writer did not start: {child.stderr.read()!r}"
                startup_s = time.monotonic() - spawned
                delay_s = KILL_AFTER_MIN_S * (KILL_AFTER_MAX_S / KILL_AFTER_MIN_S) ** rng.random()
                alive = alive and read_for(fd, delay_s, acks)
            child.kill()
            rest, errors = child.communicate(timeout=60)
            acks += rest
            assert alive and child.returncode == -9, f"the writer died by itself: {errors!r}"
        kills += 1

        lines = acks.decode().split("\n")
        assert lines[-1] == "", "an acknowledgement was torn"
        numbers = [int(x) for x in lines[1:-1]] if lines[0] == "ready" else []
        assert numbers == list(range(len(numbers))), "acknowledgements out of order"
        image = (folder / "records.mmap2").read_bytes() if folder.exists() else bytes(MMAP_SIZE)
        in_flush += image[-JOURNAL_SIZE:][:8] == b"hwflush1"
        with_unflushed += image[0] != 0

        if not folder.exists() or not (folder / "records.mtlog").exists():
            assert not numbers  # killed before the store was opened
            checker.counts.append(0)
            continue
        checker.check(round_, len(numbers) - 1, "read without reopening")
        if round_ % REOPEN_EVERY == REOPEN_EVERY - 1:
            run_python(
                "import os, sys\n"
                "from hawkwatch.store.records import RecordStore\n"
                "RecordStore(sys.argv[1], launch_time=1.0)\n"
                "os._exit(0)  # as if killed right after the recovery",
                str(folder),
            )
            checker.recheck(f"after a reopen in round {round_}")

    run_python(
        "import sys\n"
        "from hawkwatch.store.records import RecordStore\n"
        "RecordStore(sys.argv[1], launch_time=1.0).close()",
        str(folder),
    )
    checker.recheck("after a final reopen and a clean close")
    assert (folder / "records.mmap2").read_bytes() == bytes(MMAP_SIZE)
    assert kills >= 50
    assert sum(checker.counts) > 1_000  # the loop really wrote
    print(
        f"{kills} kills; {sum(checker.counts):,} records checked; {with_unflushed} kills left "
        f"unflushed data; {in_flush} landed inside a flush or recovery"
    )


RECOVERY_KILLER = '''
import logging, os, sys
from hawkwatch.store.appender import AppenderFile

class KillOnRecoveryLog(logging.Handler):
    """Dies (as SIGKILL would, no cleanup) at the recovery's log call: after the buffer's data
    was written to .mtlog, before byte 0 of the buffer was cleared."""

    def emit(self, record):
        os._exit(9)

log = logging.getLogger("hawkwatch.store.appender")
log.setLevel(logging.INFO)
log.addHandler(KillOnRecoveryLog())
AppenderFile(sys.argv[1], "records")
'''


def test_a_kill_in_the_middle_of_recovery_writes_nothing_twice(tmp_path):
    flushed = lines_bytes(["crash,0-0,a", "crash,0-1,b"])
    buffered = lines_bytes(["crash,0-2,c", "crash,0-3,d"])
    write_appender(tmp_path, "records", log=flushed, buffer=mmap_image(buffered, stale=b"x\n"))
    done = subprocess.run([sys.executable, "-c", RECOVERY_KILLER, str(tmp_path)], timeout=60)
    assert done.returncode == 9, "the recovery did not reach its log call"
    # The window this test is about: the block is already in .mtlog, the buffer still holds it.
    assert (tmp_path / "records.mtlog").read_bytes() == flushed + buffered
    assert (tmp_path / "records.mmap2").read_bytes()[:1] == b"c"
    expected = [Record("crash", f"0-{i}", v) for i, v in enumerate("abcd")]
    assert read_records(tmp_path).records == expected
    run_python(
        "import sys\nfrom hawkwatch.store.appender import AppenderFile\n"
        "AppenderFile(sys.argv[1], 'records').close()",
        str(tmp_path),
    )
    assert read_records(tmp_path).records == expected
    assert (tmp_path / "records.mtlog").read_bytes() == flushed + buffered
