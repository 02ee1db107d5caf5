"""The classic local-DP mechanisms RAPPOR grew from, with their privacy maps and unbiased estimators.

* :class:`BinaryRandomizedResponse` - Warner's randomized response on one bit;
* :class:`KaryRandomizedResponse` - k-ary (generalized) randomized response, in both common
  parameterizations (keep probability, or probability of a uniform answer);
* and, in :mod:`._rappor_mechanisms`, RAPPOR's own: :class:`~rappor.privacy.BasicRappor`,
  :class:`~rappor.privacy.KRappor` and :class:`~rappor.privacy.TwoStageRappor`.

Each mechanism is a frozen value object that is callable on an array of values
(vectorized, ``rng`` as in SciPy SPEC 7), answers ``map(d_in)`` with its epsilon as
OpenDP measurements do, gives its Renyi DP curve ``rdp(orders)`` and tight zCDP ``rho``,
and debiases the responses into a :class:`FrequencyEstimate`.

Unit of privacy: one client's value; neighbouring inputs replace it with any other value.
``d_in`` is therefore the discrete distance: 0 (same value, loss 0) or >= 1 (different
values, loss ``epsilon``).  Bounds for every mechanism are verified by exact enumeration
in ``tests/privacy/test_mechanisms.py``.

Variances are those of the estimator of the *population* proportion when clients are
sampled independently (Warner 1965): ``Var = lambda (1 - lambda) / (n c^2)`` with
``lambda`` the probability of a reported 1 (estimated by the observed rate, clipped to
[0, 1]) and ``c`` the slope of that probability in the true proportion.  Estimates are
left unclamped (they can be negative or exceed 1), as google/rappor's ``decode.R`` does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from .._util import tails
from .._util.lazy import lazy_module
from .._util.results import ConfidenceInterval
from .._util.validation import RngLike, check_int, check_options, check_probability, check_real, check_rng
from ..exceptions import InvalidParameterError
from ._accounting import binary_rr_rdp, renyi_divergence, tight_rho
from ..client._randomizer import debias, debiased_variance

if TYPE_CHECKING:
    from scipy import special
else:  # imported on first use: keeps `import rappor` light
    special = lazy_module("scipy.special")

__all__ = [
    "BinaryRandomizedResponse",
    "FrequencyEstimate",
    "KaryRandomizedResponse",
    "epsilon_from_lying_probability",
    "lying_probability_from_epsilon",
]

#: ``(low, high)`` as returned by ``confidence_interval`` (field names as SciPy's).


# --------------------------------------------------------------------------- results


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class FrequencyEstimate:
    """Unbiased frequency estimates from randomized responses (SciPy-style result object).

    Attributes
    ----------
    estimate : float or ndarray
        Estimated number of clients holding the value (or each category).  Unbiased and
        unclamped: it can be negative or exceed ``n_reports``.
    std_error : float or ndarray
        Standard error of ``estimate``, from the binomial variance of the observed rate:
        the clients as a random sample of a population whose share is estimated.  For a
        fixed set of clients (their own count the estimand) it overstates the spread, since
        part of that variance is the draw of the values: measured over 2,000 repetitions of
        5,000 fixed clients, 2.6 times the spread for k-ary randomized response at
        epsilon 4, 2.3 for basic RAPPOR, 1.6 for binary randomized response at 0.9 (the
        95% intervals covered 100%; with the values drawn afresh, 0.95-0.96).
    proportion : float or ndarray
        ``estimate / n_reports``.
    prop_std_error : float or ndarray
        Standard error of ``proportion``.
    n_reports : int
        Number of responses.

    Notes
    -----
    Degenerate inputs (no responses, a mechanism carrying no information) give ``nan``.
    """

    estimate: Any
    std_error: Any
    proportion: Any
    prop_std_error: Any
    n_reports: int

    def confidence_interval(self, confidence_level: float = 0.95, *,
                            scale: Literal["proportion", "count"] = "proportion") -> ConfidenceInterval:
        """Normal-approximation (Wald) confidence interval.

        Parameters
        ----------
        confidence_level : float, default=0.95
            In ``(0, 1)``.
        scale : {"proportion", "count"}, default="proportion"
            Interval for :attr:`proportion` or for :attr:`estimate`.

        Returns
        -------
        ConfidenceInterval
            ``(low, high)`` = ``value -/+ z_{(1 + confidence_level)/2} * std_error``.
        """
        level = check_probability(confidence_level, "confidence_level", "confidence_interval",
                                  open_low=True, open_high=True)
        scale = check_options(scale, "scale", "confidence_interval", ("proportion", "count"))  # type: ignore[assignment]
        z = tails.two_sided_z(level)
        value, se = ((self.proportion, self.prop_std_error) if scale == "proportion"
                     else (self.estimate, self.std_error))
        return ConfidenceInterval(value - z * se, value + z * se)


def _result(proportion: Any, prop_se: Any, n: int) -> FrequencyEstimate:
    return FrequencyEstimate(estimate=proportion * n, std_error=prop_se * n, proportion=proportion,
                             prop_std_error=prop_se, n_reports=n)


def _debias_rate(rate: Any, n: int, low: float, slope: float) -> FrequencyEstimate:
    """Invert ``E[rate] = low + slope * x`` (:func:`rappor.client.debias`), variance ``lam (1 - lam) / (n slope^2)``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.asarray(rate, dtype=np.float64)
        if n == 0 or slope == 0.0:
            nan = np.full(rate.shape, np.nan)
            return FrequencyEstimate(estimate=nan[()], std_error=nan[()], proportion=nan[()],
                                     prop_std_error=nan[()], n_reports=n)
        prop = debias(rate, low, slope)
        se = np.sqrt(debiased_variance(np.clip(rate, 0.0, 1.0), n, slope))
    return _result(prop[()], se[()], n)


