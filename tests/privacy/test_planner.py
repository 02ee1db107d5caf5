"""Tests for rappor.privacy._planner: privacy targets met exactly, and the designs it refuses."""

from __future__ import annotations

import math

import pytest

from rappor import Params
from rappor.exceptions import InvalidParameterError
from rappor.privacy._planner import plan


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


@pytest.mark.parametrize("epsilon_inf", [1e5, 1e308])
def test_plan_huge_epsilon_inf_is_no_overflow(epsilon_inf: float) -> None:
    # exp(epsilon_inf / 2h) overflowed: `rappor plan --epsilon-inf 1e5` ended in an OverflowError traceback.
    result = plan(1000, 10, epsilon_inf=epsilon_inf)
    assert result.best.params.epsilon_inf <= epsilon_inf
    assert 0.0 < result.best.params.prob_f < 1e-300


def test_plan_refuses_an_epsilon_too_small_for_double_precision() -> None:
    with pytest.raises(InvalidParameterError, match="The 'epsilon_inf' parameter of plan must leave a report"):
        plan(1000, 10, epsilon_inf=1e-300)
    with pytest.raises(InvalidParameterError, match="The 'n_reports' parameter of plan must be an int in the range"):
        plan(10**400, 10)
