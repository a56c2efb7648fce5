"""Growth of a footprint series (robust slope, thresholds) and steady growth across snapshots."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from hawkwatch.analysis.memory_growth import (
    LEAK_MIN_SHARE,
    GrowthRule,
    footprint_growth,
    robust_slope,
    steady_growth,
)

MB = 1024 * 1024


def line(slope: float, base: float, seconds: int = 61) -> list[tuple[float, float]]:
    return [(float(t), base + slope * t) for t in range(seconds)]


def test_robust_slope_ignores_a_spike_and_a_dip() -> None:
    points = line(2.0, 100.0)
    points[10] = (10.0, 1e9)
    points[40] = (40.0, 0.0)
    assert abs(robust_slope(points) - 2.0) < 1e-9


@given(
    st.floats(-1e6, 1e6, allow_nan=False),
    st.floats(0, 1e9, allow_nan=False),
    st.integers(2, 300),
)
def test_robust_slope_recovers_any_straight_line(slope: float, base: float, n: int) -> None:
    got = robust_slope([(float(t), base + slope * t) for t in range(n)])
    assert abs(got - slope) <= 1e-6 * max(1.0, abs(slope), base / n)


def test_growth_over_both_thresholds_is_a_finding() -> None:
    # 100 MB rising 0.5 MB/s: +30 MB (30 %) over 60 s.
    finding = footprint_growth(line(0.5 * MB, 100 * MB), GrowthRule())
    assert finding is not None
    assert round(finding.growth_bytes / MB, 3) == 30.0
    assert round(finding.growth_percent, 1) == 30.0
    assert finding.samples == 61


def test_growth_under_the_percent_threshold_is_not_a_finding() -> None:
    # +30 MB on 1 GB is 3 %.
    assert footprint_growth(line(0.5 * MB, 1024 * MB), GrowthRule()) is None
    assert footprint_growth(line(0.5 * MB, 1024 * MB), GrowthRule(min_percent=2.5)) is not None


def test_growth_under_the_byte_threshold_is_not_a_finding() -> None:
    # +12 MB on 20 MB is 60 %, but under 20 MB.
    assert footprint_growth(line(0.2 * MB, 20 * MB), GrowthRule()) is None
    assert footprint_growth(line(0.2 * MB, 20 * MB), GrowthRule(min_bytes=10 * MB)) is not None


def test_one_jump_then_flat_is_not_steady_growth() -> None:
    # A single 40 MB step (a big allocation) at t=30: two points would call it growth.
    points = [(float(t), (100 + (40 if t >= 45 else 0)) * MB) for t in range(61)]
    assert footprint_growth(points, GrowthRule()) is None


def test_a_window_not_yet_filled_is_not_extrapolated() -> None:
    assert footprint_growth(line(5 * MB, 100 * MB, seconds=20), GrowthRule()) is None


def test_steady_growth_names_what_rises_in_most_steps_not_churn() -> None:
    series = [
        {"leak": 100, "churn": 500, "bounded": 50},
        {"leak": 200, "churn": 100, "bounded": 50},
        {"leak": 300, "churn": 700, "bounded": 50},
        {"leak": 350, "churn": 200, "bounded": 50},
        {"leak": 500, "churn": 600, "bounded": 50},
    ]
    found = steady_growth(series, min_growth=1, min_fraction=0.75)
    assert [(g.key, g.growth, g.grown, g.steps) for g in found] == [("leak", 400, 4, 4)]


def test_a_temporary_caught_in_flight_by_most_snapshots_is_not_a_leak() -> None:
    # What CI saw: a function building 300 rows and dropping them, caught mid-build by 6 of
    # 8 snapshots with rising sizes by chance. Back at zero in the second half: not kept.
    in_flight = [0, 10_000, 50_000, 0, 20_000, 60_000, 100_000, 134_000]
    leak = [0, 4_000, 8_000, 12_000, 13_000, 20_000, 24_000, 28_000]
    series = [{"churn": c, "leak": v} for c, v in zip(in_flight, leak, strict=True)]
    found = steady_growth(series, min_growth=1024, min_fraction=0.75)
    assert [(g.key, g.growth, g.grown) for g in found] == [("leak", 28_000, 7)]


def test_a_trickle_beside_a_real_leak_is_left_out_with_a_min_share() -> None:
    # A leak keeping blocks that another site first allocated (a free list handed them on)
    # shows that site rising by a trickle; 1 % of the largest growth keeps it out.
    series = [{"leak": 1_000_000 * i, "recycled": 16_000 + 300 * i} for i in range(8)]
    assert [g.key for g in steady_growth(series, min_growth=1024)] == ["leak", "recycled"]
    found = steady_growth(series, min_growth=1024, min_share=LEAK_MIN_SHARE)
    assert [g.key for g in found] == ["leak"]
    small = [{"leak": 100_000 * i, "slow": 2_000 * i} for i in range(8)]  # 2 % of it: kept
    assert len(steady_growth(small, min_growth=1024, min_share=LEAK_MIN_SHARE)) == 2


def test_steady_growth_counts_missing_keys_as_zero_and_respects_min_growth() -> None:
    series = [{}, {"new": 10}, {"new": 20}, {"new": 30, "small": 2}]
    assert [g.key for g in steady_growth(series, min_growth=5)] == ["new"]
    assert steady_growth(series[:1]) == []


def test_a_cache_that_filled_up_and_stayed_full_is_not_growing() -> None:
    series = [{"warm": v} for v in (0, 100, 200, 300, 300, 300, 300)]
    assert steady_growth(series, min_fraction=0.5) == []
    assert [g.key for g in steady_growth(series[:4], min_fraction=0.5)] == ["warm"]
