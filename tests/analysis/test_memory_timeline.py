"""Live bytes at moments of a recording, from allocation lifetimes (memray's temporal records)."""

from __future__ import annotations

from hawkwatch.analysis.memory_timeline import Lifetime, live_at, sample_points


def test_points_are_even_in_time_not_in_index() -> None:
    # snapshots crowd at the end (an idle tail): index-even points would all land there
    times = [0.0, 1.0, 4.1, 6.8, 9.5, 9.6, 9.7, 9.8, 9.9]
    points = sample_points(times, 10.0, 4)
    assert points == [1, 2, 3, 9]  # nearest to t = 1, 4, 7 and the end (index 9)


def test_points_of_a_short_recording_are_all_its_snapshots() -> None:
    assert sample_points([0.0, 1.0, 2.0], 3.0, 12) == [1, 2, 3]
    assert sample_points([], 3.0, 12) == []


def test_live_at_counts_what_was_made_before_and_not_yet_freed() -> None:
    lives = [
        Lifetime(1, None, 2, 200),  # made before 1, never freed
        Lifetime(2, 3, 1, 50),  # made before 2, freed before 3
        Lifetime(3, None, 1, 7),  # made before 3
        Lifetime(4, 4, 1, 1000),  # made and freed between snapshots 3 and 4: never seen live
    ]
    assert live_at(lives, [1, 2, 3, 4]) == [(200, 2), (250, 3), (207, 3), (207, 3)]
    assert live_at(lives, [2, 4]) == [(250, 3), (207, 3)]
