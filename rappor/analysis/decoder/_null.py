"""P-values of "share > 0" (private): the random-string null and the normal one.

This module owns the law a candidate's test statistic is compared with when the
candidate is absent.  By default (:func:`null_pvalues` with ``null="random-strings"``)
it is the law of a *random string's* score against the fitted residuals
(:func:`random_string_null`): a randomization null that keeps the residuals' structure,
so the p-values stay calibrated when heavy strings outside the candidate list leave
structure in them.  ``null="normal"`` (and the closed-form fit of orthogonal designs)
reads them off the standard normal tail of the Wald / score z (:func:`normal_pvalues`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..._util import tails
from ._adjust import DetectionRule
from ._fit import Fit, fit_coefficients
from ._problem import Array, IntArray, WeightedDesign, WeightedProblem


#: The null laws :func:`null_pvalues` knows.
NULLS = ("random-strings", "normal")


def normal_pvalues(z: Array) -> Array:
    """One-sided p-values ``P(Z >= z)`` of standard normal statistics."""
    out: Array = tails.norm_sf(z)
    return out


def null_pvalues(problem: WeightedProblem, design: WeightedDesign, fit: Fit, extra: IntArray, rule: DetectionRule,
                 rng: np.random.Generator, *, screened: bool) -> tuple[Array, RandomStringNull | None]:
    """One-sided p-values of the distinguishable candidates' shares under ``rule.null``.

    ``fit`` is the constrained fit of ``design`` (columns ``extra``, the non-candidate
    column when modelled, are always in its model).  Returns the p-values and, for the
    random-string null, its law (None for the normal null).

    ``"random-strings"``: each candidate's statistic on the score scale,
    ``x_j = z_j phi / se_j`` -- the score ``a_j' r`` against the fitted residual off
    the support and, on it, ``a_j^perp' r_(-j)`` (Frisch-Waugh-Lovell: the score
    against the residual without ``j``) -- is compared with the law of a random
    string's score ``a_v' r`` (see :func:`random_string_null`).

    When the Lasso screened the candidates, the residual ``r`` of the null is that of
    the model with only the *detected* candidates (and the non-candidate column),
    iterated until the detections stop changing (at most 4 rounds): absent candidates
    that the screening let in because they overlap heavy non-candidate strings soak up
    the structure those leave in the residual, which makes the null too narrow exactly
    for them (measured: every null false positive at 300,000 reports was such a support
    member).  Without screening every candidate is in the model and ``r`` is the full
    fit's (the detected-only residual would hold the undetected true strings' signal:
    measured, 100 true candidates lost 2 of 7.8 detections).
    """
    s_u = design.n_distinct
    z = fit.z[:s_u]
    if rule.null == "normal":
        return normal_pvalues(z), None
    # Residuals are shorter than the noise by the fitted dimensions (E||r||^2 = (n - p) sigma^2):
    # rescale them as the Pearson dispersion does, so that a random string's score has the
    # variance an absent candidate's has.
    se = fit.se[:s_u]
    finite = np.isfinite(se) & (se > 0)
    x = np.zeros(s_u)
    x[finite] = z[finite] * fit.dispersion / se[finite]
    x[np.isinf(z)] = np.inf
    b, a = problem.b, design.a
    k, h = problem.params.num_bloombits, problem.params.num_hashes
    coef, dof, used = fit.coef, fit.dof, np.union1d(fit.support, extra)
    rounds = 4 if screened else 1
    for i in range(rounds):
        resid = (b - a @ coef) * math.sqrt(len(b) / dof)
        null = random_string_null(problem.weight * resid, k, h, rng)
        pvalue = null.sf(x)
        keep = np.union1d(np.flatnonzero(rule.detected(pvalue)), extra)
        if i == rounds - 1 or np.array_equal(keep, used):
            break
        coef, support = fit_coefficients(a, b, keep, max_sum=1.0)  # (only the residual is needed)
        dof, used = max(len(b) - len(support), 1), keep
    return pvalue, null


#: Bit patterns per cohort used for the random-string null: every one of the ``k**h`` hash
#: outcomes when there are at most this many, otherwise this many drawn with the ``rng``.
NULL_PATTERNS = 4096


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class RandomStringNull:
    """Saddlepoint tail of the score ``a' r`` of a string outside the model, given ``r``.

    ``x`` (increasing) and ``log_sf`` tabulate ``log P(a' r >= x)`` on a grid of tilts.
    """

    x: Array
    log_sf: Array
    mean: float
    sd: float
    skewness: float
    exact: bool

    @property
    def floor(self) -> float:
        """The smallest p-value this law gives: its tail at the top of the tabulated grid.

        No random string scores beyond about the top score of every cohort, which one
        reaches with probability about ``(h! / k^h)^m``; :meth:`sf` is clamped there, so
        candidates beyond it tie at this value (``docs/decoder.md``, "Its floor").
        """
        return float(np.exp(self.log_sf[-1]))

    def sf(self, x: Array) -> Array:
        """``P(a' r >= x)`` for a random string, interpolated in ``log`` (clamped at the grid ends)."""
        return np.exp(np.interp(np.asarray(x, dtype=np.float64), self.x, self.log_sf))


def random_string_null(weighted_resid: Array, k: int, h: int, rng: np.random.Generator,
                       *, n_patterns: int = NULL_PATTERNS) -> RandomStringNull:
    """Law of ``a_v' r`` over "virtual random strings" ``v``, conditional on the residual ``r``.

    A candidate absent from the data has, under a uniform hash (ours, and google/rappor's
    MD5 map alike), ``h`` independent uniform bits in every cohort, independently across
    cohorts, and its bits are independent of the data.  Given the whitened residual
    ``r`` (``weighted_resid = w * r`` per (cohort, bit) row, cohorts stacked by ``k``),
    its score is therefore ``N = sum_c X_c`` with independent per-cohort terms
    ``X_c = sum_{b in B_c} w_cb r_cb`` over the distinct bits ``B_c`` of a random
    ``h``-tuple: a randomization (permutation-type) null that keeps the residual's
    structure -- e.g. a heavy non-candidate string sitting on two bits per cohort --
    which makes the normal approximation anti-conservative in the right tail.

    The law of ``X_c`` is enumerated exactly over the ``k**h`` tuples (or
    ``n_patterns`` tuples drawn from ``rng`` when there are more), and the tail of
    the sum uses the Lugannani-Rice saddlepoint approximation (Lugannani and Rice 1980,
    Adv. Appl. Prob. 12(2); Butler 2007, "Saddlepoint Approximations with Applications",
    eq. 1.21) with the cumulant generating function ``K(s) = sum_c log E exp(s X_c)``,
    tabulated on a grid of tilts ``s``.
    """
    v = np.asarray(weighted_resid, dtype=np.float64).reshape(-1, k)  # (cohorts, k)
    exact = k**h <= n_patterns
    if exact:
        tuples = np.indices((k,) * h).reshape(h, -1).T
    else:
        # Sampled patterns (shared by the cohorts); fewer per cohort when there are many cohorts.
        n_draw = int(min(n_patterns, max(512, 2**17 // max(len(v), 1))))
        tuples = rng.integers(0, k, size=(n_draw, h))
    # Distinct bits only: a later hash equal to an earlier one sets no new bit.
    distinct = np.ones(tuples.shape, dtype=bool)
    for i in range(1, h):
        distinct[:, i] = ~np.any(tuples[:, :i] == tuples[:, i:i + 1], axis=1)
    xs = (v[:, tuples] * distinct[None]).sum(axis=2)  # (cohorts, T)
    mu_c = xs.mean(axis=1)
    dev = xs - mu_c[:, None]
    var = float((dev**2).mean(axis=1).sum())
    k3 = float((dev**3).mean(axis=1).sum())
    mean = float(mu_c.sum())
    sd = math.sqrt(max(var, 1e-300))
    # Tilts in units of 1/sd: dense near 0, geometric far out (tails to ~1e-300).
    u = np.concatenate([-np.geomspace(40.0, 0.05, 24), np.linspace(0.05, 6.0, 50), np.geomspace(6.3, 400.0, 26)])
    s = u / sd
    n_t = xs.shape[1]
    kk = np.empty(len(s))
    k1 = np.empty(len(s))
    k2 = np.empty(len(s))
    chunk = max(1, 4_000_000 // max(xs.size, 1))
    for lo in range(0, len(s), chunk):
        t = s[lo:lo + chunk, None, None] * dev[None]  # (g, cohorts, T), centred for stability
        top = t.max(axis=2, keepdims=True)
        e = np.exp(t - top)
        z0 = e.sum(axis=2)
        m1 = (e * dev[None]).sum(axis=2) / z0
        m2 = (e * dev[None] ** 2).sum(axis=2) / z0
        kk[lo:lo + chunk] = (np.log(z0 / n_t) + top[..., 0]).sum(axis=1)
        k1[lo:lo + chunk] = m1.sum(axis=1)
        k2[lo:lo + chunk] = (m2 - m1**2).sum(axis=1)
    x_c = k1  # centred score at each tilt
    w = np.sign(s) * np.sqrt(np.maximum(2.0 * (s * x_c - kk), 0.0))
    uu = s * np.sqrt(np.maximum(k2, 1e-300))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # Lugannani-Rice, in logs for the far tail: sf = Phi(-w) [1 + phi(w)/Phi(-w) (1/u - 1/w)].
        ratio = np.exp(tails.norm_logpdf(w) - tails.norm_logsf(w))
        factor = 1.0 + ratio * (1.0 / uu - 1.0 / w)
        log_sf = tails.norm_logsf(w) + np.log(np.where(factor > 0, factor, np.nan))
    # A tilt where the approximation breaks down (at a lattice law's edge, where K'' -> 0 and
    # the correction's 1/u diverges, it gives a factor <= 0 or a tail above 1) is left out:
    # kept, its value would be carried to every larger x by the monotone envelope below.
    ok = np.isfinite(log_sf) & np.isfinite(x_c) & (k2 > 1e-12 * var) & (log_sf <= 1e-9)
    # Whitened residuals have unit variance under the model, so sd is about sqrt(cohorts) x O(1);
    # below 1e-9 of that the residual is rounding, not noise (counts that fit exactly).
    if not np.any(ok) or sd < 1e-9 * math.sqrt(len(v)):
        # Degenerate residual (e.g. an exact fit): every random string scores ``mean``.
        eps = 1e-9 * (1.0 + abs(mean))
        return RandomStringNull(x=np.array([mean, mean + eps]), log_sf=np.array([0.0, -745.0]), mean=mean,
                                sd=0.0, skewness=0.0, exact=bool(exact))
    x_c, log_sf = x_c[ok], log_sf[ok]
    # Monotone in x (numerical noise at the extremes): keep increasing x, non-increasing log sf.
    order = np.argsort(x_c, kind="stable")
    x_c, log_sf = x_c[order], np.minimum.accumulate(np.minimum(log_sf[order], 0.0))
    keep = np.concatenate([[True], np.diff(x_c) > 0])
    return RandomStringNull(x=x_c[keep] + mean, log_sf=log_sf[keep], mean=mean, sd=sd,
                            skewness=k3 / sd**3, exact=bool(exact))

