"""Confidence intervals of the shares (private): marginal, FCR-adjusted and selective.

This module owns the interval arithmetic behind
:meth:`~rappor.analysis.decoder.DecodeResult.confidence_interval`: the marginal Wald interval
clipped to ``[0, 1]`` (:func:`wald_interval`), the false-coverage-rate adjusted level of
Benjamini and Yekutieli (:func:`fcr_critical_value`) and the interval conditional on
detection (:func:`selective_interval`, by inverting :func:`truncated_normal_interval`).
"""

from __future__ import annotations

from collections.abc import Callable
import math

import numpy as np
import numpy.typing as npt

from ..._util import tails
from ._problem import Array


#: Selective intervals use the truncated-normal pivot only for Wald z this far (in SE) above
#: the detection cutoff; closer ones get the FCR interval (the pivot degenerates at the cutoff).
SELECTIVE_MARGIN = 0.1


def wald_interval(share: Array, se: Array, z: Array | float) -> tuple[Array, Array]:
    """``share ± z se`` clipped to ``[0, 1]``."""
    return np.clip(share - z * se, 0.0, 1.0), np.clip(share + z * se, 0.0, 1.0)


def fcr_critical_value(confidence_level: float, n_selected: int, n_tests: int) -> float:
    """``z`` of Benjamini and Yekutieli's FCR-adjusted interval: level ``1 - R (1 - level) / m``.

    With ``R = n_selected`` detected out of ``m = n_tests`` tests (Benjamini and
    Yekutieli 2005, JASA 100(469), Definition 1); the marginal ``z`` when nothing is
    selected.
    """
    if not (n_selected and n_tests):
        return tails.two_sided_z(confidence_level)
    return float(tails.norm_isf(min(n_selected / n_tests, 1.0) * (1.0 - confidence_level) / 2.0))


def selective_interval(share: Array, se: Array, pvalue: Array, detected: npt.NDArray[np.bool_],
                       first_of_group: npt.NDArray[np.bool_], confidence_level: float,
                       z_fcr: float) -> tuple[Array, Array]:
    """Intervals of the detected shares conditional on their detection; marginal for the others.

    Detection is read as "Wald z above a threshold c": c lies between the largest
    detected and the smallest undetected p-value; their geometric mean, as a calibrated
    z-score, is carried to each candidate's Wald scale by the ratio of its Wald and
    calibrated z-scores, and :func:`truncated_normal_interval` is inverted for the
    Wald z ``share / se``.  About the Wald width for strong strings, much wider only
    near the threshold.  A detected string within :data:`SELECTIVE_MARGIN` SE of its
    threshold, or with share 0 (no Wald z), gets the FCR interval (``z_fcr``) instead.
    ``first_of_group`` marks one candidate per group of indistinguishable ones (the
    undetected p-values are taken once per group).
    """
    low, high = wald_interval(share, se, tails.two_sided_z(confidence_level))
    sel = detected & np.isfinite(share) & np.isfinite(se) & (se > 0)
    if sel.any():
        zw = share[sel] / se[sel]
        cutoff = detection_cutoffs(share, se, pvalue, detected, first_of_group)[sel]
        # The pivot needs z clearly above its cutoff: at or just above it, it says only that
        # the effect may be anything below (and a detected share of 0 has no Wald z at all).
        # Those few get the FCR interval instead.
        pivot = (zw > cutoff + SELECTIVE_MARGIN) & (share[sel] > 0)
        idx = np.flatnonzero(sel)
        if pivot.any():
            mu_low, mu_high = truncated_normal_interval(zw[pivot], cutoff[pivot], confidence_level)
            at = idx[pivot]
            # Near the threshold the conditional interval can lie below the estimate; keep it inside.
            low[at] = np.clip(np.minimum(mu_low * se[at], share[at]), 0.0, 1.0)
            high[at] = np.clip(np.maximum(mu_high * se[at], share[at]), 0.0, 1.0)
        if not pivot.all():
            at = idx[~pivot]
            low[at], high[at] = wald_interval(share[at], se[at], z_fcr)
    return low, high


