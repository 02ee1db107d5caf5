"""Predicted detection: the smallest candidate frequency a decode of a given design will detect.

:func:`detection_frequency` predicts it for one design, :func:`detection_outlook` says
what a decode can be expected to find among given true frequencies, and
:func:`simulate_detection` checks the prediction by simulation.  The planner
(:mod:`rappor.privacy._planner`) ranks designs by it.

Model behind the prediction
---------------------------
Each client holds one string.  In cohort ``c`` the probability that Bloom bit ``b`` is set
is ``t_cb = sum_j x_j X[cb, j]`` where ``X`` (``m k`` rows by ``S`` columns) marks the
bits of candidate ``j`` in each cohort (``h`` hashes per cohort, so ``m h`` bits carry each
string).  A reported bit is 1 with probability ``p01 + (p11 - p01) t_cb``; the debiased
rate ``y_cb = (ones_cb / n_c - p01) / (p11 - p01)`` has variance
``sigma^2 = lam (1 - lam) / (n_c (p11 - p01)^2)``, ``n_c = N / m``.  Taking ``lam`` at the
typical bit rate ``lam = p01 + (p11 - p01) (1 - (1 - 1/k)^h)`` (every client's ``h`` hashes
land somewhere), the generalized least squares estimate ``x_hat = (X'X)^-1 X' y`` of the
candidates' frequencies has ``Var(x_hat_j) = sigma^2 [(X'X)^-1]_jj``.  If the ``m h`` bits of
``j`` were shared with no other candidate this is ``sigma^2 / (m h)``; the *inflation*
``m h [(X'X)^-1]_jj`` (>= 1) measures collisions and is computed on random designs.  A
frequency ``x`` is detected at level ``significance_level`` (Bonferroni over the ``S``
candidates) with probability ``power`` when
``x = (z_{1 - significance_level / S} + z_{power}) sd(x_hat_j)``.

The *reference* prediction, ``z_{1 - significance_level} sd / N`` with ``sd`` the standard
deviation of one bit's estimated count under the null,
``sd = sqrt(N p01 (1 - p01)) / (p11 - p01)`` (Erlingsson, Pihur and Korolova 2014, Sec. 4),
ignores the ``m h`` bits, the collisions and the number of candidates; it is reported for
comparison.  ``benchmarks/planner_check.py`` compares both with simulated detection.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from .._util import tails
from .._util.lazy import lazy_module
from .._util.validation import MAX_COUNT, RngLike, check_int, check_options, check_probability, check_real, check_rng
from ..exceptions import InvalidParameterError
from ..params import Params

if TYPE_CHECKING:
    import threadpoolctl  # a declared dependency
    from scipy import linalg, sparse
else:  # imported on first use: keeps `import rappor` light
    threadpoolctl = lazy_module("threadpoolctl")  # a declared dependency
    linalg = lazy_module("scipy.linalg")
    sparse = lazy_module("scipy.sparse")

__all__ = ["LARGE_DETECTION_FREQUENCY", "DetectionOutlook", "DetectionPrediction", "design_inflation",
           "detection_frequency", "detection_outlook", "detection_probability", "reports_for_frequency",
           "simulate_detection"]

_MAX_EXACT_CANDIDATES = 400


def design_inflation(num_bloombits: int, num_hashes: int, num_cohorts: int, num_candidates: int, *,
                     n_designs: int = 2, rng: RngLike = 0) -> float:
    """Mean variance inflation ``m h [(X'X)^-1]_jj`` of random Bloom designs (1 = no collisions).

    Parameters
    ----------
    num_bloombits, num_hashes, num_cohorts : int
        ``k``, ``h``, ``m``.
    num_candidates : int
        ``S``.
    n_designs : int, default=2
        Random designs averaged (hash functions are modelled as uniform).
    rng : Generator, int or None, default=0

    Returns
    -------
    float
        ``inf`` if the candidates cannot be separated (``X'X`` singular, e.g. ``S > m k``).

    Notes
    -----
    Cohorts are exchangeable, so for ``S > 400`` the design is computed for
    ``m' = ceil(m 400 / S)`` cohorts and ``S' = round(S m' / m)`` candidates, which keeps
    ``S / (m k)`` and ``k, h`` (and hence the inflation, to first order) unchanged.
    """
    k = check_int(num_bloombits, "num_bloombits", "design_inflation", low=1)
    h = check_int(num_hashes, "num_hashes", "design_inflation", low=1, high=k)
    m = check_int(num_cohorts, "num_cohorts", "design_inflation", low=1)
    s = check_int(num_candidates, "num_candidates", "design_inflation", low=1)
    gen = check_rng(rng)
    if s > m * k:
        return math.inf
    if s > _MAX_EXACT_CANDIDATES:
        m2 = math.ceil(m * _MAX_EXACT_CANDIDATES / s)
        s, m = max(1, round(s * m2 / m)), m2
    with threadpoolctl.threadpool_limits(1):  # small dense factorizations: threads only contend
        return _inflation(k, h, m, s, check_int(n_designs, "n_designs", "design_inflation", low=1), gen)


def _inflation(k: int, h: int, m: int, s: int, n_designs: int, gen: np.random.Generator) -> float:
    values = []
    cols = np.broadcast_to(np.arange(s), (m, h, s)).ravel()
    offsets = np.broadcast_to((np.arange(m) * k)[:, None, None], (m, h, s)).ravel()
    for _ in range(n_designs):
        rows = offsets + gen.integers(0, k, size=m * h * s)
        design = sparse.coo_matrix((np.ones(rows.size), (rows, cols)), shape=(m * k, s)).tocsr()
        design.sum_duplicates()
        design.data[:] = 1.0  # a bit hit by two hashes of one string is set once (Bloom OR)
        gram = (design.T @ design).toarray()
        try:
            chol = np.linalg.cholesky(gram)
        except np.linalg.LinAlgError:
            return math.inf
        inv_chol, info = linalg.lapack.dtrtri(chol, lower=1)
        if info != 0:
            return math.inf
        diag_inv = np.einsum("ij,ij->j", inv_chol, inv_chol)  # diag((L L')^-1) = column norms of L^-1
        if not np.all(np.isfinite(diag_inv)) or np.max(diag_inv * np.diag(gram)) > 1e8:
            return math.inf
        values.append(m * h * float(np.mean(diag_inv)))
    # (X'X)^-1_jj >= 1 / (X'X)_jj >= 1 / (m h), so the inflation is >= 1; clamp the rounding
    # (0.9999999999999998 for a collision-free design) that detection_frequency would refuse.
    return max(1.0, float(np.mean(values)))


@dataclass(frozen=True, slots=True, kw_only=True)
class DetectionPrediction:
    """Predicted detection for one design (see :func:`detection_frequency`).

    Attributes
    ----------
    frequency : float
        Smallest candidate frequency detected with probability ``power``.
    reference_frequency : float
        ``z_{1 - significance_level} sd / N``, the one-bit reference formula.
    std_error : float
        Predicted standard deviation of a candidate's estimated frequency near zero.
    inflation : float
        ``m h [(X'X)^-1]_jj`` (1 = the candidate's bits are shared with no other).
    critical_z : float
        The one-sided critical value used (Bonferroni-corrected when asked).
    """

    frequency: float
    reference_frequency: float
    std_error: float
    inflation: float
    critical_z: float


def _bit_sigma(params: Params, n_reports: int) -> tuple[float, float]:
    """(slope p11 - p01, typical lam (1 - lam))."""
    c = params.p11 - params.p01
    t_bar = 1.0 - (1.0 - 1.0 / params.k) ** params.h
    lam = params.p01 + c * t_bar
    return c, lam * (1.0 - lam)


def detection_frequency(params: Params, n_reports: int, n_candidates: int, *, significance_level: float = 0.05,
                        power: float = 0.5, correction: Literal["bonferroni", "none"] = "bonferroni",
                        inflation: float | None = None, rng: RngLike = 0) -> DetectionPrediction:
    """Predict the smallest frequency of a candidate that the decoder detects.

    Parameters
    ----------
    params : Params
    n_reports : int
        ``N``, reports in the collection (spread evenly over the cohorts).
    n_candidates : int
        ``S``, candidate strings tested.
    significance_level : float, default=0.05
        Family-wise level of the test of each candidate's frequency > 0.
    power : float, default=0.5
        Detection probability at the predicted frequency (0.5: the estimate sits at the threshold).
    correction : {"bonferroni", "none"}, default="bonferroni"
        Multiple-testing correction over the ``S`` candidates.
    inflation : float or None, default=None
        Collision inflation; computed with :func:`design_inflation` when None.
    rng : Generator, int or None, default=0
        For the random designs.

    Returns
    -------
    DetectionPrediction

    Notes
    -----
    See the module docstring for the derivation (GLS of the candidate frequencies given
    the Bloom design).  ``sd(x_hat) = sqrt(inflation lam (1 - lam) / (N h (p11 - p01)^2))``.
    """

    n = check_int(n_reports, "n_reports", "detection_frequency", low=1, high=MAX_COUNT)
    s = check_int(n_candidates, "n_candidates", "detection_frequency", low=1, high=MAX_COUNT)
    a = check_probability(significance_level, "significance_level", "detection_frequency", open_low=True, open_high=True)
    pw = check_probability(power, "power", "detection_frequency", open_low=True, open_high=True)
    corr = check_options(correction, "correction", "detection_frequency", ("bonferroni", "none"))
    infl = (design_inflation(params.k, params.h, params.m, s, rng=rng) if inflation is None
            else check_real(inflation, "inflation", "detection_frequency", low=1.0) if math.isfinite(inflation)
            else math.inf)
    c, var_bit = _bit_sigma(params, n)
    z = float(tails.norm_isf(a / s if corr == "bonferroni" else a))
    sd = math.sqrt(infl * var_bit / (n * params.h)) / abs(c)
    sd_ref = math.sqrt(n * params.p01 * (1.0 - params.p01)) / abs(c)
    return DetectionPrediction(frequency=(z + float(tails.norm_ppf(pw))) * sd,
                               reference_frequency=float(tails.norm_isf(a)) * sd_ref / n,
                               std_error=sd, inflation=infl, critical_z=z)


def detection_probability(prediction: DetectionPrediction, frequency: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Probability that a candidate of each ``frequency`` is detected: ``Phi(x / sd - critical_z)``.

    The formula of :func:`detection_frequency` solved for ``power``: a frequency ``x``
    is detected when its estimate, ``N(x, sd^2)``, exceeds ``critical_z sd``.
    """
    x = np.asarray(frequency, dtype=np.float64)
    if prediction.std_error == 0.0:
        return np.asarray(x > 0, dtype=np.float64)
    out: npt.NDArray[np.float64] = tails.norm_cdf(x / prediction.std_error - prediction.critical_z)
    return out


def reports_for_frequency(detectable: float, n_reports: int, frequency: float) -> int:
    """Reports that bring the smallest detectable share from ``detectable`` (at ``n_reports``) to ``frequency``.

    The standard error of a share falls as ``1 / sqrt(N)`` and nothing else in
    :func:`detection_frequency` depends on ``N``, so ``N' = N (detectable / frequency)^2``.
    """
    target = check_probability(frequency, "frequency", "reports_for_frequency", open_low=True)
    return math.ceil(check_int(n_reports, "n_reports", "reports_for_frequency", low=1) * (detectable / target) ** 2)


#: A smallest detectable share at or above this is "large": at most 1/0.05 = 20 strings can be
#: that frequent, so the decode can only ever list a handful of strings (see :class:`DetectionOutlook`).
LARGE_DETECTION_FREQUENCY = 0.05


@dataclass(frozen=True, slots=True, kw_only=True)
class DetectionOutlook:
    """What a decode of a given size can be expected to find among given true frequencies.

    Built by :func:`detection_outlook`.

    Attributes
    ----------
    prediction : DetectionPrediction
        The planner's prediction for this size (``prediction.frequency``: the smallest
        share detected with probability 1/2).
    n_reports, n_candidates : int
        The size: reports decoded and candidates tested.
    n_strings : int
        True strings among the candidates (frequencies > 0 given).
    expected : float
        Expected number of them detected: the sum of :func:`detection_probability`.
    above : int
        How many have a frequency at least ``prediction.frequency``.
    mass_above : float
        Their total frequency.
    """

    prediction: DetectionPrediction
    n_reports: int
    n_candidates: int
    n_strings: int
    expected: float
    above: int
    mass_above: float

    @property
    def frequency(self) -> float:
        """The smallest share detected with probability 1/2 (``prediction.frequency``)."""
        return self.prediction.frequency

    @property
    def at_most(self) -> int:
        """How many strings can have a share of at least :attr:`frequency` at all: ``floor(1 / frequency)``."""
        return int(1.0 / self.frequency) if self.frequency > 0 else self.n_candidates

    @property
    def large(self) -> bool:
        """Whether the smallest detectable share is at least :data:`LARGE_DETECTION_FREQUENCY`."""
        return self.frequency >= LARGE_DETECTION_FREQUENCY

    def reports_for(self, frequency: float) -> int:
        """Reports needed for ``frequency`` to be the smallest detectable share (:func:`reports_for_frequency`)."""
        return reports_for_frequency(self.frequency, self.n_reports, frequency)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields (``metrics.json``'s ``detection_outlook``)."""
        return {"detectable_share": _finite(self.frequency), "std_error": _finite(self.prediction.std_error),
                "critical_z": self.prediction.critical_z, "inflation": _finite(self.prediction.inflation),
                "reports": self.n_reports, "candidates": self.n_candidates, "true_candidates": self.n_strings,
                "expected_detections": self.expected, "true_candidates_above": self.above,
                "mass_above": self.mass_above, "at_most_detectable": self.at_most, "large": self.large}


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _check_frequencies(frequencies: npt.ArrayLike, owner: str) -> npt.NDArray[np.float64]:
    """``frequencies`` as a flat float array of shares: each finite and in [0, 1], summing to at most 1."""
    try:
        x = np.asarray(frequencies, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        x = np.array([np.nan])
    bad = ~np.isfinite(x) | (x < 0) | (x > 1)
    if bad.any():
        msg = (f"The 'frequencies' parameter of {owner} must hold shares in the range [0, 1]. "
               f"Got {float(x[bad][0])!r} instead.")
        raise InvalidParameterError(msg)
    total = float(x.sum())
    if total > 1.0 + 1e-9 * max(len(x), 1):  # rounding of shares that sum to 1
        msg = f"The 'frequencies' parameter of {owner} must hold shares that sum to at most 1. Got a sum of {total!r}."
        raise InvalidParameterError(msg)
    return x


def detection_outlook(params: Params, n_reports: int, frequencies: npt.ArrayLike, *, n_candidates: int | None = None,
                      significance_level: float = 0.05, rng: RngLike = 0) -> DetectionOutlook:
    """How many of the strings with these true ``frequencies`` a decode of this size is expected to find.

    Parameters
    ----------
    params : Params
    n_reports : int
        Reports decoded.
    frequencies : array-like of float
        True share of each candidate that is really held (zeros are ignored).
    n_candidates : int or None, default=None
        Candidates tested (decoys included); None: ``len(frequencies)``.
    significance_level : float, default=0.05
    rng : Generator, int or None, default=0
        For the random designs of :func:`design_inflation`.

    Returns
    -------
    DetectionOutlook

    Notes
    -----
    The prediction is :func:`detection_frequency` (Bonferroni over the candidates);
    the expected count is ``sum_j Phi(x_j / sd - z_{1 - level / S})``
    (:func:`detection_probability`).  The decoder's default Benjamini-Hochberg test is less
    strict than Bonferroni when several strings are present, so it tends to find a few
    more (the decoder benchmark's public scenario, Zipf(1) over 100 strings and 100,000
    reports, 20 seeds: expected 6.2, found 4-9, mean 6.7; ``docs/notes/decoder-rounds.md``).
    """
    x = _check_frequencies(frequencies, "detection_outlook")
    x = x[x > 0]
    s = len(x) if n_candidates is None else check_int(n_candidates, "n_candidates", "detection_outlook", low=1,
                                                      high=MAX_COUNT)
    pred = detection_frequency(params, n_reports, max(s, 1), significance_level=significance_level, rng=rng)
    above = x >= pred.frequency
    return DetectionOutlook(prediction=pred, n_reports=int(n_reports), n_candidates=max(s, 1), n_strings=len(x),
                            expected=float(detection_probability(pred, x).sum()), above=int(above.sum()),
                            mass_above=float(x[above].sum()))


def simulate_detection(params: Params, n_reports: int, n_candidates: int, frequency: float, *, critical_z: float,
                       reps: int = 100, rng: RngLike = None) -> int:
    """Count how often candidate 0 at ``frequency`` is detected in a binomial-count simulation.

    Each repetition draws a random Bloom design (uniform hashes), gives candidate 0 the
    frequency and the other ``S - 1`` candidates a Dirichlet(1) share of the rest, draws each
    cohort's bit counts ``Binomial(N/m, p01 + (p11 - p01) t_cb)``, fits the candidate
    frequencies by least squares on the debiased bit rates and tests candidate 0 with the
    plug-in (sandwich) standard error against ``critical_z``.  Used to check
    :func:`detection_frequency` (``benchmarks/planner_check.py``, ``tests/privacy/test_detection.py``).

    Returns
    -------
    int
        Number of the ``reps`` repetitions in which candidate 0 was detected.
    """
    gen = check_rng(rng)
    k, h, m = params.k, params.h, params.m
    s = check_int(n_candidates, "n_candidates", "simulate_detection", low=2)
    x = check_probability(frequency, "frequency", "simulate_detection")
    c, p01 = params.p11 - params.p01, params.p01
    per = check_int(n_reports, "n_reports", "simulate_detection", low=1) // m
    hits = 0
    for _ in range(check_int(reps, "reps", "simulate_detection", low=1)):
        rows = (np.arange(m) * k)[:, None, None] + gen.integers(0, k, size=(m, h, s))
        cols = np.broadcast_to(np.arange(s), (m, h, s))
        design = sparse.coo_matrix((np.ones(rows.size), (rows.ravel(), cols.ravel())), shape=(m * k, s)).tocsr()
        design.sum_duplicates()
        design.data[:] = 1.0
        X = design.toarray()
        freq = np.concatenate([[x], gen.dirichlet(np.ones(s - 1)) * (1.0 - x)])
        ones = gen.binomial(per, p01 + c * (X @ freq))
        y = (ones / per - p01) / c
        gram_inv = np.linalg.pinv(X.T @ X)
        est = gram_inv @ (X.T @ y)
        lam = np.clip(ones / per, 0.0, 1.0)
        row = gram_inv[0] @ X.T
        var0 = float(np.sum(row * row * lam * (1.0 - lam) / (per * c * c)))
        hits += bool(est[0] > critical_z * math.sqrt(var0))
    return hits
