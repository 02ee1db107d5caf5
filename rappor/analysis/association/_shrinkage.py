"""Empirical-Bayes shrinkage of a boolean's conditional distributions given a string variable (private).

In a string x boolean table most categories hold a few percent of the clients, and the
maximum-likelihood split of each between TRUE and FALSE is noisy: at 100,000 reports its
standard error is often 0.1-0.3.  The splits ``c_i = P(TRUE | string i)`` are estimated
together, so each borrows strength from the others (Efron and Morris 1975, JASA 70(350),
"Data analysis using Stein's estimator and its generalizations"): with ``c_i ~ N(mu_i,
v_i)`` (``v_i`` its delta-method variance) and ``mu_i ~ N(c, tau^2)`` around the overall
share ``c = P(TRUE)``, the posterior mean is

    c_i' = c + tau^2 / (tau^2 + v_i) (c_i - c),

with ``tau^2 = sum_i w_i ((c_i - c)^2 - v_i) / sum_i w_i`` (weights ``w_i`` the
categories' shares; positive part) estimated by the method of moments.  A category
measured precisely (``v_i << tau^2``) keeps its split; a noisy one moves towards ``c``.
Each category's share ``P(string i)`` is kept, so the string's marginal is unchanged.

Measured on design collections (google/rappor's client rules, k=32 h=2 m=32, 100,000
clients, 50 Zipf strings, seeds 100-102): total variation to the clients' joint 0.10-0.12
instead of 0.15-0.18 at f=0.5, 0.16-0.21 instead of 0.19-0.33 at f=0.75.  Applied to two
variables, one string and one boolean; not to string x string tables, where the same rule
moved estimates away from the truth (each string's conditional is far from the marginal).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ._inference import conditional_distribution

__all__ = ["shrink_boolean_split"]

Array = npt.NDArray[np.float64]


def shrink_boolean_split(table: Array, cov: Array | None, string_axis: int) -> tuple[Array, Array]:
    """Shrink ``P(boolean | string category)`` towards ``P(boolean)``; the categories' shares are kept.

    Parameters
    ----------
    table : ndarray of shape (C, 2) or (2, C)
        The joint table (sums to 1), the boolean's axis of size 2 (TRUE first).
    cov : ndarray of shape (2 C, 2 C) or None
        Its covariance; without it the table is returned unchanged.
    string_axis : int
        The string variable's axis (0 or 1).

    Returns
    -------
    table : ndarray
        The shrunk table, same shape.
    factor : ndarray of shape (C,)
        ``tau^2 / (tau^2 + v_i)`` per category (1: unchanged).
    """
    rows = np.moveaxis(table, string_axis, 0)
    mass = rows.sum(axis=1)
    ones = np.ones(rows.shape[0])
    if cov is None or rows.shape[1] != 2 or not mass.sum() > 0:
        return table, ones
    cond, se = conditional_distribution(table, cov, string_axis)
    c_i = np.moveaxis(cond, string_axis, 0)[:, 0]
    v_i = np.moveaxis(se, string_axis, 0)[:, 0] ** 2
    usable = (mass > 0) & np.isfinite(c_i) & np.isfinite(v_i)
    if usable.sum() < 3:  # Stein's gain needs at least three means
        return table, ones
    c = float(rows[:, 0].sum() / mass.sum())
    w = mass[usable]
    tau2 = max(float(np.sum(w * ((c_i[usable] - c) ** 2 - v_i[usable])) / w.sum()), 0.0)
    factor = np.ones(rows.shape[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        factor[usable] = np.where(tau2 + v_i[usable] > 0, tau2 / (tau2 + v_i[usable]), 1.0)
    split = np.where(usable, c + factor * (np.nan_to_num(c_i) - c), np.nan_to_num(c_i, nan=c))
    split = np.clip(split, 0.0, 1.0)
    shrunk = np.stack([mass * split, mass * (1.0 - split)], axis=1)
    return np.moveaxis(shrunk, 0, string_axis), factor