def detection_cutoffs(share: Array, se: Array, pvalue: Array, detected: npt.NDArray[np.bool_],
                      first_of_group: npt.NDArray[np.bool_]) -> Array:
    """Each detected candidate's detection threshold on its Wald z ``share / se``; ``nan`` for the others.

    The threshold on the p-values lies between the largest detected and the smallest
    undetected p-value: their geometric mean, as a calibrated z-score, is carried to each
    candidate's Wald scale by the ratio of its Wald and calibrated z-scores.
    ``first_of_group`` marks one candidate per group of indistinguishable ones.
    """
    out = np.full(share.shape, np.nan)
    sel = detected & np.isfinite(share) & np.isfinite(se) & (se > 0)
    if sel.any():
        pv = np.clip(np.nan_to_num(pvalue, nan=1.0), 1e-300, 1.0)
        p_in = float(np.max(pv[sel]))
        rest = pv[first_of_group & ~detected]
        p_out = float(np.min(rest)) if rest.size else 1.0
        cut_cal = float(tails.norm_isf(math.sqrt(p_in * max(p_out, p_in))))
        zw = share[sel] / se[sel]
        zc = tails.norm_isf(pv[sel])
        out[sel] = np.where(zc > 0, zw * cut_cal / np.maximum(zc, 1e-300), cut_cal)
    return out


def truncated_normal_mean_inverse(z: Array, cutoff: Array) -> Array:
    """The ``mu >= 0`` whose law ``N(mu, 1)`` truncated to ``(cutoff, inf)`` has mean ``z``.

    The mean of the truncated law is ``mu + phi(c - mu) / Q(c - mu)`` (``Q`` the normal
    survival function; Johnson, Kotz and Balakrishnan 1994, *Continuous Univariate
    Distributions* 1, 13.10.1), increasing in ``mu``: this is the conditional
    moment estimate of ``mu`` from one observation ``z > c`` given its selection (the
    conditional maximum-likelihood estimate of Zhong and Prentice 2008, Biostatistics 9(4),
    solves a nearby equation).  ``0`` where even ``mu = 0`` gives a mean above ``z`` (an
    observation at the cutoff says only that the effect may be anything small); solved by
    bisection, vectorized.
    """
    z = np.asarray(z, dtype=np.float64)
    c = np.broadcast_to(np.asarray(cutoff, dtype=np.float64), z.shape)

    def mean(mu: Array) -> Array:
        out: Array = mu + np.exp(tails.norm_logpdf(c - mu) - tails.norm_logsf(c - mu))
        return out

    root = _bisect_increasing(mean, np.zeros_like(z), np.maximum(np.maximum(z, c), 0.0) + 10.0, z, 60)
    result: Array = np.where(mean(np.zeros_like(z)) >= z, 0.0, root)
    return result


def _bisect_increasing(f: Callable[[Array], Array], lo: Array, hi: Array, target: Array | float,
                       iterations: int) -> Array:
    """Where the increasing ``f`` crosses ``target`` within ``[lo, hi]``, elementwise, by bisection."""
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        below = f(mid) < target
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    out: Array = 0.5 * (lo + hi)
    return out


def truncated_normal_interval(z: Array, cutoff: Array | float, confidence_level: float) -> tuple[Array, Array]:
    """Confidence interval for ``mu`` from ``z ~ N(mu, 1)`` observed *given* ``z > cutoff``.

    The selection-adjusted ("conditional") interval of Zhong and Prentice 2008
    (Biostatistics 9(4)) and Weinstein, Fithian and Benjamini 2013 (JASA 108(501)):
    with ``F(z; mu) = P(Z <= z | Z > cutoff) = 1 - Q(z - mu) / Q(cutoff - mu)`` (``Q``
    the normal survival function), which decreases in ``mu``, the interval is
    ``{mu : (1 - level) / 2 <= F(z; mu) <= (1 + level) / 2}``.  Far above the cutoff it
    is the Wald interval ``z ± z_(1+level)/2``; just above it, it stretches down (the
    observation may be a small effect that was lucky to be selected).  Solved by
    bisection on log survival functions, vectorized.

    Parameters
    ----------
    z : ndarray
        Observed statistics, each ``> cutoff``.
    cutoff : float or ndarray
        The selection threshold (one, or one per statistic).
    confidence_level : float

    Returns
    -------
    low, high : ndarray
    """
    z = np.asarray(z, dtype=np.float64)
    c = np.broadcast_to(np.asarray(cutoff, dtype=np.float64), z.shape)
    tail = (1.0 - confidence_level) / 2.0

    def log_ratio(mu: Array) -> Array:
        out: Array = tails.norm_logsf(z - mu) - tails.norm_logsf(c - mu)
        return out

    def solve(ratio: float) -> Array:
        # Q(z - mu) / Q(cutoff - mu) increases from 0 to 1 in mu: find where it equals ``ratio``
        # (just above the cutoff the bounds run far down; 0 in shares).
        return _bisect_increasing(log_ratio, np.minimum(c, z) - 1000.0, z + 10.0, math.log(ratio), 90)

    return solve(tail), solve(1.0 - tail)

