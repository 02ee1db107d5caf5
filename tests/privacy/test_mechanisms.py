"""Tests for rappor.privacy._mechanisms: privacy maps by exact enumeration, unbiasedness, seeded statistics.

Statistical tolerances are in standard errors.  A two-sided normal deviation beyond 4 SE
has probability 6.3e-5; with at most 10 such checks per test the false-failure
probability of a test is below 1e-3 (and each runs on a fixed seed, so it is
deterministic once it passes).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import binomtest

from rappor import Params
from rappor.exceptions import InvalidParameterError
from rappor.privacy._mechanisms import (
    BinaryRandomizedResponse,
    KaryRandomizedResponse,
    _debias_rate,
    epsilon_from_lying_probability,
    lying_probability_from_epsilon,
)
from rappor.privacy._rappor_mechanisms import BasicRappor, KRappor, TwoStageRappor, two_stage_rate
from rappor.privacy._accounting import tight_rho

Z = 4.0  # tolerance in standard errors (two-sided tail 6.3e-5 each)


def _log(fr: Fraction) -> float:
    return math.log(fr.numerator) - math.log(fr.denominator)


def _max_log_ratio(a: dict, b: dict) -> float:
    return max(max(_log(a[y] / b[y]) for y in a), max(_log(b[y] / a[y]) for y in a))


def _renyi(a: dict, b: dict, alpha: int) -> float:
    return _log(sum(a[y] ** alpha * b[y] ** (1 - alpha) for y in a)) / (alpha - 1)


def _holds_tightly(brute: float, closed: float) -> None:
    assert brute <= closed * (1 + 1e-12)
    assert not brute <= closed * (1 - 1e-9)


def _flip_dist(bits: tuple[int, ...], theta: Fraction) -> dict:
    out = {}
    for y in itertools.product((0, 1), repeat=len(bits)):
        pr = Fraction(1)
        for b, yi in zip(bits, y):
            pr *= theta if b != yi else 1 - theta
        out[y] = pr
    return out


# ----------------------------------------------------------------------------- binary RR


def test_binary_rr_prob_075_is_ln3_from_both_sides() -> None:
    rr = BinaryRandomizedResponse(0.75)
    assert rr.map(d_in=1) == pytest.approx(math.log(3.0), rel=1e-15)
    assert rr.check(1, math.log(3.0))
    assert not rr.check(1, math.log(2.999))
    assert rr.map(d_in=0) == 0.0


@pytest.mark.parametrize("prob", [Fraction(3, 4), Fraction(9, 10), Fraction(1, 5)])
def test_binary_rr_epsilon_and_rdp_match_enumeration(prob: Fraction) -> None:
    rr = BinaryRandomizedResponse(float(prob))
    a, b = {1: prob, 0: 1 - prob}, {1: 1 - prob, 0: prob}
    _holds_tightly(_max_log_ratio(a, b), rr.epsilon)
    np.testing.assert_allclose(rr.rdp([2, 3, 6]), [_renyi(a, b, x) for x in (2, 3, 6)], rtol=1e-12)


def test_binary_rr_rho_is_below_classic_bound() -> None:
    rr = BinaryRandomizedResponse(0.75)
    assert rr.rho_zcdp == pytest.approx(math.log(3) * 0.5, rel=1e-9)  # eps tanh(eps/2), tanh(ln3/2) = 1/2
    assert rr.rho_zcdp < math.log(3) ** 2 / 2


def test_binary_rr_from_epsilon_roundtrip() -> None:
    assert BinaryRandomizedResponse.from_epsilon(math.log(3)).prob == pytest.approx(0.75)


def test_lying_probability_roundtrip() -> None:
    assert epsilon_from_lying_probability(0.25) == pytest.approx(math.log(3))
    assert lying_probability_from_epsilon(math.log(3)) == pytest.approx(0.25)
    assert epsilon_from_lying_probability(0.0) == math.inf


def test_lying_probability_fail_above_half() -> None:
    with pytest.raises(InvalidParameterError, match="lying_prob"):
        epsilon_from_lying_probability(0.6)


def test_binary_rr_estimate_is_exactly_unbiased_in_expectation() -> None:
    # Feed the expected rate: the estimator returns the truth.
    rr = BinaryRandomizedResponse(0.8)
    for x in (0.0, 0.23, 1.0):
        lam = (1 - 0.8) + x * (2 * 0.8 - 1)
        assert float(_debias_rate(lam, 100, 1 - rr.prob, 2 * rr.prob - 1).proportion) == pytest.approx(x)


def test_binary_rr_1000_responses_rate_023_debias() -> None:
    rr = BinaryRandomizedResponse(0.75)
    truth = np.zeros(1000, dtype=bool)
    truth[:230] = True
    est = rr.estimate(rr(truth, rng=20240501))
    assert abs(est.proportion - 0.23) < Z * est.prop_std_error
    assert abs(est.estimate - 230) < Z * est.std_error
    # SE from theory: sqrt(lam (1 - lam) / n) / (2 prob - 1), lam = 0.25 + 0.23 * 0.5
    assert est.prop_std_error == pytest.approx(math.sqrt(0.365 * 0.635 / 1000) / 0.5, rel=0.15)
    low, high = est.confidence_interval(0.95)
    assert low < est.proportion < high


def test_binary_rr_confidence_interval_coverage() -> None:
    # 400 repetitions: coverage of the 95% interval is a binomial proportion; p-value > 1e-6 (as STYLE).
    rr, gen = BinaryRandomizedResponse(0.75), np.random.default_rng(7)
    truth = np.zeros(1000, dtype=bool)
    truth[:230] = True
    hits = 0
    for _ in range(400):
        low, high = rr.estimate(rr(gen.permutation(truth), rng=gen)).confidence_interval(0.95)
        hits += low <= 0.23 <= high
    assert binomtest(hits, 400, 0.95).pvalue > 1e-6


def test_binary_rr_fail_non_binary_values() -> None:
    with pytest.raises(InvalidParameterError, match="0/1"):
        BinaryRandomizedResponse(0.75)(np.array([0, 2]), rng=0)


def test_binary_rr_degenerate_prob_half_gives_nan() -> None:
    est = BinaryRandomizedResponse(0.5).estimate([0, 1, 1])
    assert math.isnan(est.proportion)


# ----------------------------------------------------------------------------- k-ary RR


def _krr_dist(k: int, x: int, uniform: Fraction) -> dict:
    """The 'report a uniform category with probability p' process, enumerated."""
    return {y: (1 - uniform) * (y == x) + uniform / k for y in range(k)}


@pytest.mark.parametrize("k", [2, 3, 4, 7])
@pytest.mark.parametrize("uniform", [Fraction(1, 2), Fraction(3, 4)])
def test_krr_epsilon_and_rdp_match_enumeration(k: int, uniform: Fraction) -> None:
    mech = KaryRandomizedResponse.from_uniform_prob(k, float(uniform))
    a, b = _krr_dist(k, 0, uniform), _krr_dist(k, 1, uniform)
    _holds_tightly(_max_log_ratio(a, b), mech.epsilon)
    np.testing.assert_allclose(mech.rdp([2, 3, 5]), [_renyi(a, b, x) for x in (2, 3, 5)], rtol=1e-10)


def test_krr_parameterizations_agree() -> None:
    k, eps = 10, math.log(3)
    a = KaryRandomizedResponse.from_epsilon(k, eps)
    b = KaryRandomizedResponse.from_uniform_prob(k, k / (k - 1 + math.exp(eps)))
    assert a.prob == pytest.approx(b.prob)
    assert a.epsilon == pytest.approx(eps)
    assert a.prob == pytest.approx(math.exp(eps) / (k - 1 + math.exp(eps)))
    assert math.log(a.prob * (k - 1) / (1 - a.prob)) == pytest.approx(eps)


def test_krr_three_debiasing_forms_agree_and_are_unbiased() -> None:
    mech = KaryRandomizedResponse.from_epsilon(4, 1.0)
    counts_true = np.array([100.0, 400.0, 300.0, 200.0])
    n, p, k = 1000, mech.uniform_prob, 4
    expected = counts_true * (1 - p) + n * p / k  # E[Y_j]
    np.testing.assert_allclose(mech.debias_counts(expected), counts_true)
    np.testing.assert_allclose(mech.estimate_from_counts(expected).estimate, counts_true)
    y = mech(np.repeat(np.arange(4), [100, 400, 300, 200]), rng=3)
    np.testing.assert_allclose(mech.debias_onehot(y).sum(axis=0), mech.debias_counts(np.bincount(y, minlength=4)))
    np.testing.assert_allclose(mech.estimate(y).estimate, mech.debias_counts(np.bincount(y, minlength=4)))


def test_krr_four_categories_debias() -> None:
    truth = np.array([0.1, 0.4, 0.3, 0.2])
    values = np.repeat(np.arange(4), (truth * 10_000).astype(int))
    mech = KaryRandomizedResponse.from_epsilon(4, math.log(3))
    est = mech.estimate(mech(values, rng=11))
    assert np.all(np.abs(est.proportion - truth) < Z * est.prop_std_error)


def test_krr_k10_ln3_100000_samples() -> None:
    gen = np.random.default_rng(2024)
    truth = gen.dirichlet(np.ones(10))
    values = gen.choice(10, size=100_000, p=truth)
    mech = KaryRandomizedResponse.from_epsilon(10, math.log(3))
    est = mech.estimate(mech(values, rng=gen))
    # sampling of the values is part of the variance model (population proportions)
    assert np.all(np.abs(est.proportion - truth) < Z * est.prop_std_error)
    # the empirical keep rate matches prob = 3/12 (binomial test, p-value > 1e-6)
    y = mech(values, rng=gen)
    assert binomtest(int((y == values).sum()), values.size, 0.25).pvalue > 1e-6


def test_krr_fail_out_of_range_category() -> None:
    with pytest.raises(InvalidParameterError, match=r"\[0, 3\]"):
        KaryRandomizedResponse(4, 0.5)([4], rng=0)


# ----------------------------------------------------------------------------- basic RAPPOR and k-RAPPOR


@pytest.mark.parametrize("d", [2, 3, 4])
@pytest.mark.parametrize("eps", [0.5, math.log(3), 2.0])
def test_basic_rappor_epsilon_and_rdp_match_enumeration(d: int, eps: float) -> None:
    mech = BasicRappor(d, eps)
    theta = Fraction(mech.flip_prob)
    a = _flip_dist(tuple(int(i == 0) for i in range(d)), theta)
    b = _flip_dist(tuple(int(i == 1) for i in range(d)), theta)
    _holds_tightly(_max_log_ratio(a, b), mech.map(1))
    np.testing.assert_allclose(mech.rdp([2, 4]), [_renyi(a, b, x) for x in (2, 4)], rtol=1e-10)


def test_krappor_worst_pair_over_all_sets_matches_epsilon() -> None:
    d, kmax, eps = 4, 2, 1.5
    mech = KRappor(d, kmax, eps)
    theta = Fraction(mech.flip_prob)
    sets = [s for r in range(kmax + 1) for s in itertools.combinations(range(d), r)]
    dists = {s: _flip_dist(tuple(int(i in s) for i in range(d)), theta) for s in sets}
    worst = max(_max_log_ratio(dists[s], dists[t]) for s in sets for t in sets)
    _holds_tightly(worst, mech.map(1))
    a, b = dists[(0, 1)], dists[(2, 3)]
    np.testing.assert_allclose(mech.rdp([2, 3]), [_renyi(a, b, x) for x in (2, 3)], rtol=1e-10)
    assert mech.rho_zcdp == pytest.approx(tight_rho(mech.rdp))


def test_basic_rappor_debias() -> None:
    truth = np.array([0.1, 0.4, 0.3, 0.2])
    mech = BasicRappor(4, 2.0)
    values = np.repeat(np.arange(4), (truth * 20_000).astype(int))
    est = mech.estimate(mech(values, rng=5))
    assert np.all(np.abs(est.proportion - truth) < Z * est.prop_std_error)


def test_krappor_debias_sets() -> None:
    gen = np.random.default_rng(9)
    truth = np.array([0.5, 0.2, 0.7, 0.1, 0.3])
    sets = gen.random((20_000, 5)) < truth
    over = sets.sum(axis=1) > 2
    sets[over] = False  # keep <= 2 items per client
    mech = KRappor(5, 2, 3.0)
    est = mech.estimate(mech(sets, rng=gen))
    assert np.all(np.abs(est.proportion - sets.mean(axis=0)) < Z * est.prop_std_error)


def test_krappor_fail_too_many_items() -> None:
    with pytest.raises(InvalidParameterError, match="at most 1 ones"):
        KRappor(3, 1, 1.0)(np.array([[1, 1, 0]]), rng=0)


# ----------------------------------------------------------------------------- two-stage RAPPOR


def _two_stage_dist(x: int, p: Fraction, q: Fraction, f: Fraction) -> dict:
    """Enumerate PRR (keep / coin 1 / coin 0) then IRR, without using p11/p01."""
    prr = {1: (1 - f) * x + f / 2, 0: (1 - f) * (1 - x) + f / 2}  # keep w.p. 1 - f, else a fair coin
    one = prr[1] * q + prr[0] * p
    return {1: one, 0: 1 - one}


@pytest.mark.parametrize("p,q,f", [(Fraction(1, 2), Fraction(3, 4), Fraction(1, 2)),
                                   (Fraction(1, 4), Fraction(3, 4), Fraction(1, 4)),
                                   (Fraction(1, 8), Fraction(3, 4), Fraction(1, 2))])
def test_two_stage_epsilon_is_max_form_not_odds_ratio(p: Fraction, q: Fraction, f: Fraction) -> None:
    mech = TwoStageRappor(float(p), float(q), float(f))
    a, b = _two_stage_dist(1, p, q, f), _two_stage_dist(0, p, q, f)
    brute = _max_log_ratio(a, b)
    _holds_tightly(brute, mech.epsilon)
    # The Bloom formula with h = 1 (Params.epsilon_one) counts two changed bits: too large here.
    params = Params(num_bloombits=1, num_hashes=1, num_cohorts=1, prob_p=float(p), prob_q=float(q), prob_f=float(f))
    assert params.epsilon_one > brute * (1 + 1e-6)
    np.testing.assert_allclose(mech.rdp([2, 3]), [max(_renyi(a, b, x), _renyi(b, a, x)) for x in (2, 3)], rtol=1e-10)
    prr_a = {1: 1 - f / 2, 0: f / 2}
    prr_b = {1: f / 2, 0: 1 - f / 2}
    _holds_tightly(_max_log_ratio(prr_a, prr_b), mech.epsilon_permanent)


def test_two_stage_rate_formula_is_unbiased() -> None:
    p, q, f = 0.5, 0.75, 0.5
    for x in (0.0, 0.3, 1.0):
        raw = x * (q * (1 - f / 2) + p * f / 2) + (1 - x) * (p * (1 - f / 2) + q * f / 2)
        est = two_stage_rate(raw * 1000, 1000, prob_p=p, prob_q=q, prob_f=f)
        assert float(est.proportion) == pytest.approx(x)
        assert float(est.proportion) == pytest.approx((raw - p - f * q / 2 + f * p / 2) / ((1 - f) * (q - p)))


def test_two_stage_simulated_rate() -> None:
    mech = TwoStageRappor.from_params(Params(num_bloombits=8, num_hashes=2, num_cohorts=1,
                                             prob_p=0.5, prob_q=0.75, prob_f=0.5))
    truth = np.zeros(50_000, dtype=bool)
    truth[:15_000] = True
    est = mech.estimate(mech(truth, rng=31))
    assert abs(est.proportion - 0.3) < Z * est.prop_std_error


def test_two_stage_rate_fail_ones_above_n() -> None:
    with pytest.raises(InvalidParameterError, match="ones"):
        two_stage_rate(11, 10, prob_p=0.5, prob_q=0.75, prob_f=0.5)


def test_confidence_interval_fail_bad_level() -> None:
    est = BinaryRandomizedResponse(0.75).estimate([0, 1, 1, 1])
    with pytest.raises(InvalidParameterError, match="confidence_level"):
        est.confidence_interval(1.5)


def test_map_fail_negative_distance() -> None:
    with pytest.raises(InvalidParameterError, match="d_in"):
        BinaryRandomizedResponse(0.75).map(-1)
