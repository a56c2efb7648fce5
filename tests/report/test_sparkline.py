"""Sparklines: one eighth-block per value."""

from __future__ import annotations

from hawkwatch.report.sparkline import sparkline


def test_values_scale_from_the_lowest_to_the_highest_block():
    assert sparkline([0, 1, 2, 3, 4, 5, 6, 7]) == "▁▂▃▄▅▆▇█"
    assert sparkline([10.0, 20.0, 20.0, 50.0]) == "▁▃▃█"


def test_a_given_range_scales_and_clamps():
    assert sparkline([5, 10], low=0, high=10) == "▅█"
    assert sparkline([-5, 20], low=0, high=10) == "▁█"


def test_flat_empty_and_non_finite():
    assert sparkline([3, 3, 3]) == "▄▄▄"
    assert sparkline([]) == ""
    assert sparkline([1.0, float("nan"), 2.0]) == "▁ █"
    assert sparkline([float("inf")]) == " "
