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


def test_plan_without_epsilon_one_uses_no_irr() -> None:
    result = plan(10_000, 20, epsilon_inf=2.0, num_bloombits=(16,), num_cohorts=(4,))
    assert (result.best.params.p, result.best.params.q) == (0.0, 1.0)
    assert result.best.epsilon_one == pytest.approx(2.0)


def test_plan_fail_too_many_candidates() -> None:
    with pytest.raises(InvalidParameterError, match="separates"):
        plan(1000, 10_000, num_bloombits=(8,), num_cohorts=(1, 2))


def test_inflation_is_one_without_collisions() -> None:
    # one candidate: its m h bits are its own
    assert design_inflation(32, 2, 4, 1, rng=0) == pytest.approx(1.0)


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