# --------------------------------------------------------------------------- helpers


def lying_probability_from_epsilon(epsilon: float) -> float:
    """Probability ``1 / (1 + e^epsilon)`` of lying in binary randomized response with that epsilon.

    Notes
    -----
    Inverse of :func:`epsilon_from_lying_probability` (Warner 1965; Dwork and Roth 2014, Sec. 3.2).
    """
    eps = check_real(epsilon, "epsilon", "lying_probability_from_epsilon", low=0.0)
    return 1.0 / (1.0 + math.exp(eps)) if eps < 700 else 0.0


def epsilon_from_lying_probability(lying_prob: float) -> float:
    """Epsilon ``ln((1 - q) / q)`` of binary randomized response that lies with probability ``q``.

    Parameters
    ----------
    lying_prob : float
        ``q`` in ``[0, 1/2]``; ``0`` gives ``inf``.

    Notes
    -----
    The likelihood ratio of the two answers is ``(1 - q) / q`` (Warner 1965; Dwork and Roth
    2014, Sec. 3.2); it is the same mechanism as ``BinaryRandomizedResponse(prob=1 - q)``.
    """
    q = check_probability(lying_prob, "lying_prob", "epsilon_from_lying_probability")
    if q > 0.5:
        raise InvalidParameterError(
            f"The 'lying_prob' parameter of epsilon_from_lying_probability must be a float in the range "
            f"[0, 0.5]. Got {lying_prob!r} instead.")
    return math.inf if q == 0.0 else math.log1p(-q) - math.log(q)


def _check_d_in(d_in: Any, owner: str) -> int:
    return check_int(d_in, "d_in", owner, low=0)


def _binary_values(values: npt.ArrayLike, owner: str) -> npt.NDArray[np.bool_]:
    arr = np.asarray(values)
    if arr.dtype == np.bool_:
        return arr
    if arr.size and (not np.issubdtype(arr.dtype, np.number) or not np.isin(arr, (0, 1)).all()):
        msg = f"The 'values' parameter of {owner} must hold only 0/1 or booleans. Got {values!r} instead."
        raise InvalidParameterError(msg)
    return arr.astype(np.bool_)


