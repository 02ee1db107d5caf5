"""RAPPOR's own mechanisms on categories: unary encodings and the two-stage (permanent, instantaneous) response.

* :class:`BasicRappor` - one-hot vector with every bit flipped independently;
* :class:`KRappor` - a 0/1 vector holding up to ``max_items`` ones (a set of categories);
* :class:`TwoStageRappor` - one bit through RAPPOR's permanent then instantaneous response,
  and :func:`two_stage_rate`, the debiased rate of ones.

Like the randomized responses of :mod:`._mechanisms` (whose conventions, unit of privacy
and variances they share), each is a frozen value object callable on an array of values,
with ``map(d_in)``, ``rdp(orders)``, ``rho`` and an unbiased :class:`FrequencyEstimate`.
Bounds are verified by exact enumeration in ``tests/privacy/test_mechanisms.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .._util.validation import RngLike, check_int, check_probability, check_real, check_rng
from ..client._randomizer import debias, instantaneous_response, permanent_response
from ..exceptions import InvalidParameterError
from ..params import Params, report_probabilities
from ._accounting import binary_rr_rdp, renyi_divergence
from ._mechanisms import (
    FrequencyEstimate,
    KaryRandomizedResponse,
    _binary_values,
    _debias_rate,
    _Measurement,
    lying_probability_from_epsilon,
)

__all__ = ["BasicRappor", "KRappor", "TwoStageRappor", "two_stage_rate"]


# --------------------------------------------------------------------------- unary RAPPOR


def _unary_flip(bits: npt.NDArray[np.bool_], flip: float, rng: RngLike) -> npt.NDArray[np.bool_]:
    return bits ^ (check_rng(rng).random(bits.shape) < flip)


def _unary_estimate(reports: npt.ArrayLike, num_categories: int, flip: float, owner: str) -> FrequencyEstimate:
    bits = _binary_values(reports, owner)
    if bits.ndim != 2 or bits.shape[1] != num_categories:
        msg = (f"The 'reports' parameter of {owner} must have shape (n_reports, {num_categories}). "
               f"Got shape {bits.shape} instead.")
        raise InvalidParameterError(msg)
    n = bits.shape[0]
    rate = bits.mean(axis=0) if n else np.full(num_categories, np.nan)
    return _debias_rate(rate, n, flip, 1.0 - 2.0 * flip)


@dataclass(frozen=True, slots=True)
class BasicRappor(_Measurement):
    """Basic RAPPOR: a one-hot vector with every bit flipped with probability ``1 / (1 + e^(epsilon/2))``.

    Parameters
    ----------
    num_categories : int
        ``d >= 2``; values are integers ``0 .. d-1``.
    epsilon : float
        Privacy loss of one report (>= 0).

    Notes
    -----
    Erlingsson, Pihur and Korolova (2014), Sec. 3.1 ("Basic RAPPOR", one-hot encoding with
    ``h = 1``); Wang et al. (2017), Sec. 4.2 (symmetric unary encoding).  Two values' vectors
    differ in 2 bits, each a binary randomized response with epsilon ``epsilon / 2``, so the
    loss is ``epsilon`` and the Renyi curve is ``2 * binary_rr_rdp(1 - flip)``.  With
    ``theta`` the flip probability, ``E[rate_j] = theta + x_j (1 - 2 theta)``.
    """

    num_categories: int
    epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "num_categories",
                           check_int(self.num_categories, "num_categories", "BasicRappor", low=2))
        object.__setattr__(self, "epsilon", check_real(self.epsilon, "epsilon", "BasicRappor", low=0.0))

    @property
    def flip_prob(self) -> float:
        """``1 / (1 + e^(epsilon / 2))``."""
        return lying_probability_from_epsilon(self.epsilon / 2.0)

    def rdp(self, orders: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Renyi DP curve ``2 * binary_rr_rdp(1 - flip_prob)``."""
        return 2.0 * binary_rr_rdp(1.0 - self.flip_prob, orders)

    def encode(self, values: npt.ArrayLike) -> npt.NDArray[np.bool_]:
        """One-hot vectors of shape (n, d) for integer ``values`` (no randomness)."""
        x = KaryRandomizedResponse(self.num_categories, 1.0)._categories(values, "BasicRappor").ravel()
        out = np.zeros((x.size, self.num_categories), dtype=np.bool_)
        out[np.arange(x.size), x] = True
        return out

    def __call__(self, values: npt.ArrayLike, *, rng: RngLike = None) -> npt.NDArray[np.bool_]:
        """Randomized one-hot reports, shape (n, d)."""
        return _unary_flip(self.encode(values), self.flip_prob, rng)

    def estimate(self, reports: npt.ArrayLike) -> FrequencyEstimate:
        """Debiased proportion ``(rate_j - theta) / (1 - 2 theta)`` and count of every category."""
        return _unary_estimate(reports, self.num_categories, self.flip_prob, "BasicRappor.estimate")


