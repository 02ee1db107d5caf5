"""The tail functions agree with scipy.stats' (they evaluate the same expressions).

Each of ours is one special-function call (``ndtr``, ``ndtri``, ``log_ndtr``, ``chdtrc``) and
at most two exactly rounded operations, as scipy.stats evaluates it; equal to the last bit
with the SciPy they were written against.  Another SciPy version or machine may evaluate
``scipy.stats`` by another formula or a special function by another kernel: the two then
differ by the special functions' own errors, whose published peaks are a few 1e-14 relative
(Cephes ``erfc`` 5.7e-14 far in the tail, ``igamc`` 1.4e-13 at small degrees of freedom).
``RTOL`` = 1e-12 allows both errors with margin and still fails a wrong expression (a wrong
constant or sign moves a value by far more).  Values at the ends of the supports (0, +-inf, nan)
are exact in any build, so they are compared exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from rappor._util.tails import chi2_sf, norm_cdf, norm_isf, norm_logpdf, norm_logsf, norm_ppf, norm_sf, two_sided_z

X = np.concatenate([[-np.inf, -40.0, -8.5, -1.0, -0.0, 0.0, 1e-300, 0.5, 1.96, 8.0, 38.5, 40.0, np.inf, np.nan],
                    np.random.default_rng(0).normal(scale=6.0, size=500)])
Q = np.concatenate([[0.0, 1e-300, 1e-20, 0.025, 0.5, 0.975, 1.0 - 1e-16, 1.0, -0.1, 1.1, np.nan],
                    np.random.default_rng(1).random(500), 10.0 ** -np.arange(1, 300, 7)])


#: Relative tolerance against scipy.stats (derivation in the module docstring).
RTOL = 1e-12


def _agree(got: np.ndarray, want: np.ndarray) -> None:
    """Within ``RTOL``; the support's ends (0, +-inf, nan) exactly."""
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    ends = ~np.isfinite(want) | (want == 0.0)
    np.testing.assert_array_equal(got[ends], want[ends])
    np.testing.assert_allclose(got[~ends], want[~ends], rtol=RTOL, atol=0.0)


@pytest.mark.parametrize(("ours", "theirs", "grid"), [
    (norm_sf, stats.norm.sf, X),
    (norm_logsf, stats.norm.logsf, X),
    (norm_logpdf, stats.norm.logpdf, X),
    (norm_isf, stats.norm.isf, Q),
    (norm_cdf, stats.norm.cdf, X),
    (norm_ppf, stats.norm.ppf, Q),
])
def test_normal_tails_agree_with_scipy_stats(ours: object, theirs: object, grid: np.ndarray) -> None:
    _agree(ours(grid), theirs(grid))  # type: ignore[operator]
    for value in grid[:12]:  # scalars come back as NumPy scalars, as from scipy.stats
        one, ref = ours(value), theirs(value)  # type: ignore[operator]
        assert np.shape(one) == () and isinstance(one, np.floating)
        _agree(np.array([one]), np.array([ref]))


@pytest.mark.parametrize("df", [1, 2, 7, 63, 1000.5, 200_000])
def test_chi2_sf_agrees_with_scipy_stats(df: float) -> None:
    xs = [-1.0, 0.0, 1e-9, 0.5, df / 2, df, df + 3 * np.sqrt(2 * df), 10 * df, 1e7, np.inf, np.nan]
    got = np.array([chi2_sf(x, df) for x in xs])
    assert all(isinstance(chi2_sf(x, df), float) for x in xs)
    _agree(got, np.array([float(stats.chi2.sf(x, df)) for x in xs]))


def test_chi2_sf_bad_degrees_of_freedom_is_nan() -> None:
    assert np.isnan(chi2_sf(3.0, 0)) and np.isnan(float(stats.chi2.sf(3.0, 0)))


@pytest.mark.parametrize("level", [0.5, 0.8, 0.9, 0.95, 0.99, 1.0 - 1e-12])
def test_two_sided_z_is_the_upper_quantile(level: float) -> None:
    z = two_sided_z(level)
    assert isinstance(z, float)
    # isf of the tail, not ppf((1 + level) / 2): that sum loses the digits of a level near 1.
    _agree(np.array([z]), np.array([stats.norm.isf((1.0 - level) / 2.0)]))
    # The interval +-z holds ``level`` of the standard normal's mass.
    assert abs(2.0 * stats.norm.sf(z) - (1.0 - level)) <= 1e-12 * (1.0 - level)
