"""Step-series statistics: holding times, weighted mean and quantiles, chart slices."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hawkwatch.analysis.series import (
    Sample,
    holding_times,
    quantile,
    step_means,
    weighted_mean,
    weighted_quantile,
)


def test_each_sample_holds_until_the_next_and_the_last_until_the_end():
    samples = [Sample(0.0, 10), Sample(1.0, 20), Sample(3.0, 50)]

    assert holding_times(samples, end_time=4.0) == [1.0, 2.0, 1.0]


def test_samples_at_one_instant_weigh_one_each():
    samples = [Sample(5.0, 1), Sample(5.0, 3)]

    assert holding_times(samples, end_time=5.0) == [1.0, 1.0]
    assert weighted_mean([1, 3], holding_times(samples, 5.0)) == 2


def test_weighted_mean_and_quantiles_by_hand():
    values, weights = [10.0, 20.0, 50.0], [1.0, 2.0, 1.0]

    assert weighted_mean(values, weights) == 25.0  # (10 + 40 + 50) / 4
    assert weighted_quantile(values, weights, 0.95) == 50.0  # 3 of 4 s at ≤ 20 < 95 %
    assert weighted_quantile(values, weights, 0.75) == 20.0  # exactly 75 % at ≤ 20
    assert weighted_quantile(values, weights, 0.25) == 10.0


def test_quantile_is_the_nearest_rank():
    values = [float(v) for v in range(1, 21)]  # 1 … 20

    assert quantile(values, 0.95) == 19.0  # rank ceil(0.95 * 20) = 19
    assert quantile(values, 0.5) == 10.0
    assert quantile(values, 1.0) == 20.0
    assert quantile([7.0], 0.95) == 7.0


def test_quantile_rejects_q_outside_0_1():
    with pytest.raises(ValueError, match="q must be"):
        weighted_quantile([1.0], [1.0], 0)


def test_step_means_by_hand():
    samples = [Sample(0.0, 10), Sample(1.0, 20), Sample(3.0, 50)]

    assert step_means(samples, end_time=4.0, buckets=4) == (10.0, 20.0, 20.0, 50.0)
    assert step_means(samples, end_time=4.0, buckets=2) == (15.0, 35.0)
    assert step_means(samples, end_time=4.0, buckets=1) == (25.0,)


def test_step_means_without_a_time_span_is_the_mean():
    assert step_means([Sample(2.0, 4), Sample(2.0, 6)], end_time=2.0, buckets=5) == (5.0,)
    assert step_means([], end_time=2.0, buckets=5) == ()


_series = st.lists(
    st.tuples(
        st.floats(min_value=0, max_value=1000, allow_nan=False),
        st.floats(min_value=-1e6, max_value=1e6, allow_nan=False),
    ),
    min_size=1,
    max_size=30,
).map(lambda pairs: sorted(Sample(t, v) for t, v in pairs))


@given(
    _series,
    st.one_of(st.just(0.0), st.floats(min_value=1e-3, max_value=100)),
    st.integers(min_value=1, max_value=50),
)
def test_step_means_keep_the_area_and_stay_within_the_values(samples, extra, buckets):
    end = samples[-1].time + extra
    points = step_means(samples, end, buckets)
    values = [s.value for s in samples]
    weights = holding_times(samples, end)
    low, high = min(values), max(values)
    slack = 1e-6 * max(1.0, abs(low), abs(high))

    assert all(low - slack <= p <= high + slack for p in points)
    if (end - samples[0].time) / buckets > 0:
        assert len(points) == buckets
        assert math.isclose(
            math.fsum(points) / buckets, weighted_mean(values, weights), rel_tol=1e-6, abs_tol=1e-3
        )


@given(_series)
def test_weighted_quantile_is_one_of_the_values(samples):
    values = [s.value for s in samples]
    weights = holding_times(samples, samples[-1].time + 1)

    assert weighted_quantile(values, weights, 0.95) in values
    assert min(values) <= weighted_mean(values, weights) + 1e-6 * max(1, abs(min(values)))
