"""Tests for rappor.privacy._detection: inflation behaviour, predicted detection against exact GLS and simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest

from rappor import Params
from rappor.exceptions import InvalidParameterError
from rappor.privacy._detection import design_inflation, detection_frequency, simulate_detection

#: google/rappor's demo parameters: what a decode of a given size can be expected to find.
DEMO = Params(num_bloombits=16, num_hashes=2, num_cohorts=64, prob_p=0.5, prob_q=0.75, prob_f=0.5)

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


def test_detection_probability_inverts_detection_frequency() -> None:
    """The frequency predicted for power 0.8 is detected with probability 0.8 (the same formula both ways)."""
    from rappor.privacy._detection import detection_probability

    pred = detection_frequency(DEMO, 100_000, 100, power=0.8)
    assert detection_probability(pred, [pred.frequency])[0] == pytest.approx(0.8, abs=1e-12)
    assert detection_probability(pred, [0.0])[0] < 1e-3  # an absent string: the Bonferroni level per candidate


def test_detection_outlook_matches_exact_gls_on_the_real_map() -> None:
    """The demo's expected number of detections, checked against an independent computation.

    Independent figure: the generalized least-squares standard error of every candidate on the
    demo's *actual* candidate map, ``sd_j^2 = lam (1 - lam) / ((N/m) (p11 - p01)^2) [(X'X)^-1]_jj``
    (the planner averages random Bloom designs instead), and ``sum_j Phi(x_j / sd_j - z)`` with
    ``z = z_{1 - 0.05/100}``.  Measured 6.208 (exact) against 6.217 (planner); 5% allowed.
    """
    from scipy import stats

    from rappor import Population, hash_candidates
    from rappor.privacy._detection import detection_outlook

    shares = Population.zipf(100).probabilities
    outlook = detection_outlook(DEMO, 100_000, shares)
    x = hash_candidates([f"v{i}" for i in range(1, 101)], DEMO).matrix.toarray()
    c = DEMO.p11 - DEMO.p01
    lam = DEMO.p01 + c * (1 - (1 - 1 / DEMO.k) ** DEMO.h)
    sd = np.sqrt(lam * (1 - lam) / (100_000 / DEMO.m * c**2) * np.diag(np.linalg.inv(x.T @ x)))
    exact = float(stats.norm.cdf(shares / sd - stats.norm.isf(0.05 / 100)).sum())
    assert outlook.expected == pytest.approx(exact, rel=0.05)
    assert outlook.prediction.std_error == pytest.approx(float(np.sqrt(np.mean(sd**2))), rel=0.05)
    assert outlook.above == int(np.sum(shares >= outlook.frequency)) and outlook.n_strings == 100
    assert outlook.mass_above == pytest.approx(float(shares[shares >= outlook.frequency].sum()))
    assert not outlook.large and outlook.at_most == int(1 / outlook.frequency)


def test_reports_for_frequency_follows_one_over_sqrt_n() -> None:
    """N' from reports_for_frequency makes detection_frequency hit the target (inflation held fixed)."""
    from rappor.privacy._detection import reports_for_frequency

    pred = detection_frequency(DEMO, 100_000, 100, inflation=1.3)
    n2 = reports_for_frequency(pred.frequency, 100_000, 0.01)
    assert detection_frequency(DEMO, n2, 100, inflation=1.3).frequency == pytest.approx(0.01, rel=1e-4)


def test_high_privacy_outlook_says_the_detectable_share_is_large() -> None:
    """f = 0.75 (or p, q close) at 100,000 reports: the smallest detectable share is large, and the note says so."""
    from rappor.report._explain import detectable_share_note
    from rappor.privacy._detection import detection_outlook

    for params in (Params(num_bloombits=16, num_hashes=2, num_cohorts=64, prob_p=0.5, prob_q=0.75, prob_f=0.75),
                   Params(num_bloombits=16, num_hashes=2, num_cohorts=64, prob_p=0.45, prob_q=0.55, prob_f=0.5)):
        outlook = detection_outlook(params, 100_000, np.full(200, 1 / 200))
        assert outlook.large and outlook.frequency > 0.05
        note = detectable_share_note(outlook.frequency, 100_000, params)
        assert note is not None and f"at most {outlook.at_most} strings" in note and "f=" in note
    assert detectable_share_note(0.03, 100_000) is None  # the demo's 0.033: no note
    assert detectable_share_note(1.7, 1_000).startswith("No string can be detected with 1,000 reports")


def test_outlook_with_more_candidates_than_bits_says_nothing_is_detectable() -> None:
    """100 candidates on k=8 m=1 (8 rows): no finite detectable share; the text says so instead of 'inf'."""
    from rappor import Population
    from rappor.report._explain import outlook_text
    from rappor.privacy._detection import detection_outlook

    params = Params(num_bloombits=8, num_hashes=2, num_cohorts=1, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    outlook = detection_outlook(params, 100_000, Population.zipf(100).probabilities)
    assert math.isinf(outlook.frequency) and outlook.above == 0
    assert outlook.as_dict()["detectable_share"] is None
    text = outlook_text(outlook, params, found=0)
    assert "no string can be detected" in text and "inf" not in text and text.endswith("Found 0.")


@pytest.mark.parametrize("shares", [[math.nan, 0.5], [-0.5, 0.5], [5, 5], [math.inf], [0.7, 0.7], ["x"]])
def test_detection_outlook_refuses_shares_that_are_not_shares(shares) -> None:  # type: ignore[no-untyped-def]
    """Before, [nan, 0.5], [-0.5, 0.5], [5, 5] and [inf] gave 1.0, 1.0, 2.0 and 0.0 strings expected."""
    from rappor.privacy import detection_outlook

    params = Params(num_bloombits=16, num_hashes=2, num_cohorts=8, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    with pytest.raises(InvalidParameterError, match="The 'frequencies' parameter of detection_outlook must hold"):
        detection_outlook(params, 1000, shares)
