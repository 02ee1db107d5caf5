"""Privacy accounting for RAPPOR: pure epsilon, Renyi DP, zCDP, composition, (epsilon, delta).

Unit of privacy
---------------
The unit is **one client's value**.  Two inputs are *neighbouring* when they differ by
**replacing** that value with any other value (local DP, "bounded" replacement).  For Bloom
RAPPOR two values' Bloom filters then differ in at most ``2h`` bits: up to ``h`` ones turn
to zeros and up to ``h`` zeros turn to ones.  The worst case (both filters have ``h``
distinct ones and share none) is attained whenever two values hash to disjoint bits, so
every figure below is for that case and is tight.

Three releases are accounted for:

* **one report** (instantaneous randomized response over the permanent response):
  each bit passes a binary channel with ``P(1|1) = p11``, ``P(1|0) = p01``;
* **the permanent randomized response** (PRR): each Bloom bit passes a *symmetric*
  binary randomized response that keeps it with probability ``1 - f/2``.  Because every
  later report of the same value is computed from the same PRR, the PRR bounds the loss of
  **any number of reports of an unchanged value** (post-processing);
* **T reports of changing values**: a client whose value changes draws a fresh PRR for
  each new value, so the per-report losses compose (adaptively) over the T reports.

Formulas (each function's Notes cite its source)
------------------------------------------------
* ``epsilon_one`` and ``epsilon_inf`` are :attr:`rappor.Params.epsilon_one` and
  :attr:`rappor.Params.epsilon_inf` (RAPPOR, Erlingsson, Pihur and Korolova 2014,
  arXiv:1407.6981, Theorems 1 and 2); this module reuses them.
* Renyi divergence of order alpha (Mironov 2017, arXiv:1702.07476, Definition 3)::

      D_alpha(P || Q) = 1 / (alpha - 1) * ln sum_y P(y)^alpha Q(y)^(1 - alpha)

  with the limits ``D_1`` = KL divergence and ``D_inf = ln max_y P(y) / Q(y)``.
* RDP of a product channel is the sum over coordinates (Mironov 2017, Proposition 1,
  applied to independent bits), so the PRR's curve is ``2h`` times that of a binary
  randomized response and one report's is ``h (D(p11||p01) + D(p01||p11))``.
* zCDP (Bun and Steinke 2016, arXiv:1605.02065, Definition 1.1): the *tight* ``rho`` is
  ``sup_{alpha > 1} D_alpha / alpha``.  For a symmetric binary randomized response with
  parameter epsilon the supremum is the limit ``alpha -> 1``, i.e. the KL divergence
  ``epsilon * tanh(epsilon / 2)``, smaller than the classic ``epsilon**2 / 2``
  (Bun and Steinke 2016, Proposition 1.4).  Both are checked numerically in the tests.
* Conversions to (epsilon, delta) and composition bounds: see
  :func:`epsilon_from_rdp`, :func:`epsilon_from_zcdp`, :func:`basic_composition`,
  :func:`advanced_composition`.

Brute-force checks
------------------
``tests/privacy/test_privacy.py`` enumerates every output for small Bloom filters (``k <= 6``,
``h <= 2``) in exact rational arithmetic (:class:`fractions.Fraction`) and confirms that

* the maximal likelihood ratio of the PRR is ``exp(2 h ln((1 - f/2)/(f/2)))`` — the paper's
  ``epsilon_inf`` with the factor ``2h`` is tight (not ``h``);
* the maximal likelihood ratio of one full report is ``exp(h ln(p11 (1 - p01) / (p01 (1 - p11))))``
  — the paper's ``epsilon_one`` with the factor ``h`` is tight (the ``2h`` differing bits
  contribute the two halves of one odds ratio);
* for a **one-bit** value (a single bit changes, not ``2h``) the loss of one report is
  ``ln max(p11 / p01, (1 - p01) / (1 - p11))``, *not* the odds ratio; and of the PRR
  ``ln((1 - f/2) / (f/2))``.  Applying the Bloom formulas with ``h = 1`` to a one-bit
  collection overstates its epsilon.
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np
import numpy.typing as npt

from .._util.lazy import lazy_module
from .._util.results import record_table
from .._util.validation import MAX_COUNT, check_int, check_options, check_probability, check_real
from ..exceptions import InvalidParameterError
from ..params import Params

if TYPE_CHECKING:
    from scipy import optimize, special
else:  # imported on first use: keeps `import rappor` light
    optimize = lazy_module("scipy.optimize")
    special = lazy_module("scipy.special")

__all__ = [
    "DEFAULT_ORDERS",
    "MAX_REPORTS",
    "PrivacyLoss",
    "advanced_composition",
    "basic_composition",
    "bernoulli_rdp",
    "binary_rr_rdp",
    "epsilon_from_rdp",
    "epsilon_from_zcdp",
    "loss",
    "pure_dp_to_zcdp",
    "rdp",
    "renyi_divergence",
    "rho_zcdp",
    "tight_rho",
]

#: Renyi orders used when none are given: 1 + a log-spaced grid from 1e-3 to 1e4 (2,000 points).
DEFAULT_ORDERS: npt.NDArray[np.float64] = 1.0 + np.geomspace(1e-3, 1e4, 2000)
DEFAULT_ORDERS.flags.writeable = False

_Kind = Literal["report", "permanent"]

#: Most reports any accounting here takes (:data:`rappor._util.validation.MAX_COUNT`, 2**53: the
#: largest count a float holds exactly).
MAX_REPORTS = MAX_COUNT


def _check_reports(reports: int, owner: str) -> int:
    return check_int(reports, "reports", owner, low=1, high=MAX_REPORTS)


def _check_epsilon(epsilon: float, owner: str) -> float:
    """``epsilon`` as a float ``>= 0``; infinity is allowed (a release with no privacy), NaN is not."""
    if isinstance(epsilon, numbers.Real) and not isinstance(epsilon, (bool, np.bool_)) and epsilon == math.inf:
        return math.inf
    if isinstance(epsilon, numbers.Real) and not isinstance(epsilon, (bool, np.bool_)) and float(epsilon) >= 0.0:
        return float(epsilon)
    msg = f"The 'epsilon' parameter of {owner} must be a float >= 0 (inf allowed). Got {epsilon!r} instead."
    raise InvalidParameterError(msg)


def _orders(orders: npt.ArrayLike, owner: str) -> npt.NDArray[np.float64]:
    arr = np.atleast_1d(np.asarray(orders, dtype=np.float64))
    if arr.ndim != 1 or arr.size == 0 or np.isnan(arr).any() or (arr < 1.0).any():
        msg = f"The 'orders' parameter of {owner} must be a non-empty 1-d array of reals >= 1. Got {orders!r} instead."
        raise InvalidParameterError(msg)
    return arr


def renyi_divergence(p: npt.ArrayLike, q: npt.ArrayLike, orders: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Renyi divergence ``D_alpha(P || Q)`` of two discrete distributions, for each order.

    Parameters
    ----------
    p, q : array-like of float, shape (n_outcomes,)
        Probabilities of the same outcomes (each summing to 1).
    orders : array-like of float, shape (n_orders,)
        Orders ``alpha >= 1``; ``1`` gives the KL divergence and ``inf`` the max-divergence.

    Returns
    -------
    ndarray of shape (n_orders,)
        ``inf`` where ``Q`` is zero on an outcome that ``P`` can produce.

    Notes
    -----
    Mironov (2017), "Renyi Differential Privacy", arXiv:1702.07476, Definition 3 and its
    limits ``alpha -> 1`` and ``alpha -> inf``.  Evaluated as a log-sum-exp of
    ``alpha ln P + (1 - alpha) ln Q`` over the support of ``P``.
    """
    alphas = _orders(orders, "renyi_divergence")
    pa = np.asarray(p, dtype=np.float64).ravel()
    qa = np.asarray(q, dtype=np.float64).ravel()
    if pa.shape != qa.shape or (pa < 0).any() or (qa < 0).any():
        msg = "The 'p' and 'q' parameters of renyi_divergence must be non-negative arrays of the same shape."
        raise InvalidParameterError(msg)
    support = pa > 0
    lp, pa_s, qa_s = np.log(pa[support]), pa[support], qa[support]
    if (qa_s == 0).any():
        return np.full(alphas.shape, np.inf)
    lq = np.log(qa_s)
    out = np.empty(alphas.shape)
    one = alphas == 1.0
    inf = np.isinf(alphas)
    mid = ~(one | inf)
    out[one] = float(np.sum(pa_s * (lp - lq)))
    out[inf] = float(np.max(lp - lq))
    a = alphas[mid][:, None]

    out[mid] = special.logsumexp(a * lp + (1.0 - a) * lq, axis=1) / (alphas[mid] - 1.0)
    return out


