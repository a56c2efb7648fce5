"""Ingest over real HTTP, on SQLite and PostgreSQL: what is acknowledged is stored once; what is
refused gets its status and leaves nothing behind."""

from __future__ import annotations

import gzip
import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import zstandard
from sqlalchemy import Engine

from hawkwatch.model.envelope import Envelope, EnvelopeSession, encode_envelope
from hawkwatch.model.records import GcPause
from hawkwatch.server import admin
from hawkwatch.server.app import RateLimiter
from hawkwatch.server.schema import metadata
from hawkwatch.uploader import UploadError, upload_file
from tests.server.conftest import LiveServer, row_counts

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "crash"
# every table empty but the project's (tables other features add are counted too)
EMPTY = dict.fromkeys((table.name for table in metadata.sorted_tables), 0) | {"projects": 1}


def assert_empty(engine: Engine) -> None:
    """Nothing stored but the project: ``EMPTY``, every other table (later migrations') empty."""
    counts = row_counts(engine)
    assert counts == {name: EMPTY.get(name, 0) for name in counts}


def envelope(session: str = "s1", sequence: int = 1) -> Envelope:
    pause = GcPause(start=1_700_000_000.0, generation=2, duration_ms=25.0).to_record()
    return Envelope(
        id=f"{session}:{sequence}",
        session=EnvelopeSession(session, {"app": {"name": "shop", "version": "1.0"}}),
        records=[tuple(pause)],  # type: ignore[list-item]
    )


def post(server: LiveServer, key: str, body: bytes, **headers: str) -> tuple[int, dict]:
    request = urllib.request.Request(
        server.url + "/api/v1/ingest", data=body, method="POST",
        headers={"Authorization": f"Bearer {key}", **headers},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, {**json.loads(exc.read() or b"{}"), "_headers": dict(exc.headers)}


@pytest.fixture
def key(engine: Engine) -> str:
    return admin.add_project(engine, "shop")


def test_an_envelope_is_stored_once_and_a_replay_is_acknowledged(
    live_server: LiveServer, key: str
) -> None:
    body = gzip.compress(encode_envelope(envelope()))
    first = post(live_server, key, body, **{"Content-Encoding": "gzip"})
    again = post(live_server, key, body, **{"Content-Encoding": "gzip"})
    as_zstd = post(live_server, key, zstandard.ZstdCompressor().compress(
        encode_envelope(envelope(sequence=2))), **{"Content-Encoding": "zstd"})  # fmt: skip
    assert first == (202, {"id": "s1:1", "duplicate": False})
    assert again == (202, {"id": "s1:1", "duplicate": True})
    assert as_zstd == (202, {"id": "s1:2", "duplicate": False})
    counts = row_counts(live_server.engine)
    assert (counts["envelopes"], counts["jobs"]) == (2, 2)


@pytest.mark.parametrize(
    ("body", "headers", "status", "reason"),
    [
        (b"{not json", {}, 400, "not a hawkwatch envelope"),
        (gzip.compress(encode_envelope(envelope()))[:-9], {"Content-Encoding": "gzip"}, 400,
         "truncated"),
        (b"\x1f\x8b garbage", {"Content-Encoding": "gzip"}, 400, "not valid gzip"),
        (b"\x28\xb5\x2f\xfd garbage", {"Content-Encoding": "zstd"}, 400, "not valid zstd"),
        (encode_envelope(envelope()), {"Content-Encoding": "br"}, 415, "br"),
        (json.dumps({"format": "hawkwatch-envelope", "format_version": 1, "id": "x:1",
                     "session": {"name": "x"}, "records": [["gc-pause", "1.0", "{}"]]}).encode(),
         {}, 400, "do not decode"),
        (json.dumps({"format": "hawkwatch-envelope", "format_version": 9, "id": "x:1",
                     "session": {"name": "x"}, "records": []}).encode(), {}, 400, "newer"),
        (b"not a crash report at all", {"X-Hawkwatch-Artifact": "x.ips"}, 400, "x.ips"),
        (b"not a tar", {"X-Hawkwatch-Artifact": "folder.tar"}, 400, "not a tar archive"),
    ],
    ids=["json", "truncated-gzip", "bad-gzip", "bad-zstd", "unknown-encoding",
         "bad-record", "newer-version", "bad-artifact", "bad-tar"],
)  # fmt: skip
def test_bad_uploads_get_their_status_and_leave_nothing(  # noqa: PLR0917 - parametrized
    live_server: LiveServer, key: str, body: bytes, headers: dict[str, str], status: int,
    reason: str,
) -> None:  # fmt: skip
    got, answer = post(live_server, key, body, **headers)
    assert got == status
    assert reason in answer["error"]
    assert_empty(live_server.engine)


def test_a_bad_key_is_401_and_an_oversized_body_413(live_server: LiveServer, key: str) -> None:
    assert post(live_server, "wrong", encode_envelope(envelope()))[0] == 401
    bomb = gzip.compress(b" " * (300 * 1024 * 1024))  # 300 MB of spaces: a decompression bomb
    status, answer = post(live_server, key, bomb, **{"Content-Encoding": "gzip"})
    assert status == 413 and "decompressed" in answer["error"]
    assert_empty(live_server.engine)


def test_over_the_rate_a_key_is_told_when_to_come_back() -> None:
    limiter = RateLimiter(rate=2.0, burst=3.0)
    waits = [limiter.wait_s(7, now=100.0) for _ in range(4)]
    assert waits[:3] == [0.0, 0.0, 0.0] and waits[3] == pytest.approx(0.5)
    assert limiter.wait_s(7, now=100.5) == 0.0  # one token back after half a second
    assert limiter.wait_s(8, now=100.0) == 0.0  # another key has its own bucket


def test_ios_crash_reports_are_accepted_and_refusals_raise(
    live_server: LiveServer, key: str
) -> None:
    sent = upload_file(FIXTURES / "ips" / "nullderef.ips", live_server.url, key, retries=0)
    assert (sent.status, sent.duplicate) == (202, False)
    assert upload_file(FIXTURES / "ips" / "nullderef.ips", live_server.url, key).duplicate
    with pytest.raises(UploadError, match="401"):
        upload_file(FIXTURES / "ips" / "nullderef.ips", live_server.url, "wrong", retries=0)
