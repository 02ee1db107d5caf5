"""Tests of rappor.analysis.decoder._intervals: the truncated-normal (selective) interval and mean."""

from __future__ import annotations

import numpy as np

from scipy import stats

from rappor.analysis.decoder._intervals import truncated_normal_interval, truncated_normal_mean_inverse


def test_truncated_normal_interval_covers_conditionally():
    """Draws of N(mu, 1) kept only above the cutoff: the conditional interval covers mu 95% of the time.

    4,000 kept draws per mu: the coverage's SE is sqrt(0.95 x 0.05 / 4000) = 0.0034; we allow
    4 SE (0.014), a false failure below 1e-4 per mu.  Far above the cutoff it is the Wald interval.
    """
    rng = np.random.default_rng(7)
    cutoff = 2.0
    for mu in (0.0, 1.5, 3.0, 6.0):
        z = rng.normal(mu, 1.0, size=400_000)
        z = z[z > cutoff][:4000]
        assert len(z) == 4000
        low, high = truncated_normal_interval(z, cutoff, 0.95)
        assert np.all(low <= high)
        assert abs(np.mean((low <= mu) & (mu <= high)) - 0.95) < 0.014
    low, high = truncated_normal_interval(np.array([15.0]), cutoff, 0.95)
    np.testing.assert_allclose([low[0], high[0]], [15.0 - 1.959964, 15.0 + 1.959964], atol=1e-4)



def test_truncated_normal_mean_inverse_recovers_mu():
    """The mean of N(mu, 1) truncated to (c, inf) is scipy's truncnorm mean; the inverse gives mu back.

    Bisection to 60 halvings of a bracket of width < 25: error below 1e-12; we allow 1e-8.
    """
    cutoff = np.array([2.0, 2.0, 3.0, 3.0, 1.0])
    mu = np.array([0.1, 1.0, 2.5, 7.0, 4.0])
    mean = stats.truncnorm.mean(cutoff - mu, np.inf, loc=mu)
    np.testing.assert_allclose(truncated_normal_mean_inverse(mean, cutoff), mu, atol=1e-8)


def test_truncated_normal_mean_inverse_is_zero_below_the_mean_at_zero():
    """An observation below the truncated mean at mu = 0 (3.283 for c = 3) gets mu = 0, not a negative effect."""
    at_zero = float(stats.truncnorm.mean(3.0, np.inf))
    out = truncated_normal_mean_inverse(np.array([3.0, at_zero - 1e-6, at_zero + 0.05]), np.array([3.0, 3.0, 3.0]))
    assert out[0] == 0.0 and out[1] == 0.0
    # the truncated mean rises slowly near mu = 0 (slope 0.08 at c = 3): +0.05 in the mean is mu = 0.61
    assert 0.5 < out[2] < 0.7