@dataclass(frozen=True, slots=True)
class KRappor(_Measurement):
    """k-RAPPOR for sets: a 0/1 vector with up to ``max_items`` ones, each bit flipped with probability ``1 / (1 + e^(epsilon / (2 max_items)))``.

    Parameters
    ----------
    num_categories : int
        Length ``d`` of the vector.
    max_items : int
        ``k``, the most ones a client's vector may hold (``1 <= k <= d``).
    epsilon : float
        Privacy loss of one report.

    Notes
    -----
    Two clients' vectors differ in at most ``2k`` bits; each bit is a binary randomized
    response with epsilon ``epsilon / (2k)``, so the loss is ``epsilon`` (the Bloom
    filter argument of Erlingsson, Pihur and Korolova 2014, Theorem 1, with ``h = k``).
    The Renyi curve is ``2k * binary_rr_rdp(1 - flip)``.  Estimates are per category, the
    proportion of clients whose set contains it.
    """

    num_categories: int
    max_items: int
    epsilon: float

    def __post_init__(self) -> None:
        d = check_int(self.num_categories, "num_categories", "KRappor", low=1)
        object.__setattr__(self, "num_categories", d)
        object.__setattr__(self, "max_items", check_int(self.max_items, "max_items", "KRappor", low=1, high=d))
        object.__setattr__(self, "epsilon", check_real(self.epsilon, "epsilon", "KRappor", low=0.0))

    @property
    def flip_prob(self) -> float:
        """``1 / (1 + e^(epsilon / (2 max_items)))``."""
        return lying_probability_from_epsilon(self.epsilon / (2.0 * self.max_items))

    def rdp(self, orders: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Renyi DP curve ``2 max_items * binary_rr_rdp(1 - flip_prob)``."""
        return 2.0 * self.max_items * binary_rr_rdp(1.0 - self.flip_prob, orders)

    def __call__(self, values: npt.ArrayLike, *, rng: RngLike = None) -> npt.NDArray[np.bool_]:
        """Randomize 0/1 vectors ``values`` of shape (n, d), each with at most ``max_items`` ones."""
        bits = _binary_values(values, "KRappor")
        if bits.ndim != 2 or bits.shape[1] != self.num_categories:
            msg = (f"The 'values' parameter of KRappor must have shape (n, {self.num_categories}). "
                   f"Got shape {bits.shape} instead.")
            raise InvalidParameterError(msg)
        if bits.size and bits.sum(axis=1).max() > self.max_items:
            row = int(np.argmax(bits.sum(axis=1) > self.max_items))
            msg = f"The 'values' parameter of KRappor must have at most {self.max_items} ones per row; row {row} has more."
            raise InvalidParameterError(msg)
        return _unary_flip(bits, self.flip_prob, rng)

    def estimate(self, reports: npt.ArrayLike) -> FrequencyEstimate:
        """Debiased proportion of clients holding each category."""
        return _unary_estimate(reports, self.num_categories, self.flip_prob, "KRappor.estimate")


# --------------------------------------------------------------------------- two-stage


def two_stage_rate(ones: npt.ArrayLike, n_reports: int, *, prob_p: float, prob_q: float,
                   prob_f: float) -> FrequencyEstimate:
    """True rate of ones behind RAPPOR reports of one bit (permanent, then instantaneous response).

    Parameters
    ----------
    ones : int or array-like of int
        Number of reports with the bit set (one entry per bit).
    n_reports : int
        Number of reports.
    prob_p, prob_q, prob_f : float
        RAPPOR's ``p``, ``q``, ``f``.

    Returns
    -------
    FrequencyEstimate
        ``proportion = (raw - p01) / (p11 - p01)`` with ``raw = ones / n``, i.e.
        ``(raw - p - f q / 2 + f p / 2) / ((1 - f)(q - p))``.

    Notes
    -----
    Erlingsson, Pihur and Korolova (2014), Sec. 4 (the estimate ``t_ij`` of the true count);
    google/rappor ``analysis/R/decode.R`` ``EstimateBloomCounts``.  ``E[raw] = p01 + x (p11 - p01)``
    with ``p11`` and ``p01`` of :func:`rappor.params.report_probabilities`, the
    decoder's (:func:`rappor.client.debias`).
    """
    p = check_probability(prob_p, "prob_p", "two_stage_rate")
    q = check_probability(prob_q, "prob_q", "two_stage_rate")
    f = check_probability(prob_f, "prob_f", "two_stage_rate")
    n = check_int(n_reports, "n_reports", "two_stage_rate", low=0)
    c = np.asarray(ones, dtype=np.float64)
    if (c < 0).any() or (c > n).any():
        msg = f"The 'ones' parameter of two_stage_rate must be in [0, {n}]. Got {ones!r} instead."
        raise InvalidParameterError(msg)
    rate = c / n if n else np.full(c.shape, np.nan)
    p11, p01 = report_probabilities(p, q, f)
    return _debias_rate(rate, n, p01, p11 - p01)


@dataclass(frozen=True, slots=True)
class TwoStageRappor(_Measurement):
    """One bit through RAPPOR's two stages: permanent (``f``) then instantaneous (``p``, ``q``) response.

    Parameters
    ----------
    prob_p, prob_q, prob_f : float
        As in :class:`rappor.Params`.

    Notes
    -----
    Erlingsson, Pihur and Korolova (2014), Sec. 3.  The value is **one bit**, so neighbouring
    values differ in one bit, not ``2h``: one report has epsilon
    ``ln max(p11 / p01, (1 - p01) / (1 - p11))`` and the permanent response
    ``ln((1 - f/2) / (f/2))`` (:attr:`epsilon_permanent`).  The paper's odds-ratio form
    ``ln(p11 (1 - p01) / (p01 (1 - p11)))`` (Theorem 2 with ``h = 1``) counts the two bits
    that change in a Bloom filter and overstates a one-bit value's loss; exact enumeration
    in the tests confirms the max form.

    Calling the object draws a fresh permanent response per value (one report of each);
    a real client memoizes its permanent response (see :meth:`permanent`, :meth:`instantaneous`).
    """

    prob_p: float
    prob_q: float
    prob_f: float

    def __post_init__(self) -> None:
        params = Params(num_bloombits=1, num_hashes=1, num_cohorts=1,
                        prob_p=self.prob_p, prob_q=self.prob_q, prob_f=self.prob_f)
        for name in ("prob_p", "prob_q", "prob_f"):
            object.__setattr__(self, name, getattr(params, name))

    @classmethod
    def from_params(cls, params: Params) -> TwoStageRappor:
        """The one-bit mechanism with ``params``' ``p, q, f``."""
        return cls(params.prob_p, params.prob_q, params.prob_f)

    @property
    def _params(self) -> Params:
        return Params(num_bloombits=1, num_hashes=1, num_cohorts=1,
                      prob_p=self.prob_p, prob_q=self.prob_q, prob_f=self.prob_f)

    @property
    def p11(self) -> float:
        """P(report 1 | bit 1) (:attr:`rappor.Params.p11`)."""
        return self._params.p11

    @property
    def p01(self) -> float:
        """P(report 1 | bit 0) (:attr:`rappor.Params.p01`)."""
        return self._params.p01

    @property
    def epsilon(self) -> float:
        """Epsilon of one report of a one-bit value: ``ln max(p11/p01, (1-p01)/(1-p11))``."""
        return max(self._maxlog(self.p11, self.p01), self._maxlog(self.p01, self.p11))

    @staticmethod
    def _maxlog(a: float, b: float) -> float:
        return float(renyi_divergence([a, 1.0 - a], [b, 1.0 - b], [np.inf])[0])

    @property
    def epsilon_permanent(self) -> float:
        """Epsilon of the permanent response of one bit: ``ln((1 - f/2) / (f/2))`` (= epsilon_inf / 2h)."""
        return self._params.epsilon_inf / 2.0

    def rdp(self, orders: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Renyi DP curve of one report: ``max(D(p11||p01), D(p01||p11))`` per order."""
        return np.maximum(renyi_divergence([self.p11, 1 - self.p11], [self.p01, 1 - self.p01], orders),
                          renyi_divergence([self.p01, 1 - self.p01], [self.p11, 1 - self.p11], orders))

    def permanent(self, values: npt.ArrayLike, *, rng: RngLike = None) -> npt.NDArray[np.bool_]:
        """The permanent response: each bit replaced by a fair coin with probability ``f``."""
        bits = _binary_values(values, "TwoStageRappor.permanent")
        gen = check_rng(rng)
        replace = gen.random(bits.shape) < self.prob_f
        coin = gen.random(bits.shape) < 0.5
        return permanent_response(bits, replace, coin)

    def instantaneous(self, prr: npt.ArrayLike, *, rng: RngLike = None) -> npt.NDArray[np.bool_]:
        """The instantaneous response: 1 with probability ``q`` where the PRR is 1, ``p`` where 0."""
        bits = _binary_values(prr, "TwoStageRappor.instantaneous")
        u = check_rng(rng).random(bits.shape)
        return instantaneous_response(bits, u < self.prob_p, u < self.prob_q)

    def __call__(self, values: npt.ArrayLike, *, rng: RngLike = None) -> npt.NDArray[np.bool_]:
        """One report of each value (fresh permanent response each)."""
        gen = check_rng(rng)
        return self.instantaneous(self.permanent(values, rng=gen), rng=gen)

    def estimate(self, responses: npt.ArrayLike) -> FrequencyEstimate:
        """Debiased rate of ones (:func:`two_stage_rate`)."""
        bits = _binary_values(responses, "TwoStageRappor.estimate").ravel()
        return two_stage_rate(int(bits.sum()), int(bits.size), prob_p=self.prob_p, prob_q=self.prob_q,
                              prob_f=self.prob_f)
