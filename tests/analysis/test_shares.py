"""The 95 % interval shown beside every sampled share."""

from __future__ import annotations

import pytest

from hawkwatch.analysis.shares import wilson_interval


def test_wilson_interval_matches_the_textbook_values() -> None:
    low, high = wilson_interval(60, 100)
    assert (low, high) == (pytest.approx(0.5020, abs=1e-4), pytest.approx(0.6906, abs=1e-4))
    low, high = wilson_interval(0, 50)
    assert low == 0.0 and high == pytest.approx(0.0713, abs=1e-4)
    low, high = wilson_interval(50, 50)
    assert high == 1.0 and low == pytest.approx(0.9287, abs=1e-4)


def test_more_samples_narrow_the_interval_and_none_say_nothing() -> None:
    narrow = wilson_interval(6000, 10000)
    wide = wilson_interval(60, 100)
    assert narrow[1] - narrow[0] < (wide[1] - wide[0]) / 5
    assert wilson_interval(0, 0) == (0.0, 1.0)
