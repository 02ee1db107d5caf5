"""Tests of rappor.client._randomizer: thresholds at their edges, the bit algebra on every kind of input, debiasing."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from rappor import Params
from rappor.client._randomizer import (
    WORD_SPAN,
    debias,
    debiased_variance,
    instantaneous_response,
    instantaneous_response_from_words,
    irr_thresholds,
    permanent_response,
    permanent_response_from_words,
    prr_threshold,
)
from rappor.params import report_probabilities

# --- Threshold arithmetic (32-bit resolution, edges) ---------------------------------------------


def test_prr_threshold_is_t_not_2t() -> None:
    # One meaning across the package: u < t sets the bit, t <= u < 2t clears it.
    assert prr_threshold(0.5) == 2**30
    assert prr_threshold(1.0) == 2**31
    assert prr_threshold(0.0) == 0


def test_prr_thresholds_edges() -> None:
    f = 0.3
    t = round(f * 2**31)
    u = np.array([[0, t - 1, t, 2 * t - 1, 2 * t, 2**32 - 1]], dtype=np.uint32)
    for b in (0, 1):
        bloom = np.full(u.shape, b, dtype=np.uint8)
        got = permanent_response_from_words(bloom, u, f)
        assert got.dtype == np.uint8
        assert got.tolist() == [[1, 1, 0, 0, b, b]]


def test_prr_f_one_and_zero() -> None:
    u = np.array([[0, 2**31 - 1, 2**31, 2**32 - 1]], dtype=np.uint32)
    bloom = np.array([[0, 0, 1, 1]], dtype=np.uint8)
    assert permanent_response_from_words(bloom, u, 1.0).tolist() == [[1, 1, 0, 0]]
    assert permanent_response_from_words(bloom, u, 0.0).tolist() == bloom.tolist()


def test_prr_resolution_finer_than_google_rappor() -> None:
    # f = 0.001 is not a multiple of 1/128 but still has its own threshold.
    assert prr_threshold(0.001) == round(0.001 * 2**31)
    assert prr_threshold(0.001) != prr_threshold(0.0)


def test_irr_thresholds_edges() -> None:
    assert irr_thresholds(0.0, 1.0) == (0, WORD_SPAN)
    v = np.array([[0, 2**32 - 1, 0, 2**32 - 1]], dtype=np.uint32)
    prr = np.array([[1, 1, 0, 0]], dtype=np.uint8)
    assert instantaneous_response_from_words(prr, v, 0.0, 1.0).tolist() == [[1, 1, 0, 0]]
    assert instantaneous_response_from_words(prr, v, 1.0, 0.0).tolist() == [[0, 0, 1, 1]]
    half = np.array([[2**31 - 1, 2**31, 2**31 - 1, 2**31]], dtype=np.uint32)
    assert instantaneous_response_from_words(prr, half, 0.5, 0.5).tolist() == [[1, 0, 1, 0]]


# --- The bit algebra: one rule for booleans, 0/1 integers and packed words -----------------------


def _truth_table() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rows = np.array(list(itertools.product((0, 1), repeat=3)), dtype=np.uint8)
    return rows[:, 0], rows[:, 1], rows[:, 2]


def test_permanent_response_truth_table() -> None:
    bloom, replace, coin = _truth_table()
    expected = np.where(replace == 1, coin, bloom)
    assert permanent_response(bloom, replace, coin).tolist() == expected.tolist()
    got = permanent_response(bloom.astype(bool), replace.astype(bool), coin.astype(bool))
    assert got.dtype == np.bool_ and got.tolist() == expected.astype(bool).tolist()


def test_instantaneous_response_truth_table() -> None:
    prr, ones_if_clear, ones_if_set = _truth_table()
    expected = np.where(prr == 1, ones_if_set, ones_if_clear)
    assert instantaneous_response(prr, ones_if_clear, ones_if_set).tolist() == expected.tolist()


def test_packed_words_give_the_bits_of_the_unpacked_rule() -> None:
    # The simulator applies the rule to 64 bits at a time; bit j of the result must be the
    # rule applied to bit j of the inputs.
    rng = np.random.default_rng(0)
    words = [rng.integers(0, 2**64, size=50, dtype=np.uint64, endpoint=False) for _ in range(3)]

    def unpack(w: np.ndarray) -> np.ndarray:
        return np.unpackbits(w.view(np.uint8), bitorder="little").astype(bool)

    for rule in (permanent_response, instantaneous_response):
        packed = unpack(rule(*words))
        assert np.array_equal(packed, rule(*[unpack(w) for w in words]))


def test_words_rule_has_the_law_of_the_paper() -> None:
    # Enumerate a 32-bit word at 2**-8 resolution (every 2**24-th word, f and p, q dyadic so the
    # thresholds fall on the grid): P(PRR = 1 | B) = f/2 + (1 - f) B exactly, P(IRR = 1 | PRR) = q or p.
    f, p, q = 0.375, 0.25, 0.75
    u = (np.arange(256, dtype=np.uint64) << np.uint64(24)).astype(np.uint32)
    for b in (0, 1):
        prr = permanent_response_from_words(np.full(256, b, dtype=np.uint8), u, f)
        assert prr.mean() == f / 2 + (1 - f) * b
    for bit, rate in ((0, p), (1, q)):
        irr = instantaneous_response_from_words(np.full(256, bit, dtype=np.uint8), u, p, q)
        assert irr.mean() == rate


# --- The per-bit channel and its inversion ---------------------------------------------------------


@pytest.mark.parametrize(("p", "q", "f"), [(0.5, 0.75, 0.5), (0.3, 0.8, 0.3), (0.0, 1.0, 0.0), (0.1, 0.9, 0.99)])
def test_report_probabilities_are_params_and_the_two_stage_law(p: float, q: float, f: float) -> None:
    params = Params(num_bloombits=8, num_hashes=1, num_cohorts=1, prob_p=p, prob_q=q, prob_f=f)
    p11, p01 = report_probabilities(p, q, f)
    assert (p11, p01) == (params.p11, params.p01)
    # PRR keeps the bit with 1 - f/2 and flips it with f/2; then the IRR reports q or p.
    assert p11 == pytest.approx((1 - f / 2) * q + f / 2 * p, abs=1e-15)
    assert p01 == pytest.approx(f / 2 * q + (1 - f / 2) * p, abs=1e-15)


def test_debias_inverts_the_expected_rate() -> None:
    p11, p01 = report_probabilities(0.3, 0.8, 0.3)
    x = np.linspace(0.0, 1.0, 11)
    assert np.allclose(debias(p01 + (p11 - p01) * x, p01, p11 - p01), x, rtol=0, atol=1e-14)
    # On counts: the paper's t = (c - p01 N) / (p11 - p01).
    n = 1000.0
    assert np.allclose(debias((p01 + (p11 - p01) * x) * n, p01 * n, p11 - p01), x * n, rtol=0, atol=1e-10)


def test_debiased_variance_is_binomial_over_squared_gap() -> None:
    # Var(rate) = r (1 - r) / n; dividing by gap**2 gives Var(debias(rate)).
    assert debiased_variance(0.25, 100, 0.5) == pytest.approx(0.25 * 0.75 / 100 / 0.25)
    rng = np.random.default_rng(1)
    p11, p01 = report_probabilities(0.25, 0.75, 0.5)
    n, x = 400, 0.3
    rate = p01 + (p11 - p01) * x
    draws = debias(rng.binomial(n, rate, size=200_000) / n, p01, p11 - p01)
    # The sample variance of 200,000 draws has relative standard error sqrt(2 / 200,000) = 0.3%;
    # 2% is more than 6 of them.
    assert draws.var() == pytest.approx(debiased_variance(rate, n, p11 - p01), rel=0.02)
