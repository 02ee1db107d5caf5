"""Parameter planner: choose ``k, h, m, f, p, q`` for privacy targets and predict what can be detected.

google/rappor's users asked for a guide to choosing parameters
(https://github.com/google/rappor/issues/9).  Given the
number of reports ``N``, the number of candidate strings ``S`` and privacy targets
(``epsilon_inf`` for the permanent response, ``epsilon_one`` for one report, by default
``epsilon_inf / 4``),
:func:`plan` searches a grid of Bloom filter sizes, hash counts and cohort counts, sets
``f`` (and ``p, q``) to meet the targets exactly, and predicts for each design the
smallest candidate frequency the decoder will detect (:func:`detection_frequency`, whose
model :mod:`rappor.privacy._detection` states).  ``benchmarks/planner_check.py`` compares
the predictions with simulated detection.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._util.results import record_table
from .._util.validation import MAX_COUNT, RngLike, check_int, check_real, check_rng
from ..exceptions import InvalidParameterError
from ..params import Params
from ._detection import DetectionPrediction, design_inflation, detection_frequency

__all__ = ["DEFAULT_EPSILON_RATIO", "Plan", "PlanResult", "plan"]



#: Columns of :meth:`PlanResult.table`, in the order of :meth:`Plan.as_dict`.
PLAN_COLUMNS = (("k", "i8"), ("h", "i8"), ("m", "i8"), ("p", "f8"), ("q", "f8"), ("f", "f8"), ("epsilon_one", "f8"),
                ("epsilon_inf", "f8"), ("detection_frequency", "f8"), ("reference_detection_frequency", "f8"),
                ("std_error", "f8"), ("inflation", "f8"))


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """One proposed design: its parameters, privacy and predicted detection."""

    params: Params
    epsilon_one: float
    epsilon_inf: float
    prediction: DetectionPrediction

    def as_dict(self) -> dict[str, Any]:
        """Flat ``dict`` (``k, h, m, p, q, f``, epsilons, predictions) for tables and JSON."""
        d: dict[str, Any] = dict(self.params.as_dict())
        d.update(epsilon_one=self.epsilon_one, epsilon_inf=self.epsilon_inf,
                 detection_frequency=self.prediction.frequency,
                 reference_detection_frequency=self.prediction.reference_frequency,
                 std_error=self.prediction.std_error, inflation=self.prediction.inflation)
        return d


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanResult:
    """The planner's answer: the recommended :class:`Plan` and every feasible one, best first."""

    best: Plan
    plans: tuple[Plan, ...]
    n_reports: int
    n_candidates: int

    def table(self, limit: int | None = 10) -> np.ndarray:
        """The first ``limit`` plans, best first, as a numpy structured array: the columns of :meth:`Plan.as_dict`.

        Parameters
        ----------
        limit : int or None, default=10
            How many plans (``None``: all of them).
        """
        return record_table(PLAN_COLUMNS, [tuple(p.as_dict().values()) for p in self.plans[:limit]])


def _flip_for_epsilon_inf(epsilon_inf: float, h: int) -> float:
    """``f`` with ``2 h ln((1 - f/2)/(f/2)) = epsilon_inf`` (RAPPOR Thm. 1 solved for f).

    Rounding can leave :attr:`Params.epsilon_inf` a few ulps above the target; ``f`` is then
    nudged up (more noise) until the target holds exactly as ``Params`` computes it.
    """
    shrink = math.exp(-epsilon_inf / (2.0 * h))  # exp(-x): no overflow for a huge target (f -> 0)
    f = 2.0 * shrink / (1.0 + shrink)
    if f >= 1.0:
        return 1.0  # the target is below what double precision resolves: no design (plan says so)
    for _ in range(64):
        if Params(num_bloombits=h, num_hashes=h, num_cohorts=1, prob_p=0.0, prob_q=1.0,
                  prob_f=f).epsilon_inf <= epsilon_inf:
            break
        f = math.nextafter(f, 1.0)
    return f


def _irr_for_epsilon_one(epsilon_one: float, h: int, f: float) -> float:
    """Symmetric IRR ``p = 1 - q`` with ``Params.epsilon_one == epsilon_one`` (bisection on p)."""
    def eps(p: float) -> float:
        return Params(num_bloombits=h, num_hashes=h, num_cohorts=1, prob_p=p, prob_q=1.0 - p, prob_f=f).epsilon_one
    if eps(0.0) <= epsilon_one:
        return 0.0
    lo, hi = 0.0, 0.5 - 1e-12
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if eps(mid) > epsilon_one:
            lo = mid
        else:
            hi = mid
    return hi


#: Default ``epsilon_inf / epsilon_one`` when no ``epsilon_one`` is given: google/rappor's
#: demo parameters (h=2, f=0.5, p=0.5, q=0.75) have epsilon_inf 4.39 and epsilon_one 1.07.
DEFAULT_EPSILON_RATIO = 4.0


