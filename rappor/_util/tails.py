"""Tail functions of the standard normal and chi-square distributions (private).

The decoder needs a handful of them (p-values, critical values, a chi-square test).
:mod:`scipy.stats` has them all, but importing it costs most of a second of CPU, more
than a whole decode of 10,000 candidates; :mod:`scipy.special`, which ``scipy.stats``
calls for these very values, costs a tenth of that.  Each function below is the
expression ``scipy.stats`` evaluates for the same call (``scipy/stats/_continuous_distns.py``,
``norm_gen`` and ``chi2_gen``, scipy 1.17), with the same handling of the support's ends,
so results are identical to the last bit with that SciPy (and agree to the special
functions' rounding with others):

===========================  ==========================================
here                         ``scipy.stats``
===========================  ==========================================
``norm_sf(x)``               ``norm.sf(x)`` = ``ndtr(-x)``
``norm_cdf(x)``              ``norm.cdf(x)`` = ``ndtr(x)``
``norm_ppf(q)``              ``norm.ppf(q)`` = ``ndtri(q)``
``norm_isf(q)``              ``norm.isf(q)`` = ``-ndtri(q)``
``norm_logsf(x)``            ``norm.logsf(x)`` = ``log_ndtr(-x)``
``norm_logpdf(x)``           ``norm.logpdf(x)`` = ``-x^2 / 2 - log(sqrt(2 pi))``
``chi2_sf(x, df)``           ``chi2.sf(x, df)`` = ``chdtrc(df, x)``, 1 for ``x <= 0``
===========================  ==========================================

``tests/_util/test_tails.py`` checks them against ``scipy.stats`` itself (tolerance derived there).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .lazy import lazy_module

if TYPE_CHECKING:
    from scipy import special
else:  # imported on first use: scipy.special, not scipy.stats
    special = lazy_module("scipy.special")

__all__ = ["chi2_sf", "norm_cdf", "norm_isf", "norm_logpdf", "norm_logsf", "norm_ppf", "norm_sf", "two_sided_z"]

#: ``log(sqrt(2 pi))``, computed as ``scipy.stats`` computes it.
_LOG_SQRT_2PI = float(np.log(np.sqrt(2 * np.pi)))


def _out(values: Any) -> Any:
    """A 0-d result as a NumPy scalar (as ``scipy.stats`` returns it), arrays as they are."""
    arr = np.asarray(values)
    return arr[()] if arr.ndim == 0 else arr


def norm_sf(x: npt.ArrayLike) -> Any:
    """Standard normal survival function ``P(Z > x)``: ``ndtr(-x)``."""
    return _out(special.ndtr(-np.asarray(x, dtype=np.float64)))


def norm_cdf(x: npt.ArrayLike) -> Any:
    """Standard normal distribution function ``P(Z <= x)``: ``ndtr(x)``."""
    return _out(special.ndtr(np.asarray(x, dtype=np.float64)))


def norm_ppf(q: npt.ArrayLike) -> Any:
    """Quantile function: the ``x`` with ``P(Z <= x) = q`` (``-inf`` at 0, ``inf`` at 1, NaN outside)."""
    return _out(special.ndtri(np.asarray(q, dtype=np.float64)))


def norm_isf(q: npt.ArrayLike) -> Any:
    """Inverse survival function: the ``x`` with ``P(Z > x) = q`` (``inf`` at 0, ``-inf`` at 1, NaN outside)."""
    return _out(-special.ndtri(np.asarray(q, dtype=np.float64)) + 0.0)


def two_sided_z(confidence_level: float) -> float:
    """``z`` of a two-sided normal interval at ``confidence_level``: the ``(1 + level) / 2`` quantile."""
    return float(-special.ndtri((1.0 - confidence_level) / 2.0) + 0.0)


def norm_logsf(x: npt.ArrayLike) -> Any:
    """``log P(Z > x)``, accurate far in the upper tail: ``log_ndtr(-x)``."""
    return _out(special.log_ndtr(-np.asarray(x, dtype=np.float64)))


def norm_logpdf(x: npt.ArrayLike) -> Any:
    """Log density of the standard normal: ``-x^2 / 2 - log(sqrt(2 pi))``."""
    arr = np.asarray(x, dtype=np.float64)
    return _out(-arr**2 / 2.0 - _LOG_SQRT_2PI)


def chi2_sf(x: float, df: float) -> float:
    """Chi-square survival function ``P(X > x)`` on ``df`` degrees of freedom (1 for ``x <= 0``; NaN if ``df <= 0``)."""
    if not df > 0 or x != x:
        return float("nan")
    if x <= 0:
        return 1.0
    return float(special.chdtrc(df, x))
