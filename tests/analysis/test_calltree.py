"""Call trees from samples: merging, ordering, and the costliest frames."""

from __future__ import annotations

from hawkwatch.analysis.calltree import (
    build_profile_tree,
    build_roots,
    frame_proportions,
    merge_roots,
    top_frames,
)
from hawkwatch.model.profile import CallNode, Profile, thread_frame
from hawkwatch.model.stack import PyFrame, StackTable

MAIN = PyFrame("main", "/app/m.py", 1)
RUN = PyFrame("run", "/app/m.py", 5)
F = PyFrame("f", "/app/m.py", 10)
F2 = PyFrame("f", "/app/m.py", 11)
G = PyFrame("g", "/app/m.py", 20)


def test_stacks_merge_outermost_first_with_children_by_count() -> None:
    roots = build_roots([((G, RUN, MAIN), 2), ((F, RUN, MAIN), 5), ((RUN, MAIN), 1), ((), 9)])
    assert roots == (CallNode(MAIN, 8, (CallNode(RUN, 8, (CallNode(F, 5), CallNode(G, 2))),)),)


def test_merging_trees_adds_counts_of_the_same_place() -> None:
    one = build_roots([((F, MAIN), 3)])
    two = build_roots([((F, MAIN), 2), ((G, MAIN), 4)])
    assert merge_roots([one, two]) == (CallNode(MAIN, 9, (CallNode(F, 5), CallNode(G, 4))),)


def test_top_frames_by_self_and_by_function() -> None:
    roots = build_roots([((F, RUN, MAIN), 5), ((F2, RUN, MAIN), 1), ((G, RUN, MAIN), 4)])
    by_line = top_frames(roots, 2)
    assert [(c.frame, c.self_count) for c in by_line] == [(F, 5), (G, 4)]
    by_function = top_frames(roots, 1, by_function=True)
    assert by_function[0].frame == F._replace(line=0)
    assert by_function[0].self_proportion == 0.6
    total = top_frames(roots, 1, by="total")
    assert total[0].total_count == 10 and total[0].total_proportion == 1.0


def test_recursion_counts_a_sample_once_in_the_total() -> None:
    roots = build_roots([((F, F, F, MAIN), 4)])
    (cost,) = [c for c in top_frames(roots, 5, by="total") if c.frame == F]
    assert cost.total_count == 4 and cost.self_count == 4


def test_thread_pseudo_frames_are_not_top_frames() -> None:
    head = thread_frame("MainThread")
    roots = build_roots([((head,), 3), ((F, head), 1)])
    assert [c.frame for c in top_frames(roots, 5)] == [F]


def test_frame_proportions_by_function_name() -> None:
    roots = build_roots([((F, RUN, MAIN), 6), ((G, RUN, MAIN), 4)])
    assert frame_proportions(roots, ["f", "g", "run"]) == {"f": 0.6, "g": 0.4, "run": 1.0}


def test_profile_windows_merge_into_one_tree_per_mode() -> None:
    windows = []
    for cpu in (3, 5):
        table = StackTable()
        busy = table.add((F, MAIN, thread_frame("MainThread")))
        idle = table.add((G, thread_frame("idler")))
        windows.append(Profile(100.0 + cpu, 1.0, 10, 10.0, table, {busy: (10, cpu), idle: (10, 0)}))
    cpu_tree = build_profile_tree(windows, "cpu")
    assert cpu_tree.total == 8 and len(cpu_tree.roots) == 1
    wall_tree = build_profile_tree(windows, "wall")
    assert wall_tree.total == 40 and len(wall_tree.roots) == 2
    assert wall_tree.interval_s == 0.1 and wall_tree.start_time == 103.0
