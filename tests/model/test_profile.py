"""Call trees and profiler windows as plain data, and their record codecs: MTHawkeye's node
shape both ways (``CpuHighLoadStackframe``), a window as ``CpuProfile``."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hawkwatch.model.profile import (
    CallNode,
    CallTree,
    Profile,
    frame_label,
    is_thread_frame,
    parse_frame_text,
    thread_frame,
    walk_paths,
)
from hawkwatch.model.records import CpuHighLoadStackframe, CpuProfile
from hawkwatch.model.stack import PyFrame, StackTable

F = PyFrame("f", "/app/work.py", 12)
G = PyFrame("Worker.g", "/app/work.py", 30)
MAIN = PyFrame("<module>", "/app/main.py", 3)

frames = st.one_of(
    st.integers(min_value=0, max_value=2**64 - 1),
    st.builds(
        PyFrame,
        st.text(min_size=1).filter(
            lambda s: " (" not in s and not s.startswith(("0x", "0X", "thread "))
        ),
        st.text(),
        st.integers(min_value=1, max_value=10**6),
        module=st.just(""),
    ),
)


def calltree_to_json(roots: tuple[CallNode, ...]) -> list:
    return json.loads(CpuHighLoadStackframe(key="1.0", roots=roots).encode_value())


def calltree_from_json(value: object) -> tuple[CallNode, ...]:
    return CpuHighLoadStackframe.from_value(value, "1.0").roots


def profile_to_json(profile: Profile) -> dict:
    return json.loads(CpuProfile.of(profile).encode_value())


def profile_from_json(value: object) -> Profile:
    return CpuProfile.from_value(value).to_profile()


def nodes(depth: int = 3) -> st.SearchStrategy[CallNode]:
    leaf = st.builds(CallNode, frames, st.integers(min_value=0, max_value=10**6))
    if depth == 0:
        return leaf
    return st.one_of(
        leaf,
        st.builds(
            lambda frame, extra, kids: CallNode(frame, sum(k.count for k in kids) + extra, kids),
            frames,
            st.integers(min_value=0, max_value=1000),
            st.lists(nodes(depth - 1), max_size=3).map(tuple),
        ),
    )


@given(st.lists(nodes(), max_size=4).map(tuple))
def test_a_tree_round_trips_through_mthawkeyes_node_shape(roots) -> None:
    text = json.dumps(calltree_to_json(roots))
    assert calltree_from_json(json.loads(text)) == roots


def test_nodes_have_mthawkeyes_fields_and_proportions_of_the_root_total() -> None:
    roots = (CallNode(MAIN, 8, (CallNode(F, 6), CallNode(G, 2))), CallNode(0x1A2B, 2))
    assert calltree_to_json(roots) == [
        {
            "frame": "<module> (/app/main.py:3)",
            "count": 8,
            "proportion": 0.8,
            "children": [
                {"frame": "f (/app/work.py:12)", "count": 6, "proportion": 0.6},
                {"frame": "Worker.g (/app/work.py:30)", "count": 2, "proportion": 0.2},
            ],
        },
        {"frame": "0x1a2b", "count": 2, "proportion": 0.2},
    ]


@pytest.mark.parametrize(
    ("text", "frame"),
    [
        ("0x1000e4c3c", 0x1000E4C3C),
        ("f (/app/work.py:12)", F),
        ("lambda (a (b).py:7)", PyFrame("lambda", "a (b).py", 7)),
        ("-[UIView layoutSubviews]", PyFrame("-[UIView layoutSubviews]", "", 0)),
    ],
)
def test_frame_texts_parse(text: str, frame) -> None:
    assert parse_frame_text(text) == frame


def test_thread_frames_are_recognised_after_a_json_round_trip() -> None:
    head = thread_frame("worker-1")
    assert is_thread_frame(head) and frame_label(head) == "thread worker-1"
    assert is_thread_frame(PyFrame("thread worker-1", "", 0))  # as read back from a record
    assert not is_thread_frame(PyFrame("thread_main", "/x.py", 3))


@pytest.mark.parametrize(
    "value",
    [
        {"frame": "f"},
        [{"frame": 3, "count": 1}],
        [{"frame": "f", "count": -1}],
        [{"frame": "f", "count": 1, "children": {}}],
        [{"frame": "f", "count": 1, "children": [7]}],
    ],
)
def test_malformed_trees_raise_value_error(value) -> None:
    with pytest.raises(ValueError):
        calltree_from_json(value)


def test_counts_written_as_strings_are_accepted_and_very_deep_trees_are_cut() -> None:
    assert calltree_from_json([{"frame": "f", "count": "3"}]) == (CallNode(PyFrame("f", "", 0), 3),)
    node: dict = {"frame": "leaf", "count": 1}
    for _ in range(400):
        node = {"frame": "r", "count": 1, "children": [node]}
    (root,) = calltree_from_json([node])
    depth = 0
    while root.children:
        root, depth = root.children[0], depth + 1
    assert depth == 200


def test_self_counts_and_paths() -> None:
    tree = CallTree((CallNode(MAIN, 10, (CallNode(F, 6), CallNode(G, 3))),))
    assert tree.total == 10
    assert list(walk_paths(tree)) == [((MAIN,), 1), ((MAIN, F), 6), ((MAIN, G), 3)]
    assert CallNode(MAIN, 1, (CallNode(F, 5),)).self_count == 0  # inconsistent import: never < 0


def test_a_profile_window_round_trips() -> None:
    table = StackTable()
    one = table.add((F, MAIN, thread_frame("MainThread")))
    two = table.add((G, MAIN, thread_frame("MainThread")))
    profile = Profile(10.0, 60.0, 600, 10.0, table, {one: (400, 380), two: (200, 0)}, 0.01, 0.5)
    back = profile_from_json(profile_to_json(profile))
    assert back.counts == profile.counts
    assert [(s[0].func, n) for s, n in back.stacks("cpu")] == [("f", 380)]
    assert sorted(n for _, n in back.stacks("wall")) == [200, 400]
    assert (back.samples, back.budget, back.cost_s) == (600, 0.01, 0.5)


@pytest.mark.parametrize(
    "mangle",
    [
        lambda v: v.pop("table"),
        lambda v: v.update(counts=[[99, 1, 1]]),
        lambda v: v.update(counts=[[0, -1, 0]]),
        lambda v: v.update(start="yesterday"),
    ],
)
def test_malformed_profiles_raise_value_error(mangle) -> None:
    table = StackTable()
    table.add((F,))
    value = profile_to_json(Profile(1.0, 1.0, 1, 1.0, table, {0: (1, 1)}))
    mangle(value)
    with pytest.raises(ValueError):
        profile_from_json(value)
