"""Tests for rappor.metrics on hand-made cases (every expected value worked out by hand)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from rappor.exceptions import InvalidParameterError
from rappor.metrics import Metrics, evaluate, evaluate_result

TRUTH = {"a": 50, "b": 30, "c": 15, "d": 5}  # shares .5 .3 .15 .05


def test_evaluate_perfect_recovery():
    m = evaluate(TRUTH, ["a", "b", "c", "d"], [0.5, 0.3, 0.15, 0.05], detected=[True] * 4)
    assert m.total_variation == pytest.approx(0.0)
    assert (m.n_detected, m.true_positives, m.false_positives, m.false_negatives) == (4, 4, 0, 0)
    assert m.allocated_mass == pytest.approx(1.0)
    assert m.unexplained_mass == pytest.approx(0.0)
    assert m.smallest_detected == pytest.approx(0.05)
    assert math.isnan(m.largest_missed)
    assert math.isnan(m.coverage)


def test_evaluate_missing_counts_as_zero():
    # d is a candidate but not detected (its estimate is ignored), c is not a candidate,
    # x is a decoy falsely detected at 0.02.
    m = evaluate(TRUTH, ["a", "b", "d", "x"], [0.48, 0.33, 0.9, 0.02], detected=[True, True, False, True])
    # TV = 1/2 (|.48-.5| + |.33-.3| + |0-.05| + |.02-0| + .15 (c, missing)) = 1/2 (.02+.03+.05+.02+.15)
    assert m.total_variation == pytest.approx(0.135)
    assert m.false_positives == 1 and m.true_positives == 2
    assert m.false_negatives == 1  # d
    assert m.missing_candidates == 1  # c
    assert m.true_unexplained_mass == pytest.approx(0.15)
    assert m.allocated_mass == pytest.approx(0.48 + 0.33 + 0.02)
    assert m.unexplained_mass == pytest.approx(1 - 0.83)
    assert m.smallest_detected == pytest.approx(0.3)
    assert m.largest_missed == pytest.approx(0.05)
    assert (m.n_true, m.n_candidates, m.n_detected) == (4, 4, 3)


def test_evaluate_total_variation_is_one_when_disjoint():
    m = evaluate({"a": 1}, ["b"], [1.0], detected=[True])
    assert m.total_variation == pytest.approx(1.0)


def test_evaluate_coverage():
    m = evaluate(TRUTH, ["a", "b", "x"], [0.5, 0.2, 0.0], detected=[True, True, False],
                 low=[0.45, 0.1, -0.01], high=[0.55, 0.25, 0.01])
    # a covers .5, b misses .3, decoy x covers 0
    assert m.coverage == pytest.approx(2 / 3)


def test_evaluate_zero_counts_in_truth_are_ignored():
    m = evaluate({"a": 10, "z": 0}, ["a", "z"], [1.0, 0.1], detected=[True, True])
    assert m.n_true == 1 and m.false_positives == 1


def test_metrics_as_dict_json_ready():
    m = evaluate(TRUTH, ["a"], [0.5], detected=[False])
    d = m.as_dict()
    assert d["smallest_detected"] is None and d["largest_missed"] == pytest.approx(0.5)
    assert set(d) == set(Metrics.__dataclass_fields__)


def test_evaluate_fail_length_mismatch():
    with pytest.raises(InvalidParameterError, match="proportion"):
        evaluate(TRUTH, ["a", "b"], [0.5], detected=[True, True])


def test_evaluate_fail_empty_truth():
    with pytest.raises(InvalidParameterError, match="at least one report"):
        evaluate({}, ["a"], [0.5], detected=[True])


def test_evaluate_result_duck_typed():
    interval = SimpleNamespace(low=np.array([0.4, 0.0]), high=np.array([0.6, 0.1]))
    result = SimpleNamespace(strings=("a", "x"), proportion=np.array([0.5, 0.05]), significant=np.array([True, False]),
                             confidence_interval=lambda confidence_level=0.95, kind="proportion": interval)
    m = evaluate_result(result, TRUTH)
    assert m.true_positives == 1 and m.coverage == pytest.approx(1.0)


def test_bit_residuals_standard_normal_under_the_model(rng):
    # Simulated counts from the exact model: residuals are ~N(0, 1); with 4*8 = 32 cells,
    # |r| < 5 everywhere fails with probability about 32 * 5.7e-7 < 2e-5.
    from rappor import Params, hash_candidates
    from rappor.metrics import bit_residuals
    from rappor.simulation import Population, simulate

    params = Params(num_bloombits=8, num_hashes=2, num_cohorts=4, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    pop = Population.zipf(3)
    sim = simulate(params, pop, 20_000, rng=rng)
    cmap = hash_candidates(list(pop.strings), params)
    res = bit_residuals(sim.aggregate, cmap, pop.probabilities)
    assert res.shape == (4, 8)
    assert np.abs(res).max() < 5
    # A wrong fit (all mass on the least frequent string) is visible.
    wrong = bit_residuals(sim.aggregate, cmap, [0.0, 0.0, 1.0])
    assert np.abs(wrong).max() > 10
