"""Truncated and corrupt crash files: only ``FormatError``; frames before the cut survive."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hawkwatch.errors import FormatError
from hawkwatch.formats._crash_values import loads_lenient
from hawkwatch.formats.crash import parse_crash
from hawkwatch.model.crash import CrashFrame, CrashReport
from tests.formats.crash_fixtures import FIXTURES

SAMPLES = {
    "text": FIXTURES / "apple-text" / "handcrafted.txt",
    "kscrash-text": FIXTURES / "kscrash" / "CrashInHandler.txt",
    "ips": FIXTURES / "ips" / "AppleJson.ips",
    "ips-text": FIXTURES / "ips" / "AppleDemo.ips",
    "kscrash": FIXTURES / "kscrash" / "BadPointer.json",
    "recrash": FIXTURES / "sentry-cocoa" / "UnknownTypeException.json",
}
FULL = {name: parse_crash(path.read_bytes()).value for name, path in SAMPLES.items()}
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _parse(data: bytes) -> CrashReport | None:
    try:
        return parse_crash(data, source="cut").value
    except FormatError:
        return None


def _key(frame: CrashFrame) -> tuple[object, ...]:
    return (frame.address, frame.symbol, frame.symbol_offset, frame.file, frame.line)


def _assert_prefix(cut: CrashReport, full: CrashReport, *, strict: bool) -> None:
    """Every thread read from the cut file keeps the full thread's frames, in order.

    ``strict``: a prefix (text, KSCrash). Otherwise (``.ips``, whose ``usedImages`` follow the
    threads) an ordered subsequence: frames whose image is past the cut cannot be placed.
    The last frame of a thread may be cut short itself.
    """
    by_index = {thread.index: thread for thread in full.threads}
    for thread in cut.threads:
        whole = by_index.get(thread.index)
        if whole is None:  # the cut fell inside a thread's header; its number may be cut too
            continue
        assert len(thread.frames) <= len(whole.frames)
        kept = [_key(frame) for frame in thread.frames[:-1]]
        if strict:
            assert kept == [_key(frame) for frame in whole.frames[: len(kept)]]
        else:
            remaining = iter(_key(frame) for frame in whole.frames)
            assert all(any(key == other for other in remaining) for key in kept)


@pytest.mark.parametrize("name", list(SAMPLES))
@SETTINGS
@given(fraction=st.floats(0.0, 1.0))
def test_truncated_files_give_a_prefix_or_a_format_error(name, fraction):
    data = SAMPLES[name].read_bytes()
    cut = _parse(data[: int(len(data) * fraction)])
    if cut is not None:
        _assert_prefix(cut, FULL[name], strict=name != "ips")


@pytest.mark.parametrize("name", list(SAMPLES))
@SETTINGS
@given(data=st.data())
def test_corrupt_files_raise_nothing_but_format_error(name, data):
    original = bytearray(SAMPLES[name].read_bytes())
    for _ in range(data.draw(st.integers(1, 8))):
        position = data.draw(st.integers(0, len(original) - 1))
        original[position] = data.draw(st.integers(0, 255))
    _parse(bytes(original))


@SETTINGS
@given(st.binary(max_size=2000))
def test_arbitrary_bytes_raise_nothing_but_format_error(data):
    _parse(data)


@SETTINGS
@given(st.text(alphabet=st.sampled_from('{}[]",:0x123 \nabcThreadBinary Images'), max_size=300))
def test_arbitrary_text_raises_nothing_but_format_error(text):
    _parse(b'{"bug_type":"309"}\n' + text.encode())
    _parse(text.encode())


def _cut_after(data: bytes, marker: bytes) -> bytes:
    return data[: data.index(marker)]


def test_a_cut_text_report_keeps_the_frames_before_the_cut():
    data = SAMPLES["kscrash-text"].read_bytes()
    # inside frame 6 of the crashed thread
    cut = _parse(_cut_after(data, b"__CFRUNLOOP_IS_CALLING_OUT_TO_A_TIMER"))
    assert cut is not None
    crashed = cut.crashed_thread
    assert crashed is not None
    assert crashed.frames[:6] == FULL["kscrash-text"].threads[0].frames[:6]


def test_a_cut_ips_report_keeps_the_frames_it_can_place():
    data = SAMPLES["ips"].read_bytes()
    # usedImages come after the threads: cut inside image 9 (TCC) after its base and path
    cut_at = data.index(b'"name" : "TCC"')
    parsed = parse_crash(data[:cut_at], source="cut")
    cut, full = parsed.value, FULL["ips"]
    assert len(cut.images) == 10
    assert cut.images[:9] == full.images[:9]
    assert cut.images[9].load_address == full.images[9].load_address
    for cut_thread, full_thread in zip(cut.threads, full.threads, strict=True):
        placeable = [
            f for f in full_thread.frames if f.image_index is not None and f.image_index < 10
        ]
        assert [_key(f) for f in cut_thread.frames] == [_key(f) for f in placeable]
    assert any("frames dropped" in s.reason for s in parsed.skipped)


def test_a_cut_kscrash_report_keeps_the_frames_before_the_cut():
    data = SAMPLES["kscrash"].read_bytes()
    cut = _parse(_cut_after(data, b'"-[CommandTVC tableView:didSelectRowAtIndexPath:]"'))
    assert cut is not None
    crashed = cut.threads[0]
    full = FULL["kscrash"].threads[0]
    assert crashed.frames[:2] == full.frames[:2]
    assert crashed.frames[2].address == full.frames[2].address  # symbol cut off
    assert len(cut.images) == len(FULL["kscrash"].images)  # written before the threads


@pytest.mark.parametrize(
    ("text", "expected", "truncated"),
    [
        ('{"a": [1, 2]}', {"a": [1, 2]}, False),
        ('{"a": [1, 2]}\n\nSystem Profile: …', {"a": [1, 2]}, False),
        ('{"a": [1, 2, {"b": "x[,{\\""}, 3', {"a": [1, 2, {"b": 'x[,{"'}]}, True),
        ('{"a": "unterminated [ { ,', {}, True),
        ('[{"k": 1}, {"k"', [{"k": 1}, {}], True),  # an opened container is kept empty
    ],
)
def test_loads_lenient(text, expected, truncated):
    assert loads_lenient(text) == (expected, truncated)


@pytest.mark.parametrize("text", ["", "   ", "hello", '"just a string', "]"])
def test_loads_lenient_refuses_what_is_not_json(text):
    with pytest.raises(ValueError):
        loads_lenient(text)
