"""Tests for rappor.planner: targets met exactly, inflation behaviour, and a simulated detection check."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest

from rappor import Params
from rappor.exceptions import InvalidParameterError
from rappor.planner import design_inflation, detection_frequency, plan, simulate_detection


def test_plan_meets_privacy_targets() -> None:
    result = plan(100_000, 50, epsilon_inf=3.0, epsilon_one=1.0, num_bloombits=(16, 32), num_cohorts=(4, 16))
    for pl in result.plans:
        assert pl.params.epsilon_inf == pytest.approx(3.0, rel=1e-9)
        assert pl.params.epsilon_one == pytest.approx(1.0, rel=1e-6)
    assert result.best in result.plans


@pytest.mark.parametrize(("epsilon_inf", "epsilon_one"),
                         [(0.5, 0.1), (2.0, None), (3.0, 1.0), (4.0, None), (4.39, 1.07), (8.0, 0.5), (16.0, 4.0),
                          (6.0, 5.9)])
def test_plan_output_satisfies_both_targets(epsilon_inf: float, epsilon_one: float | None) -> None:
    # Rebuild Params from the recommended plan's k, h, m, p, q, f and check the targets as
    # Params computes them: never above (no rounding slack), and met to 1e-6 (no wasted budget).
    target_one = epsilon_inf / 4.0 if epsilon_one is None else epsilon_one
    result = plan(50_000, 30, epsilon_inf=epsilon_inf, epsilon_one=epsilon_one, num_bloombits=(16, 32),
                  num_cohorts=(4, 16))
    for pl in (result.best, *result.plans):
        params = Params.from_dict(pl.params.as_dict())
        assert params.epsilon_inf <= epsilon_inf
        assert params.epsilon_one <= target_one
        assert params.epsilon_inf == pytest.approx(epsilon_inf, rel=1e-9)
        assert params.epsilon_one == pytest.approx(target_one, rel=1e-6)
        assert 0.0 < params.p < 0.5 < params.q < 1.0  # a real instantaneous response


def test_plan_default_epsilon_one_is_a_quarter_of_epsilon_inf() -> None:
    result = plan(10_000, 20, epsilon_inf=2.0, num_bloombits=(16,), num_cohorts=(4,))
    assert result.best.params.p > 0.0 and result.best.params.q < 1.0
    assert result.best.epsilon_one == pytest.approx(0.5, rel=1e-6)


def test_plan_infinite_epsilon_one_means_no_irr() -> None:
    result = plan(10_000, 20, epsilon_inf=2.0, epsilon_one=math.inf, num_bloombits=(16,), num_cohorts=(4,))
    assert (result.best.params.p, result.best.params.q) == (0.0, 1.0)
    assert result.best.epsilon_one == pytest.approx(2.0)


@pytest.mark.parametrize("epsilon_one", [2.0, 3.0])
def test_plan_fail_epsilon_one_not_below_epsilon_inf(epsilon_one: float) -> None:
    with pytest.raises(InvalidParameterError, match="'epsilon_one' parameter of plan must be below"):
        plan(10_000, 20, epsilon_inf=2.0, epsilon_one=epsilon_one, num_bloombits=(16,), num_cohorts=(4,))


@pytest.mark.parametrize("epsilon_one", [0.0, -1.0, math.nan])
def test_plan_fail_epsilon_one_not_positive(epsilon_one: float) -> None:
    with pytest.raises(InvalidParameterError, match="epsilon_one"):
        plan(10_000, 20, epsilon_inf=2.0, epsilon_one=epsilon_one, num_bloombits=(16,), num_cohorts=(4,))


def test_plan_fail_too_many_candidates() -> None:
    with pytest.raises(InvalidParameterError, match="separates"):
        plan(1000, 10_000, num_bloombits=(8,), num_cohorts=(1, 2))


def test_inflation_is_one_without_collisions() -> None:
    # one candidate: its m h bits are its own
    value = design_inflation(32, 2, 4, 1, rng=0)
    assert value == pytest.approx(1.0) and value >= 1.0  # rounding never goes below 1


def test_inflation_grows_with_candidates() -> None:
    values = [design_inflation(32, 2, 8, s, rng=1, n_designs=3) for s in (10, 60, 150)]
    assert values == sorted(values) and values[0] >= 1.0


def test_inflation_infinite_when_more_candidates_than_bits() -> None:
    assert math.isinf(design_inflation(8, 1, 2, 17))


def test_detection_frequency_shrinks_like_one_over_sqrt_n() -> None:
    params = Params(num_bloombits=32, num_hashes=2, num_cohorts=8, prob_p=0.25, prob_q=0.75, prob_f=0.5)
    a = detection_frequency(params, 10_000, 50, inflation=1.2)
    b = detection_frequency(params, 40_000, 50, inflation=1.2)
    assert a.frequency / b.frequency == pytest.approx(2.0)


@pytest.mark.slow
def test_predicted_detection_matches_simulation() -> None:
    # At the predicted frequency for power 0.5 and 0.9 the simulated detection rates match
    # (binomial test p-value > 1e-6, the STYLE threshold: false failure < 1e-6 per check
    # if the prediction were exact; the model's approximations leave some slack).
    params = Params(num_bloombits=32, num_hashes=2, num_cohorts=16, prob_p=0.25, prob_q=0.75, prob_f=0.25)
    n, s, reps = 200_000, 60, 300
    rng = np.random.default_rng(5)
    for power in (0.5, 0.9):
        pred = detection_frequency(params, n, s, power=power, rng=1)
        hits = simulate_detection(params, n, s, pred.frequency, critical_z=pred.critical_z, reps=reps, rng=rng)
        assert binomtest(hits, reps, power).pvalue > 1e-6, (power, hits / reps)


@pytest.mark.parametrize("epsilon_inf", [1e5, 1e308])
def test_plan_huge_epsilon_inf_is_no_overflow(epsilon_inf: float) -> None:
    # exp(epsilon_inf / 2h) overflowed: `rappor plan --epsilon-inf 1e5` ended in an OverflowError traceback.
    result = plan(1000, 10, epsilon_inf=epsilon_inf)
    assert result.best.params.epsilon_inf <= epsilon_inf
    assert 0.0 < result.best.params.prob_f < 1e-300