class _Measurement:
    """Shared privacy-map methods (private mixin): ``map``, ``check``, ``rho_zcdp``."""

    __slots__ = ()

    if TYPE_CHECKING:  # provided by each mechanism (a field or a property)
        @property
        def epsilon(self) -> float: ...

        def rdp(self, orders: npt.ArrayLike) -> npt.NDArray[np.float64]: ...

    def map(self, d_in: int = 1) -> float:
        """Epsilon for inputs at discrete distance ``d_in`` (0: same value, >= 1: any two values)."""
        return 0.0 if _check_d_in(d_in, type(self).__name__ + ".map") == 0 else self.epsilon

    def check(self, d_in: int, d_out: float) -> bool:
        """Whether the mechanism is ``d_out``-DP for inputs at distance ``d_in`` (OpenDP's ``check``)."""
        return self.map(d_in) <= float(d_out)

    @property
    def rho_zcdp(self) -> float:
        """Tight zCDP ``rho = sup_alpha rdp(alpha) / alpha`` (see :func:`rappor.privacy.tight_rho`)."""
        return tight_rho(self.rdp)


# --------------------------------------------------------------------------- binary RR


@dataclass(frozen=True, slots=True)
class BinaryRandomizedResponse(_Measurement):
    """Binary randomized response: report the true bit with probability ``prob``, else its opposite.

    Parameters
    ----------
    prob : float
        Probability of telling the truth, in ``[0, 1]``.  ``prob = 0.5`` carries no information.

    Notes
    -----
    Warner (1965), "Randomized response", JASA 60(309):63-69.

    * epsilon ``= |ln(prob / (1 - prob))|`` (the likelihood ratio of either answer);
    * ``E[mean] = (1 - prob) + x (2 prob - 1)``, so the unbiased proportion is
      ``(mean + prob - 1) / (2 prob - 1)`` (Warner 1965, eq. 4) with variance
      ``lam (1 - lam) / (n (2 prob - 1)^2)``, ``lam = E[mean]`` (eq. 5);
    * Renyi DP curve: :func:`rappor.privacy.binary_rr_rdp`.

    Examples
    --------
    >>> rr = BinaryRandomizedResponse(0.75)
    >>> round(rr.map(d_in=1), 6)            # ln 3
    1.098612
    >>> rr.check(1, math.log(3.0)), rr.check(1, math.log(2.999))
    (True, False)
    """

    prob: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "prob", check_probability(self.prob, "prob", "BinaryRandomizedResponse"))

    @classmethod
    def from_epsilon(cls, epsilon: float) -> BinaryRandomizedResponse:
        """The mechanism with truth probability ``e^epsilon / (1 + e^epsilon)``."""
        return cls(1.0 - lying_probability_from_epsilon(epsilon))

    @property
    def epsilon(self) -> float:
        """``|ln(prob / (1 - prob))|``."""
        r = self.prob
        if r in (0.0, 1.0):
            return math.inf
        return abs(math.log(r) - math.log1p(-r))

    def rdp(self, orders: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Renyi DP curve (:func:`rappor.privacy.binary_rr_rdp`)."""
        return binary_rr_rdp(self.prob, orders)

    def __call__(self, values: npt.ArrayLike, *, rng: RngLike = None) -> npt.NDArray[np.bool_]:
        """Randomize each bit of ``values`` (bool or 0/1 array of any shape)."""
        bits = _binary_values(values, "BinaryRandomizedResponse")
        truthful = check_rng(rng).random(bits.shape) < self.prob
        return np.where(truthful, bits, ~bits)

    def estimate(self, responses: npt.ArrayLike) -> FrequencyEstimate:
        """Debias the responses: proportion ``(mean + prob - 1) / (2 prob - 1)`` and count."""
        bits = _binary_values(responses, "BinaryRandomizedResponse.estimate").ravel()
        n = int(bits.size)
        rate = bits.mean() if n else np.nan
        return _debias_rate(rate, n, 1.0 - self.prob, 2.0 * self.prob - 1.0)


# --------------------------------------------------------------------------- k-ary RR


@dataclass(frozen=True, slots=True)
class KaryRandomizedResponse(_Measurement):
    """k-ary randomized response: keep the category with probability ``prob``, else report one of the others.

    Parameters
    ----------
    num_categories : int
        ``k >= 2``; values are integers ``0 .. k-1``.
    prob : float
        Probability of reporting the true category.  The other ``k - 1`` categories are
        reported with probability ``(1 - prob) / (k - 1)`` each.

    Notes
    -----
    Two parameterizations describe the same channel (Kairouz, Bonawitz and Ramage 2016,
    "Discrete distribution estimation under local privacy", arXiv:1602.07387, Sec. 2;
    Wang et al. 2017, "Locally differentially private protocols for frequency estimation",
    USENIX Security, Sec. 4.1):

    * keep with probability ``prob``: epsilon ``= ln(prob (k - 1) / (1 - prob))``;
    * with probability ``uniform_prob`` answer a uniform category (possibly the true one):
      ``prob = 1 - uniform_prob + uniform_prob / k``; for epsilon,
      ``uniform_prob = k / (k - 1 + e^epsilon)``.

    With ``p = uniform_prob``, the expected histogram is ``E[Y_j] = N_j (1 - p) + N p / k``, so

    * per report ``F(y) = (onehot(y) - p/k) / (1 - p)`` is unbiased for ``onehot(x)``;
    * per bucket ``(Y_j - N p / k) / (1 - p)`` is unbiased for ``N_j``;
    * in mean form ``(mean_j (k - 1) + prob - 1) / (prob k - 1)`` is unbiased for the proportion.

    All three are the same estimator (tested).  The variance of the proportion is
    ``lam_j (1 - lam_j) / (N (1 - p)^2)`` with ``lam_j = E[Y_j] / N``.  The Renyi
    divergence between the outputs for ``x`` and ``x'`` has the closed form
    ``ln(a^alpha b^(1-alpha) + b^alpha a^(1-alpha) + (k - 2) b) / (alpha - 1)`` with
    ``a = prob``, ``b = (1 - prob)/(k - 1)`` (Mironov 2017, Definition 3; checked by enumeration).
    """

    num_categories: int
    prob: float

    def __post_init__(self) -> None:
        k = check_int(self.num_categories, "num_categories", "KaryRandomizedResponse", low=2)
        object.__setattr__(self, "num_categories", k)
        object.__setattr__(self, "prob", check_probability(self.prob, "prob", "KaryRandomizedResponse"))

    @classmethod
    def from_epsilon(cls, num_categories: int, epsilon: float) -> KaryRandomizedResponse:
        """The mechanism with ``prob = e^epsilon / (k - 1 + e^epsilon)``."""
        k = check_int(num_categories, "num_categories", "KaryRandomizedResponse", low=2)
        eps = check_real(epsilon, "epsilon", "KaryRandomizedResponse.from_epsilon", low=0.0)
        return cls(k, 1.0 / (1.0 + (k - 1) * math.exp(-eps)))

    @classmethod
    def from_uniform_prob(cls, num_categories: int, uniform_prob: float) -> KaryRandomizedResponse:
        """The mechanism that answers a uniform category with probability ``uniform_prob``."""
        k = check_int(num_categories, "num_categories", "KaryRandomizedResponse", low=2)
        p = check_probability(uniform_prob, "uniform_prob", "KaryRandomizedResponse.from_uniform_prob")
        return cls(k, 1.0 - p + p / k)

    @property
    def uniform_prob(self) -> float:
        """``p = (1 - prob) k / (k - 1)``, the probability of a uniform answer."""
        k = self.num_categories
        return (1.0 - self.prob) * k / (k - 1)

    @property
    def epsilon(self) -> float:
        """``|ln(prob (k - 1) / (1 - prob))|``."""
        a, b = self.prob, (1.0 - self.prob) / (self.num_categories - 1)
        if a == 0.0 or b == 0.0:
            return math.inf
        return abs(math.log(a) - math.log(b))

    def rdp(self, orders: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Renyi DP curve (closed form in the class Notes)."""
        k = self.num_categories
        a, b = self.prob, (1.0 - self.prob) / (k - 1)
        if k == 2 or a == 0.0 or b == 0.0:
            return renyi_divergence([a, b], [b, a], orders)
        alphas = np.atleast_1d(np.asarray(orders, dtype=np.float64))
        out = renyi_divergence([a, b, 1.0 - a - b], [b, a, 1.0 - a - b], orders)  # limits alpha = 1, inf
        mid = (alphas > 1.0) & np.isfinite(alphas)
        al = alphas[mid][:, None]
        la, lb = math.log(a), math.log(b)
        terms = np.hstack([al * la + (1 - al) * lb, al * lb + (1 - al) * la,
                           np.full_like(al, math.log(k - 2) + lb)])

        out[mid] = special.logsumexp(terms, axis=1) / (alphas[mid] - 1.0)
        return out

    def _categories(self, values: npt.ArrayLike, owner: str) -> npt.NDArray[np.int64]:
        arr = np.asarray(values)
        k = self.num_categories
        if arr.size and (not np.issubdtype(arr.dtype, np.integer) or arr.min() < 0 or arr.max() >= k):
            msg = f"The 'values' parameter of {owner} must hold integers in [0, {k - 1}]. Got {values!r} instead."
            raise InvalidParameterError(msg)
        return arr.astype(np.int64)

    def __call__(self, values: npt.ArrayLike, *, rng: RngLike = None) -> npt.NDArray[np.int64]:
        """Randomize each category of ``values`` (integer array of any shape)."""
        x = self._categories(values, "KaryRandomizedResponse")
        gen = check_rng(rng)
        k = self.num_categories
        keep = gen.random(x.shape) < self.prob
        other = (x + gen.integers(1, k, size=x.shape)) % k
        return np.where(keep, x, other)

    def debias_onehot(self, responses: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Per-report unbiased vectors ``F(y) = (onehot(y) - p/k) / (1 - p)``, shape (n, k)."""
        y = self._categories(responses, "KaryRandomizedResponse.debias_onehot").ravel()
        k, p = self.num_categories, self.uniform_prob
        onehot = np.zeros((y.size, k))
        onehot[np.arange(y.size), y] = 1.0
        with np.errstate(divide="ignore", invalid="ignore"):
            return (onehot - p / k) / (1.0 - p)

    def debias_counts(self, counts: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Per-bucket unbiased counts ``(Y_j - N p / k) / (1 - p)`` from a histogram of responses."""
        y = np.asarray(counts, dtype=np.float64)
        if y.shape != (self.num_categories,) or (y < 0).any():
            msg = (f"The 'counts' parameter of KaryRandomizedResponse.debias_counts must be a non-negative "
                   f"array of shape ({self.num_categories},). Got shape {y.shape} instead.")
            raise InvalidParameterError(msg)
        k, p = self.num_categories, self.uniform_prob
        with np.errstate(divide="ignore", invalid="ignore"):
            debiased: npt.NDArray[np.float64] = (y - y.sum() * p / k) / (1.0 - p)
        return debiased

    def estimate(self, responses: npt.ArrayLike) -> FrequencyEstimate:
        """Debiased proportion (mean form ``(mean (k-1) + prob - 1) / (prob k - 1)``) of every category."""
        y = self._categories(responses, "KaryRandomizedResponse.estimate").ravel()
        return self.estimate_from_counts(np.bincount(y, minlength=self.num_categories))

    def estimate_from_counts(self, counts: npt.ArrayLike) -> FrequencyEstimate:
        """As :meth:`estimate`, from the histogram of responses (length ``k``)."""
        y = np.asarray(counts, dtype=np.float64)
        self.debias_counts(y)  # validates
        k, a = self.num_categories, self.prob
        n = int(round(y.sum()))
        rate = y / n if n else np.full(k, np.nan)
        # E[mean_j] = (1 - a)/(k - 1) + x_j (a k - 1)/(k - 1)
        return _debias_rate(rate, n, (1.0 - a) / (k - 1), (a * k - 1.0) / (k - 1))
