"""Tests of rappor.analysis.decoder._null: the random-string null law."""

from __future__ import annotations

import numpy as np

from rappor.analysis.decoder import _null


def test_random_string_null_matches_monte_carlo():
    """Saddlepoint tail of a random string's score vs direct simulation of random strings.

    A residual with a heavy string on bits 0 and 1 of every cohort (skewed law).  With
    200,000 simulated strings the Monte Carlo tail ``q`` has relative sd
    ``sqrt((1 - q) / (q n))`` (7% at q = 1e-3); we allow 25% (3.5 sd, false failure < 1e-3)
    for q in {0.1, 0.01, 0.001}.
    """
    rng = np.random.default_rng(7)
    k, h, m = 16, 2, 64
    resid = rng.normal(size=(m, k))
    resid[:, :2] += 3.0
    resid = (resid - resid.mean()).ravel()
    null = _null.random_string_null(resid, k, h, rng)
    assert null.exact and null.skewness > 0.03  # right-skewed (measured 0.07)
    bits = rng.integers(0, k, size=(200_000, m, h))
    fresh = bits[:, :, 1] != bits[:, :, 0]
    v = resid.reshape(m, k)
    score = v[np.arange(m), bits[:, :, 0]].sum(axis=1) + (v[np.arange(m), bits[:, :, 1]] * fresh).sum(axis=1)
    for q in (0.1, 0.01, 0.001):
        x = np.quantile(score, 1.0 - q)
        assert abs(float(null.sf(x)) / float(np.mean(score >= x)) - 1.0) < 0.25
    assert float(null.sf(np.inf)) < 1e-12



def test_random_string_null_degenerate_residual():
    """A zero residual (exact fit): every random string scores 0, so P(score >= x) is a step."""
    null = _null.random_string_null(np.zeros(4 * 8), 8, 2, np.random.default_rng(0))
    assert null.sd == 0.0
    np.testing.assert_allclose(null.sf(np.array([-1.0, 0.0, 1e-3])), [1.0, 1.0, 0.0], atol=1e-300)



def test_random_string_null_of_a_lattice_law_is_not_carried_down_by_its_edge():
    """A residual equal on every bit of a cohort: a random string scores ``r`` per distinct bit.

    With ``r = -1``, k=16, h=2 and 16 cohorts the score is ``-2`` a cohort unless the two hashes
    collide (``-1``, probability 1/16): its law is ``-32 + Binomial(16, 1/16)``, so
    ``P(score >= -32) = 1`` and ``P(score >= -31) = 1 - (15/16)^16 = 0.64``.  At the law's lower
    edge ``K'' -> 0`` and the Lugannani-Rice correction diverges; that point once gave a tail of
    1e-300, which the monotone envelope carried to every score, so every candidate of counts
    below the background (all-zero counts, one client) was "detected".  Its lower tail is
    approximate (measured 0.31); what matters is that it is not the far tail.
    """
    null = _null.random_string_null(np.full(16 * 16, -1.0), 16, 2, np.random.default_rng(0))
    assert float(null.sf(np.array([-32.0]))[0]) > 0.1
    assert float(null.sf(np.array([-31.0]))[0]) > 0.1
    # Its upper tail: P(score >= -16) = (1/16)^16 = 5e-20, within a factor of 10.
    assert 5e-21 < float(null.sf(np.array([-16.0]))[0]) < 5e-19


def test_counts_below_the_background_detect_nothing():
    """All-zero counts (every bit below what p alone gives): no candidate explains them."""
    from rappor import Aggregate, Decoder, Params, hash_candidates

    params = Params(num_bloombits=16, num_hashes=2, num_cohorts=16, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    counts = np.zeros((16, 17), dtype=np.int64)
    counts[:, 0] = 1000
    res = Decoder().decode(Aggregate(params=params, counts=counts), hash_candidates([f"v{i}" for i in range(25)], params))
    assert int(np.sum(res.detected)) == 0
