"""Randomised sampling waits: the draw from an injected source, and a scheduler that uses it."""

from __future__ import annotations

import math
import threading

import pytest

from hawkwatch.agent.sampling import MAX_FACTOR, IntervalDraw
from hawkwatch.agent.scheduler import Scheduler


def sequence(values: list[float]):
    it = iter(values)
    return lambda: next(it)


def test_an_exponential_wait_is_the_inverse_cdf_of_the_uniform_draw() -> None:
    draw = IntervalDraw(sequence([0.0, 0.5, 1 - math.exp(-2), 0.999999999]))
    assert draw.exponential(0.01) == 0.0
    assert draw.exponential(0.01) == pytest.approx(0.01 * math.log(2))
    assert draw.exponential(0.01) == pytest.approx(0.02)
    assert draw.exponential(0.01) == pytest.approx(0.01 * MAX_FACTOR)  # the tail is cut
    assert IntervalDraw(sequence([0.5])).exponential(0) == 0.0


def test_exponential_waits_have_the_right_mean_and_no_period() -> None:
    import random

    rng = random.Random(7)
    draw = IntervalDraw(rng.random)
    waits = [draw.exponential(0.01) for _ in range(20_000)]
    assert sum(waits) / len(waits) == pytest.approx(0.01, rel=0.03)
    # memoryless: about e^-1 of the waits are longer than the mean, and the phases of the
    # sample times against a 10 ms period spread evenly (a fixed period would put them in one bin)
    assert sum(w > 0.01 for w in waits) / len(waits) == pytest.approx(math.exp(-1), abs=0.02)
    bins = [0] * 10
    t = 0.0
    for w in waits:
        t += w
        bins[int((t % 0.01) / 0.001)] += 1
    assert min(bins) > 0.8 * len(waits) / 10


def test_a_jittered_wait_stays_within_its_spread() -> None:
    draw = IntervalDraw(sequence([0.0, 0.5, 0.99]))
    assert draw.jittered(0.1) == pytest.approx(0.05)
    assert draw.jittered(0.1) == pytest.approx(0.1)
    assert draw.jittered(0.1) == pytest.approx(0.149)


def test_the_scheduler_draws_each_wait_from_the_jitter_it_was_given() -> None:
    now = [0.0]
    ran = threading.Event()
    asked: list[float] = []

    def jitter(interval: float) -> float:
        asked.append(interval)
        return interval * 3

    scheduler = Scheduler(on_error=lambda owner, exc: None, clock=lambda: now[0])
    scheduler.every(1.0, ran.set, object(), jitter)
    (job,) = scheduler._jobs
    assert job.due == 3.0 and asked == [1.0]  # the first wait is drawn too
