"""profiler_paired.py's bound of the default budget's cost: its arithmetic, and its own check."""

from __future__ import annotations

import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import profiler_paired as paired  # noqa: E402 (a script's folder, not a package)

N = 20  # pairs per arm


def arm(wall: float, cpu: float, rate_hz: float = 0.0) -> paired.Arm:
    return paired.Arm([wall] * N, [cpu] * N, [rate_hz] * N if rate_hz else [], [])


def test_arm_names_carry_their_rate() -> None:
    assert paired._hz("rate100", "rate") == 100.0
    assert paired._hz("inproc50", "inproc") == 50.0
    assert paired._hz("inproc", "inproc") is None  # the whole-budget arm, no fixed rate
    assert paired._hz("budget", "rate") is None


def test_the_bound_adds_the_measured_pause_and_the_scaled_per_sample_cpu() -> None:
    arms = {
        "budget": arm(wall=0.0025, cpu=0.0005, rate_hz=2.5),  # off-CPU 0.2 %
        "rate100": arm(wall=0.08, cpu=0.02, rate_hz=100),  # 200 µs of CPU a sample
        "inproc100": arm(wall=0.03, cpu=0.01),  # 100 µs a sample
    }
    line = paired.bound(arms)
    # 0.2 % + 200 µs × 2.5 Hz + 100 µs × 2.4 Hz (0.003 × 0.2 / 250 µs) = 0.274 %
    assert "py-spy CPU ≤ 200 µs × 2.5 Hz" in line
    assert "in-process CPU ≤ 100 µs × 2.4 Hz" in line
    assert "= ≤ 0.27% (met: target ≤ 1%)" in line
    assert line.endswith("starts at +0.05%: consistent")


def test_the_bound_says_when_the_budgets_own_cpu_contradicts_it() -> None:
    arms = {
        "budget": arm(wall=0.012, cpu=0.01, rate_hz=2.5),  # 1 % of CPU, measured
        "rate100": arm(wall=0.08, cpu=0.02, rate_hz=100),
        "inproc100": arm(wall=0.03, cpu=0.01),
    }
    line = paired.bound(arms)
    assert "= ≤ 0.27% (not shown: target ≤ 1%)" in line  # under the target, but its premise
    assert line.endswith("starts at +1.00%: CONTRADICTED")  # fails: no verdict from it


def test_no_bound_without_the_arms_it_needs() -> None:
    assert paired.bound({"budget": arm(0.01, 0.0, 2.0), "rate100": arm(0.1, 0.0, 100)}) is None
    assert paired.bound({"rate100": arm(0.1, 0.0, 100), "inproc100": arm(0.1, 0.0)}) is None
