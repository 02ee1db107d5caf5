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