def bernoulli_rdp(prob_a: float, prob_b: float, orders: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """``D_alpha(Bernoulli(prob_a) || Bernoulli(prob_b))`` for each order.

    Notes
    -----
    The two-outcome case of :func:`renyi_divergence` (Mironov 2017, Definition 3)::

        D_alpha = ln(a^alpha b^(1-alpha) + (1-a)^alpha (1-b)^(1-alpha)) / (alpha - 1)
    """
    a = check_probability(prob_a, "prob_a", "bernoulli_rdp")
    b = check_probability(prob_b, "prob_b", "bernoulli_rdp")
    return renyi_divergence([a, 1.0 - a], [b, 1.0 - b], orders)


def binary_rr_rdp(keep_prob: float, orders: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Renyi DP curve of binary randomized response that keeps the bit with probability ``keep_prob``.

    Parameters
    ----------
    keep_prob : float
        Probability of reporting the true bit (``1 - f/2`` for RAPPOR's PRR).
    orders : array-like of float

    Returns
    -------
    ndarray of shape (n_orders,)

    Notes
    -----
    With ``r = keep_prob`` and neighbours 0 and 1 (the channel is symmetric, so both
    directions give the same value), from Mironov (2017) Definition 3::

        eps(alpha) = ln(r^alpha (1-r)^(1-alpha) + (1-r)^alpha r^(1-alpha)) / (alpha - 1)

    which tends to ``epsilon = |ln(r / (1 - r))|`` as ``alpha -> inf`` and to the KL
    divergence ``(2r - 1) ln(r / (1 - r)) = epsilon tanh(epsilon / 2)`` as ``alpha -> 1``.
    """
    r = check_probability(keep_prob, "keep_prob", "binary_rr_rdp")
    return renyi_divergence([r, 1.0 - r], [1.0 - r, r], orders)


def _check_kind(kind: str, owner: str) -> _Kind:
    return cast(_Kind, check_options(kind, "kind", owner, ("report", "permanent")))


def rdp(params: Params, orders: npt.ArrayLike = DEFAULT_ORDERS, *, kind: _Kind = "report",
        reports: int = 1) -> npt.NDArray[np.float64]:
    """Renyi DP curve ``epsilon(alpha)`` of Bloom-filter RAPPOR.

    Parameters
    ----------
    params : Params
    orders : array-like of float, default=DEFAULT_ORDERS
        Renyi orders ``alpha >= 1``.
    kind : {"report", "permanent"}, default="report"
        ``"report"``: one report (IRR over PRR).  ``"permanent"``: the permanent randomized
        response, which bounds any number of reports of one unchanged value.
    reports : int, default=1
        Number ``T`` of releases composed (reports of changing values, each with a fresh
        PRR); the curve is multiplied by ``T``.

    Returns
    -------
    ndarray of shape (n_orders,)

    Notes
    -----
    Neighbouring values flip ``h`` bits from 1 to 0 and ``h`` from 0 to 1 (module docstring).
    The bits are independent, so the divergence adds (Mironov 2017, Proposition 1):

    * permanent: ``2 h * binary_rr_rdp(1 - f/2, alpha)``;
    * one report: ``h * (D_alpha(Bern(p11) || Bern(p01)) + D_alpha(Bern(p01) || Bern(p11)))``;
      swapping the two values gives the same sum, so this is the supremum over both directions.

    Composition over ``T`` releases adds the curves (Mironov 2017, Proposition 1).  At
    ``alpha = inf`` the curves equal ``T * epsilon_inf`` and ``T * epsilon_one``.
    """
    if not isinstance(params, Params):
        raise InvalidParameterError(f"The 'params' parameter of rdp must be a Params. Got {params!r} instead.")
    kind = _check_kind(kind, "rdp")
    t = _check_reports(reports, "rdp")
    h = params.num_hashes
    if kind == "permanent":
        return t * 2 * h * binary_rr_rdp(1.0 - params.prob_f / 2.0, orders)
    p11, p01 = params.p11, params.p01
    return t * h * (bernoulli_rdp(p11, p01, orders) + bernoulli_rdp(p01, p11, orders))


def tight_rho(curve: Callable[[npt.NDArray[np.float64]], npt.NDArray[np.float64]]) -> float:
    """The smallest ``rho`` with ``curve(alpha) <= rho * alpha`` for all ``alpha > 1``.

    Parameters
    ----------
    curve : callable
        Vectorized Renyi DP curve, ``orders -> epsilon(orders)``, accepting ``alpha = 1``.

    Returns
    -------
    float
        ``sup_{alpha > 1} curve(alpha) / alpha`` (``inf`` if the curve is infinite).

    Notes
    -----
    zCDP as defined by Bun and Steinke (2016), arXiv:1605.02065, Definition 1.1 (with
    ``xi = 0``).  The supremum is taken over a log-spaced grid of orders together with the
    limit ``alpha -> 1`` (the KL divergence, by continuity of ``D_alpha`` in ``alpha``), then
    refined with a bounded scalar search around the best grid order.
    """

    grid = np.concatenate([[1.0], DEFAULT_ORDERS, [1e5, 1e6]])
    values = curve(grid) / grid
    if not np.all(np.isfinite(values)):
        return math.inf
    i = int(np.argmax(values))
    best = float(values[i])
    if 0 < i < grid.size - 1:
        res = optimize.minimize_scalar(lambda a: -float(curve(np.array([a]))[0]) / a,
                              bounds=(grid[i - 1], grid[i + 1]), method="bounded",
                              options={"xatol": 1e-10})
        best = max(best, -float(res.fun))
    return best


def rho_zcdp(params: Params, *, kind: _Kind = "permanent", reports: int = 1) -> float:
    """Tight zCDP ``rho`` of Bloom RAPPOR (``sup_alpha rdp(alpha) / alpha``).

    Parameters
    ----------
    params : Params
    kind : {"permanent", "report"}, default="permanent"
        See :func:`rdp`.
    reports : int, default=1
        zCDP composes additively (Bun and Steinke 2016, Lemma 1.7), so this is ``T`` times
        the one-release value.

    Returns
    -------
    float

    Notes
    -----
    See :func:`tight_rho`.  For the PRR the supremum is at ``alpha -> 1``:
    ``rho = 2h * e tanh(e / 2)`` with ``e = ln((1 - f/2) / (f/2))``, well below the classic
    ``epsilon_inf**2 / 2`` of Bun and Steinke (2016), Proposition 1.4 (see
    :func:`pure_dp_to_zcdp`), because the loss is spread over ``2h`` independent bits.
    """
    kind = _check_kind(kind, "rho_zcdp")
    t = _check_reports(reports, "rho_zcdp")
    return t * tight_rho(lambda a: rdp(params, a, kind=kind))


def pure_dp_to_zcdp(epsilon: float) -> float:
    """The classic bound: ``epsilon``-DP implies ``epsilon**2 / 2``-zCDP.

    Notes
    -----
    Bun and Steinke (2016), arXiv:1605.02065, Proposition 1.4.
    """
    eps = _check_epsilon(epsilon, "pure_dp_to_zcdp")
    return eps * eps / 2.0


def _check_delta(delta: float, owner: str) -> float:
    """``delta`` in ``(0, 1)``, and a normal float: below ``2.2e-308`` (subnormal) it has lost precision."""
    d = check_probability(delta, "delta", owner, open_low=True, open_high=True)
    if d < sys.float_info.min:
        msg = (f"The 'delta' parameter of {owner} must be a float in the range [{sys.float_info.min!r}, 1) "
               f"(smaller ones are subnormal). Got {delta!r} instead.")
        raise InvalidParameterError(msg)
    return d


def epsilon_from_zcdp(rho: float, delta: float) -> float:
    """Convert ``rho``-zCDP to (epsilon, delta)-DP: ``rho + 2 sqrt(rho ln(1/delta))``.

    Notes
    -----
    Bun and Steinke (2016), arXiv:1605.02065, Proposition 1.3.  Tighter conversions exist
    (apply :func:`epsilon_from_rdp` to the curve ``rho * alpha``).
    """
    d = _check_delta(delta, "epsilon_from_zcdp")
    if isinstance(rho, numbers.Real) and rho == math.inf:
        return math.inf
    r = check_real(rho, "rho", "epsilon_from_zcdp", low=0.0)
    return r + 2.0 * math.sqrt(r * -math.log(d))


def epsilon_from_rdp(orders: npt.ArrayLike, rdp_values: npt.ArrayLike, delta: float, *,
                     method: Literal["optimal", "mironov"] = "optimal") -> tuple[float, float]:
    """Convert a Renyi DP curve to (epsilon, delta)-DP, minimizing over the orders.

    Parameters
    ----------
    orders : array-like of float, shape (n_orders,)
        Orders ``alpha > 1`` (orders equal to 1 are ignored).
    rdp_values : array-like of float, shape (n_orders,)
        ``epsilon(alpha)`` at those orders.
    delta : float
        Target ``delta`` in ``(0, 1)``.
    method : {"optimal", "mironov"}, default="optimal"
        ``"optimal"``: the conversion of Canonne, Kamath and Steinke (2020),
        ``eps = min_alpha rdp(alpha) + ln((alpha - 1) / alpha) - (ln delta + ln alpha) / (alpha - 1)``;
        ``"mironov"``: ``eps = min_alpha rdp(alpha) + ln(1/delta) / (alpha - 1)``.

    Returns
    -------
    epsilon : float
        Never negative (clipped at 0).
    order : float
        The order attaining the minimum.

    Notes
    -----
    ``"optimal"``: Canonne, Kamath and Steinke (2020), "The Discrete Gaussian for
    Differential Privacy", arXiv:2004.00010, Proposition 12 (the same bound as Asoodeh et
    al. 2020, and as used by Google's ``dp_accounting``).  ``"mironov"``: Mironov (2017),
    arXiv:1702.07476, Proposition 3.  The optimal form is never larger, since
    ``ln((alpha - 1)/alpha) - ln(alpha)/(alpha - 1) < 0``.
    """
    method = check_options(method, "method", "epsilon_from_rdp", ("optimal", "mironov"))  # type: ignore[assignment]
    d = _check_delta(delta, "epsilon_from_rdp")
    a = _orders(orders, "epsilon_from_rdp")
    r = np.asarray(rdp_values, dtype=np.float64).ravel()
    if r.shape != a.shape:
        raise InvalidParameterError("The 'orders' and 'rdp_values' parameters of epsilon_from_rdp must have the same shape.")
    keep = (a > 1.0) & np.isfinite(a)
    a, r = a[keep], r[keep]
    if a.size == 0:
        raise InvalidParameterError("The 'orders' parameter of epsilon_from_rdp must contain an order > 1.")
    with np.errstate(invalid="ignore"):
        if method == "optimal":
            eps = r + np.log1p(-1.0 / a) - (math.log(d) + np.log(a)) / (a - 1.0)
        else:
            eps = r - math.log(d) / (a - 1.0)
    eps = np.where(np.isnan(eps), np.inf, eps)
    i = int(np.argmin(eps))
    return max(0.0, float(eps[i])), float(a[i])


def basic_composition(epsilon: float, reports: int) -> float:
    """``T``-fold composition of ``epsilon``-DP releases is ``T epsilon``-DP.

    Notes
    -----
    Dwork, McSherry, Nissim and Smith (2006); Dwork and Roth (2014), "The Algorithmic
    Foundations of Differential Privacy", Theorem 3.16.
    """
    t = _check_reports(reports, "basic_composition")
    return t * _check_epsilon(epsilon, "basic_composition")


def advanced_composition(epsilon: float, reports: int, delta: float) -> float:
    """Advanced composition: ``T`` adaptive ``epsilon``-DP releases are (epsilon', delta)-DP.

    Returns
    -------
    float
        ``epsilon' = sqrt(2 T ln(1/delta)) epsilon + T epsilon (e^epsilon - 1)``.

    Notes
    -----
    Dwork, Rothblum and Vadhan (2010), "Boosting and Differential Privacy", Theorem III.3;
    stated as Dwork and Roth (2014), Theorem 3.20 (with ``delta = 0`` per release and
    ``delta' = delta``).
    """
    t = _check_reports(reports, "advanced_composition")
    d = _check_delta(delta, "advanced_composition")
    eps = _check_epsilon(epsilon, "advanced_composition")
    if math.isinf(eps):
        return math.inf
    return math.sqrt(2.0 * t * -math.log(d)) * eps + t * eps * math.expm1(eps)


def _refined_epsilon(curve: Callable[[npt.NDArray[np.float64]], npt.NDArray[np.float64]],
                     delta: float) -> tuple[float, float]:
    """:func:`epsilon_from_rdp` on the default grid, refined by a bounded scalar search."""

    grid = DEFAULT_ORDERS
    eps, order = epsilon_from_rdp(grid, curve(grid), delta)
    i = int(np.searchsorted(grid, order))
    if 0 < i < grid.size - 1 and math.isfinite(eps):
        def objective(a: float) -> float:
            return epsilon_from_rdp([a], curve(np.array([a])), delta)[0]
        res = optimize.minimize_scalar(objective, bounds=(grid[i - 1], grid[i + 1]), method="bounded")
        if res.fun < eps:
            return float(res.fun), float(res.x)
    return eps, order


#: Columns of :meth:`PrivacyLoss.table` (and of ``rappor.analysis.discovery``'s privacy table).
MEASURE_COLUMNS = (("name", "U"), ("description", "U"), ("value", "f8"))


@dataclass(frozen=True, slots=True, kw_only=True)
class PrivacyLoss:
    """What a RAPPOR configuration costs, by several accountings (returned by :func:`loss`).

    Attributes
    ----------
    epsilon_one : float
        Pure epsilon of one report (:attr:`Params.epsilon_one`).
    epsilon_inf : float
        Pure epsilon of the permanent response, bounding any number of reports of one
        unchanged value (:attr:`Params.epsilon_inf`).
    rho_zcdp_prr : float
        Tight zCDP ``rho`` of the permanent response (:func:`rho_zcdp`).
    rho_zcdp_prr_classic : float
        ``epsilon_inf**2 / 2`` (Bun and Steinke 2016, Proposition 1.4), for comparison.
    rho_zcdp_report : float
        Tight zCDP ``rho`` of one report.
    reports : int
        ``T``, the number of reports of changing values accounted for below.
    delta : float
    epsilon_basic : float
        ``T epsilon_one`` (pure, ``delta = 0``).
    epsilon_advanced : float
        Advanced composition of ``T`` reports (:func:`advanced_composition`).
    epsilon_zcdp : float
        ``T rho_zcdp_report`` converted by ``rho + 2 sqrt(rho ln(1/delta))``.
    epsilon_rdp : float
        The ``T``-fold RDP curve of one report, converted optimally (:func:`epsilon_from_rdp`).
    rdp_order : float
        The Renyi order attaining ``epsilon_rdp``.
    epsilon_delta : float
        The best of the valid (epsilon, delta) bounds above for ``T`` reports.
    """

    epsilon_one: float
    epsilon_inf: float
    rho_zcdp_prr: float
    rho_zcdp_prr_classic: float
    rho_zcdp_report: float
    reports: int
    delta: float
    epsilon_basic: float
    epsilon_advanced: float
    epsilon_zcdp: float
    epsilon_rdp: float
    rdp_order: float
    epsilon_delta: float

    def as_dict(self) -> dict[str, Any]:
        """The fields as a plain ``dict`` (JSON-ready; infinities stay ``float('inf')``)."""
        return asdict(self)

    def table(self) -> np.ndarray:
        """Every measure as a row ``(name, description, value)`` of a numpy structured array.

        The type of every ``table()`` in rappor (:meth:`rappor.analysis.decoder.DecodeResult.table`):
        ``t["value"]`` is a column, ``t[t["name"] == "epsilon_one"]`` a row.
        """
        d = self.delta
        t = f"{self.reports} report{'' if self.reports == 1 else 's'}"
        return record_table(MEASURE_COLUMNS, [
            ("epsilon_one", "pure epsilon, one report", self.epsilon_one),
            ("epsilon_inf", "pure epsilon, permanent response (any number of reports of one value)",
             self.epsilon_inf),
            ("rho_zcdp_prr", "tight zCDP rho, permanent response", self.rho_zcdp_prr),
            ("rho_zcdp_prr_classic", "epsilon_inf^2/2 (Bun-Steinke Prop. 1.4)", self.rho_zcdp_prr_classic),
            ("rho_zcdp_report", "tight zCDP rho, one report", self.rho_zcdp_report),
            ("epsilon_basic", f"{t} of changing values, basic composition (delta=0)", self.epsilon_basic),
            ("epsilon_advanced", f"{t}, advanced composition (delta={d:g})", self.epsilon_advanced),
            ("epsilon_zcdp", f"{t}, zCDP rho+2sqrt(rho ln(1/delta)) (delta={d:g})", self.epsilon_zcdp),
            ("epsilon_rdp", f"{t}, optimal RDP conversion at alpha={self.rdp_order:.3g} (delta={d:g})",
             self.epsilon_rdp),
            ("epsilon_delta", f"{t}, best of the above (delta={d:g})", self.epsilon_delta),
        ])


def loss(params: Params, *, reports: int = 1, delta: float = 1e-6) -> PrivacyLoss:
    """Privacy loss of a RAPPOR configuration: pure, zCDP and (epsilon, delta) for ``T`` reports.

    Parameters
    ----------
    params : Params
    reports : int, default=1
        ``T``, the number of reports of *changing* values (each with a fresh PRR).  Reports
        of an unchanged value cost at most ``epsilon_inf`` however many there are.
    delta : float, default=1e-6
        ``delta`` of the (epsilon, delta) figures.

    Returns
    -------
    PrivacyLoss

    Notes
    -----
    See the module docstring for the unit of privacy and the sources of each formula.
    ``epsilon_delta`` is ``min(epsilon_basic, epsilon_advanced, epsilon_zcdp, epsilon_rdp)``;
    each is a valid bound, so their minimum is too.

    Examples
    --------
    >>> params = Params(num_bloombits=16, num_hashes=2, num_cohorts=8,
    ...                 prob_p=0.5, prob_q=0.75, prob_f=0.5)
    >>> pl = loss(params, reports=10, delta=1e-6)
    >>> round(pl.epsilon_inf, 4), round(pl.epsilon_one, 4)
    (4.3944, 1.0743)
    """
    if not isinstance(params, Params):
        raise InvalidParameterError(f"The 'params' parameter of loss must be a Params. Got {params!r} instead.")
    t = _check_reports(reports, "loss")
    d = _check_delta(delta, "loss")
    eps1, eps_inf = params.epsilon_one, params.epsilon_inf
    rho_prr = rho_zcdp(params, kind="permanent")
    rho_rep = rho_zcdp(params, kind="report")
    basic = basic_composition(eps1, t)
    adv = advanced_composition(eps1, t, d)
    zc = epsilon_from_zcdp(t * rho_rep, d)
    eps_rdp, order = _refined_epsilon(lambda a: rdp(params, a, kind="report", reports=t), d)
    return PrivacyLoss(
        epsilon_one=eps1, epsilon_inf=eps_inf, rho_zcdp_prr=rho_prr,
        rho_zcdp_prr_classic=pure_dp_to_zcdp(eps_inf), rho_zcdp_report=rho_rep,
        reports=t, delta=d, epsilon_basic=basic, epsilon_advanced=adv, epsilon_zcdp=zc,
        epsilon_rdp=eps_rdp, rdp_order=order, epsilon_delta=min(basic, adv, zc, eps_rdp),
    )
