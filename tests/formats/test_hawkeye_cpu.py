"""MTHawkeye's CPU-trace records read as MTHawkeye writes them (hawkeye.md §4, §5.3)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from hawkwatch.formats.hawkeye_cpu import (
    CF_ABSOLUTE_EPOCH,
    parse_highload,
    parse_stackframe_ext,
    read_highload,
)
from hawkwatch.model import Record
from hawkwatch.model.profile import CallNode
from hawkwatch.model.stack import PyFrame
from tests.builders import (
    cpu_highload_records,
    stackframe_ext,
    stackframe_node,
    write_hawkeye_records,
)

KEY = "585734400.25"  # CFAbsoluteTime: 2019-07-24 08:00:00.25 UTC


def ios_tree() -> list[dict]:
    return [
        stackframe_node(
            "0x1a2b3c4d0",
            10,
            stackframe_node("0x100e4c3c4", 7, total=10),
            stackframe_node("0x100e4c9f0", 3, total=10),
            total=10,
        )
    ]


def test_an_ios_episode_reads_with_address_frames_and_unix_times() -> None:
    parsed = parse_highload(
        cpu_highload_records(KEY, 64.3, 93.5, ios_tree()), time_base="cfabsolute"
    )
    assert parsed.skipped == []
    (episode,) = parsed.value
    assert episode.key == KEY
    assert episode.start_time == 585734400.25 + CF_ABSOLUTE_EPOCH
    assert (episode.lasting_s, episode.average_percent) == (64.3, 93.5)
    assert episode.roots == (
        CallNode(0x1A2B3C4D0, 10, (CallNode(0x100E4C3C4, 7), CallNode(0x100E4C9F0, 3))),
    )
    assert episode.tree().total == 10


def test_the_ext_side_file_holds_large_trees_and_is_split_at_the_first_comma() -> None:
    records = cpu_highload_records(KEY, 70, 99, [])[:1]  # the tree went to the side file
    frame = "f (/app/a,b.py:3)"  # a comma inside the JSON: MTHawkeye's own reader loses it
    ext = stackframe_ext(
        ("585000000.00", [stackframe_node("0x1", 1)]), (KEY, [stackframe_node(frame, 4)])
    )
    parsed = parse_highload(records, ext=ext, time_base="cfabsolute")
    assert parsed.value[0].roots == (CallNode(PyFrame("f", "/app/a,b.py", 3), 4),)


def test_a_cut_ext_file_keeps_the_whole_records() -> None:
    ext = stackframe_ext(
        ("1.00", [stackframe_node("0x1", 1)]), ("2.00", [stackframe_node("0x2", 2)])
    )
    parsed = parse_stackframe_ext(ext[:-9])
    assert list(parsed.value) == ["1.00"]
    assert len(parsed.skipped) == 1 and "2.00" in parsed.skipped[0].reason


def test_bad_values_are_skipped_with_a_reason_and_the_rest_is_kept() -> None:
    records = [
        *cpu_highload_records("1.00", 61, 90, ios_tree()),
        Record("cpu-highload", "2.00", '{"start":"2.00","lasting":"x","average":"80"}'),
        Record("cpu-highload", "3.00", "not json"),
        Record("cpu-highload", "4.00", '{"start":"4.00","lasting":"61","average":"80"}'),
        Record("cpu-highload-stackframe", "4.00", '[{"frame":"0x1"}]'),
    ]
    parsed = parse_highload(records)
    assert [e.key for e in parsed.value] == ["1.00", "4.00"]
    assert parsed.value[1].roots == ()  # the episode stays, its broken tree does not
    reasons = " | ".join(s.reason for s in parsed.skipped)
    assert reasons == (
        "cpu-highload 2.00: Expected `float`, got `str` - at `$.lasting` | "
        "cpu-highload 3.00: value is not JSON | "
        "cpu-highload-stackframe 4.00: Object missing required field `count` - at `$[0]`"
    )


def test_the_last_record_of_a_key_wins() -> None:
    records = [
        *cpu_highload_records("5.00", 60, 90, ios_tree()),
        *cpu_highload_records("5.00", 120, 95, ios_tree()),
    ]
    (episode,) = parse_highload(records).value
    assert episode.lasting_s == 120


def test_read_highload_from_an_mthawkeye_folder(tmp_path: Path) -> None:
    from hawkwatch.store import Session

    folder = write_hawkeye_records(
        tmp_path / "ios",
        ["collection,key,value", "launch-time,1554251562.052403,1554251562.052403"],
        [f"{r.collection},{r.key},{r.value}" for r in cpu_highload_records(KEY, 64.3, 93.5, [])],
    )
    (folder / "cpu-highload-stackframe-ext").write_bytes(stackframe_ext((KEY, ios_tree())))
    session = Session.open(folder)
    parsed = read_highload(folder, session.records().records, is_hawkwatch=session.is_hawkwatch)
    (episode,) = parsed.value
    assert episode.start_time > 1.5e9 and episode.roots[0].frame == 0x1A2B3C4D0


@given(st.binary(max_size=400))
def test_arbitrary_ext_bytes_never_raise(data: bytes) -> None:
    parse_stackframe_ext(data)


@given(st.text(max_size=200), st.text(max_size=200))
def test_arbitrary_values_never_raise(value: str, tree: str) -> None:
    parse_highload(
        [Record("cpu-highload", "1.0", value), Record("cpu-highload-stackframe", "1.0", tree)]
    )