def plan(n_reports: int, n_candidates: int, *, epsilon_inf: float = 4.0, epsilon_one: float | None = None,
         significance_level: float = 0.05, power: float = 0.5,
         num_bloombits: tuple[int, ...] = (8, 16, 32, 64, 128, 256),
         num_hashes: tuple[int, ...] = (1, 2, 4),
         num_cohorts: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64, 128, 256),
         min_reports_per_cohort: int = 100, tolerance: float = 1.05, rng: RngLike = 0) -> PlanResult:
    """Propose RAPPOR parameters meeting privacy targets, with predicted detection.

    Parameters
    ----------
    n_reports : int
        ``N``, the number of reports expected.
    n_candidates : int
        ``S``, the number of candidate strings to test.
    epsilon_inf : float, default=4.0
        Target epsilon of the permanent response (google/rappor's demo parameters have 4.39).
        ``f`` is set so that :attr:`Params.epsilon_inf` equals it.
    epsilon_one : float or None, default=None
        Target epsilon of one report, below ``epsilon_inf``.  None: ``epsilon_inf / 4``
        (:data:`DEFAULT_EPSILON_RATIO`, the ratio of google/rappor's demo parameters).
        ``math.inf`` asks explicitly for no instantaneous noise (``p = 0, q = 1``): every
        report then reveals the permanent response (``epsilon_one = epsilon_inf``), so the
        reports of one client can be linked over time, which defeats RAPPOR's longitudinal
        protection.
    significance_level, power : float
        See :func:`detection_frequency`.
    num_bloombits, num_hashes, num_cohorts : tuple of int
        The grid searched.
    min_reports_per_cohort : int, default=100
        Designs with fewer expected reports per cohort are skipped (the normal
        approximation of each cohort's bit counts needs them).
    tolerance : float, default=1.05
        The recommended plan is the cheapest (fewest bits ``k``, then fewest cohorts, then
        fewest hashes) whose predicted detection frequency is within this factor of the best.
    rng : Generator, int or None, default=0

    Returns
    -------
    PlanResult

    Raises
    ------
    InvalidParameterError
        If ``epsilon_one`` is finite and not below ``epsilon_inf``, or if no design in the
        grid can separate the candidates.

    Notes
    -----
    ``f = 2 / (1 + exp(epsilon_inf / (2h)))`` inverts RAPPOR Theorem 1; ``p = 1 - q`` is found
    by bisection so that Theorem 2's ``epsilon_one`` meets the target.  Predictions:
    :func:`detection_frequency`.
    """
    n = check_int(n_reports, "n_reports", "plan", low=1, high=MAX_COUNT)
    s = check_int(n_candidates, "n_candidates", "plan", low=1, high=MAX_COUNT)
    e_inf = check_real(epsilon_inf, "epsilon_inf", "plan", low=0.0, low_open=True)
    if epsilon_one is None:
        e_one = e_inf / DEFAULT_EPSILON_RATIO
    elif isinstance(epsilon_one, (int, float)) and epsilon_one == math.inf:
        e_one = math.inf  # explicit: no instantaneous noise
    else:
        e_one = check_real(epsilon_one, "epsilon_one", "plan", low=0.0, low_open=True)
        if e_one >= e_inf:
            msg = (f"The 'epsilon_one' parameter of plan must be below epsilon_inf={e_inf!r} (one report "
                   f"reveals at most the permanent response). Got {epsilon_one!r} instead; pass math.inf "
                   f"(rappor plan --no-irr) to ask for no instantaneous noise.")
            raise InvalidParameterError(msg)
    tol = check_real(tolerance, "tolerance", "plan", low=1.0)
    min_per = check_int(min_reports_per_cohort, "min_reports_per_cohort", "plan", low=1)
    gen = check_rng(rng)
    plans = []
    informative = False  # some num_hashes leaves a report information at double precision
    for h in num_hashes:
        f = _flip_for_epsilon_inf(e_inf, h)
        if f >= 1.0:
            continue  # so much noise that a report keeps no information at double precision
        p = 0.0 if e_one == math.inf else _irr_for_epsilon_one(e_one, h, f)
        if not 1.0 - 2.0 * p > 0.0:
            continue
        informative = True
        for k in num_bloombits:
            if h > k:
                continue
            for m in num_cohorts:
                if m > 1 and n / m < min_per:
                    continue
                params = Params(num_bloombits=k, num_hashes=h, num_cohorts=m, prob_p=p, prob_q=1.0 - p, prob_f=f)
                infl = design_inflation(k, h, m, s, n_designs=1, rng=gen)
                if not math.isfinite(infl):
                    continue
                pred = detection_frequency(params, n, s, significance_level=significance_level, power=power,
                                           inflation=infl)
                plans.append(Plan(params=params, epsilon_one=params.epsilon_one, epsilon_inf=params.epsilon_inf,
                                  prediction=pred))
    if not plans and all(_flip_for_epsilon_inf(e_inf, h) >= 1.0 for h in num_hashes):
        msg = (f"The 'epsilon_inf' parameter of plan must leave a report some information: {e_inf!r} needs "
               f"prob_f = 1 at double precision (every bit a coin flip) for every num_hashes tried.")
        raise InvalidParameterError(msg)
    if not informative:
        msg = (f"The 'epsilon_one' parameter of plan must leave a report some information: {e_one!r} needs "
               f"p = q at double precision for every num_hashes tried.")
        raise InvalidParameterError(msg)
    if not plans:
        msg = (f"No design in the grid separates {s} candidates with {n} reports: increase num_bloombits or "
               f"num_cohorts (need num_bloombits * num_cohorts > num_candidates and "
               f"{min_per} reports per cohort).")
        raise InvalidParameterError(msg)
    plans.sort(key=lambda pl: pl.prediction.frequency)
    best_freq = plans[0].prediction.frequency
    good = [pl for pl in plans if pl.prediction.frequency <= tol * best_freq]
    best = min(good, key=lambda pl: (pl.params.k, pl.params.m, pl.params.h))
    return PlanResult(best=best, plans=tuple(plans), n_reports=n, n_candidates=s)
