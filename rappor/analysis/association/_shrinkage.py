"""Empirical-Bayes shrinkage of a boolean's conditional distributions given a string variable (private).

In a string x boolean table most categories hold a few percent of the clients, and the
maximum-likelihood split of each between TRUE and FALSE is noisy: at 100,000 reports its
standard error is often 0.1-0.3.  The splits ``c_i = P(TRUE | string i)`` are estimated
together, so each borrows strength from the others (Efron and Morris 1975, JASA 70(350),
"Data analysis using Stein's estimator and its generalizations"): with ``c_i ~ N(mu_i,
v_i)`` (``v_i`` its delta-method variance, at most 1/4) and ``mu_i ~ N(mu, tau^2)``, the
posterior mean is

    c_i' = mu + tau^2 / (tau^2 + v_i) (c_i - mu),

with ``mu`` and ``tau^2`` the Paule-Mandel random-effects estimates (:func:`random_effects`:
each split weighted by its precision).  A category measured precisely (``v_i << tau^2``) keeps
its split; a noisy one moves towards ``mu``.  Each category's share ``P(string i)`` is kept,
so the string's marginal is unchanged.  Until session 13 ``mu`` was the overall share
``P(TRUE)`` and ``tau^2`` the moment estimate weighted by the categories' shares, which one
large category could set alone (at f=0.75 it came out 0 on three of twelve three-variable
collections, every split then the overall share); the random-effects estimates were closer to the
truth on 27 of 32 design collections (three variables, seeds 100-107; string x boolean at
100,000 clients, both privacy levels, with and without outside strings, seeds 100-103).

Measured on design collections (google/rappor's client rules, k=32 h=2 m=32, 100,000
clients, 50 Zipf strings, seeds 100-102): total variation to the clients' joint 0.10-0.12
instead of 0.15-0.18 at f=0.5, 0.16-0.21 instead of 0.19-0.33 at f=0.75.  Applied to two
variables, one string and one boolean; not to string x string tables, where the same rule
moved estimates away from the truth (each string's conditional is far from the marginal).

With two string variables and a boolean the model has two levels (:func:`nested_split_posterior`),
and it gives each pair's split a posterior mean and standard deviation: the decoder draws the splits
from it to estimate the three-way cells by the rule for total variation
(:func:`~rappor.analysis.association._conditionals.three_variable_estimate`).  On design collections
(20 x 10 strings x boolean, 200,000 clients, f=0.5 and 0.75, seeds 100-107), the parent chosen
by the pairs' level-2 spread, the splits' variances capped, the random-effects level 1, the pairs
pooled and the three-way rule together gave a mean TV of 0.167 / 0.430 at f=0.5 / 0.75 against
0.173 / 0.437 before; the default shrinks the pairs instead of pooling them (0.180 / 0.428 on
those collections), which is much closer where the boolean depends on both strings
(:func:`nested_split_posterior`; ``docs/notes/association-measurements.md``, *Session 13: the
boolean's splits*).  Since session 14 the pairs' prior also carries the other string's shrunk effect
(:func:`_with_other_effect`), for a boolean that depends on both strings (*Session 14*).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ._inference import conditional_distribution

__all__ = ["NestedSplit", "nested_split_posterior", "random_effects", "shrink_boolean_split", "shrink_nested_boolean_split",
           "with_splits"]

Array = npt.NDArray[np.float64]


def shrink_boolean_split(table: Array, cov: Array | None, string_axis: int) -> tuple[Array, Array]:
    """Shrink ``P(boolean | string category)`` towards the categories' mean split; their shares are kept.

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
    v_i = _split_variance(np.moveaxis(se, string_axis, 0)[:, 0])
    split, factor, _ = _shrink_toward_mean(c_i, v_i, mass)
    if split is None:  # Stein's gain needs at least three means
        return table, ones
    shrunk = np.stack([mass * split, mass * (1.0 - split)], axis=1)
    return np.moveaxis(shrunk, 0, string_axis), factor


#: A split lies in [0, 1], so its variance is at most 1/4 (Popoviciu's inequality); the delta method's
#: is not bounded, and a category whose share is near 0 (an Other whose mass the marginal decode moved
#: out, 1e-17) got 1e20 -- which, times its tiny weight, outweighed every other term of the moment
#: estimate and pooled every split to the overall share (three variables, f=0.5, one collection in 12).
MAX_SPLIT_VARIANCE = 0.25


def _split_variance(se: Array) -> Array:
    """The splits' variances from their standard errors, the finite ones capped at :data:`MAX_SPLIT_VARIANCE`."""
    v = se**2
    out: Array = np.where(np.isfinite(v), np.minimum(v, MAX_SPLIT_VARIANCE), v)
    return out


def _usable(c_i: Array, v_i: Array, mass: Array) -> npt.NDArray[np.bool_]:
    """The splits the data measure: a category with mass, a finite split and a finite variance."""
    out: npt.NDArray[np.bool_] = (mass > 0) & np.isfinite(c_i) & np.isfinite(v_i)
    return out


def _spread(c_i: Array, v_i: Array, mass: Array, prior: Array) -> tuple[npt.NDArray[np.bool_], float]:
    """The usable splits and the moment estimate of their spread around ``prior`` (before its positive part).

    ``sum_i w_i ((c_i - prior_i)^2 - v_i) / sum_i w_i``, ``w_i`` the categories' shares; negative
    when the splits lie closer to ``prior`` than their own noise says (Efron and Morris 1975).
    """
    usable = _usable(c_i, v_i, mass)
    if not usable.any():
        return usable, 0.0
    w = mass[usable]
    return usable, float(np.sum(w * ((c_i[usable] - prior[usable]) ** 2 - v_i[usable])) / w.sum())


def _shrink_toward(c_i: Array, v_i: Array, mass: Array, prior: Array) -> tuple[Array | None, Array, float]:
    """Posterior means ``prior + tau^2 / (tau^2 + v_i) (c_i - prior)``, ``tau^2`` by the method of moments.

    Returns the shrunk splits (``None`` when fewer than three are usable), the factors and ``tau^2``.
    """
    factor = np.ones(c_i.shape[0])
    usable, raw = _spread(c_i, v_i, mass, prior)
    if usable.sum() < 3:
        return None, factor, 0.0
    tau2 = max(raw, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        factor[usable] = np.where(tau2 + v_i[usable] > 0, tau2 / (tau2 + v_i[usable]), 1.0)
    split = np.where(usable, prior + factor * (np.nan_to_num(c_i) - prior), np.where(np.isfinite(c_i), c_i, prior))
    return np.clip(split, 0.0, 1.0), factor, tau2


def random_effects(c: Array, v: Array, *, steps: int = 60, mean: float | None = None) -> tuple[float, float]:
    """The Paule-Mandel estimates of the mean ``mu`` and spread ``tau^2`` of ``c_i ~ N(mu, tau^2 + v_i)``.

    ``tau^2`` solves ``sum_i w_i (c_i - mu)^2 = n - 1`` with ``w_i = 1 / (tau^2 + v_i)`` and
    ``mu = sum_i w_i c_i / sum_i w_i`` (Paule and Mandel 1982, J. Res. NBS 87(5); DerSimonian and
    Kacker 2007, Contemp. Clin. Trials 28(2)), and is 0 when the left side is already at most
    ``n - 1`` at ``tau^2 = 0``.  The left side falls as ``tau^2`` grows, so the root is found by
    bisection on ``[0, 1]`` (a split's spread is at most 1/4).  Each value is weighted by its own
    precision, not by its category's share: a large category measured precisely no longer sets the
    spread alone, and one measured badly counts little.

    Parameters
    ----------
    c, v : ndarray of shape (n,)
        The values and their variances (positive), ``n >= 2``.
    steps : int, default=60
        Bisection steps.
    mean : float, optional
        Hold ``mu`` at this value (``sum_i w_i (c_i - mu)^2 = n``: no degree of freedom spent on the
        mean), as for effects that are deviations from a mean estimated elsewhere.

    Returns
    -------
    (mu, tau2) : (float, float)
    """
    v = np.maximum(v, 1e-12)
    dof = c.size - (1 if mean is None else 0)

    def excess(tau2: float) -> tuple[float, float]:
        w = 1.0 / (tau2 + v)
        mu = float(np.sum(w * c) / w.sum()) if mean is None else mean
        return float(np.sum(w * (c - mu) ** 2)) - dof, mu

    gap, mu = excess(0.0)
    if gap <= 0:
        return mu, 0.0
    lo, hi = 0.0, 1.0
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        if excess(mid)[0] > 0:
            lo = mid
        else:
            hi = mid
    return excess(hi)[1], hi


def _shrink_toward_mean(c_i: Array, v_i: Array, mass: Array) -> tuple[Array | None, Array, float]:
    """Posterior means ``mu + tau^2 / (tau^2 + v_i) (c_i - mu)``, ``mu`` and ``tau^2`` by :func:`random_effects`.

    Returns the shrunk splits (``None`` when fewer than three are usable; an unusable one gets
    ``mu``), the factors and ``tau^2``.
    """
    factor = np.ones(c_i.shape[0])
    usable = _usable(c_i, v_i, mass)
    if usable.sum() < 3:
        return None, factor, 0.0
    mu, tau2 = random_effects(c_i[usable], v_i[usable])
    factor[usable] = tau2 / (tau2 + np.maximum(v_i[usable], 1e-12))
    split = np.where(usable, mu + factor * (np.nan_to_num(c_i) - mu), mu)
    return np.clip(split, 0.0, 1.0), factor, tau2


@dataclass(frozen=True)
class NestedSplit:
    """The posterior of ``P(TRUE | a, b)`` under the two-level model of :func:`nested_split_posterior`.

    ``split`` and ``std`` have the two string variables' axes in the table's order; ``parent`` is the
    parent's axis in the table.
    """

    split: Array
    std: Array
    parent: int


def _level_one(moved: Array, cov6: Array, position: int) -> tuple[Array, Array, float] | None:
    """One string variable's shrunk splits ``P(TRUE | a)``, their posterior variances, and ``tau^2``.

    A category whose split the data do not measure (no mass, infinite variance) keeps the prior,
    ``N(mu, tau^2)``; the others' posterior variance is ``tau^2 v_a / (tau^2 + v_a)``
    (the normal-normal model, Gelman et al., *Bayesian Data Analysis*, 3rd ed., section 5.4).
    """
    other = 1 - position
    rows = moved.sum(axis=other)
    cond, se = conditional_distribution(rows, cov6.sum(axis=(other, other + 3)).reshape(rows.size, rows.size), 0)
    mass = rows.sum(axis=1)
    v = _split_variance(se[:, 0])
    split, factor, tau2 = _shrink_toward_mean(cond[:, 0], v, mass)
    if split is None:
        return None
    measured = _usable(cond[:, 0], v, mass)
    variance = np.where(measured, factor * np.nan_to_num(v, posinf=0.0), tau2)
    return split, variance, tau2


def _with_other_effect(c: Array, v: Array, mass: Array, prior: Array, prior_var: Array, tau2: float,
                       shape: tuple[int, ...], parent_axis: int) -> tuple[Array, Array]:
    """The pairs' prior plus the other string's shrunk effect on their splits (one backfitting step).

    A two-way model of the splits, ``P(TRUE | a, b) = prior_a + beta_b + e_ab`` (main effects and
    no interaction, as the log-linear model of no three-factor interaction; Bishop, Fienberg and
    Holland 1975, *Discrete Multivariate Analysis*, ch. 3): ``beta_b`` is the precision-weighted mean
    of the pairs' residuals ``c_ab - prior_a`` over the parent's categories ``a`` (weights ``1 /
    (v_ab + prior_var_ab + tau^2)``, so it compares pairs within a parent's category and is not
    confounded with the parent), shrunk towards 0 by zero-mean random effects (:func:`random_effects`
    with the mean held at 0; the normal-normal posterior).  Where the boolean does not depend on the
    other string given the parent, the effects' spread comes out at or near 0 and the prior is
    unchanged.

    Parameters
    ----------
    c, v, mass : ndarray of shape (A * B,)
        The pairs' splits, their variances and shares, in the order of ``shape``.
    prior, prior_var : ndarray of shape (A * B,)
        The parent's splits and their posterior variances, per pair.
    tau2 : float
        The pairs' spread around the prior.
    shape : tuple of two ints
    parent_axis : int
        The parent's axis in ``shape``.

    Returns
    -------
    prior, prior_var : ndarray of shape (A * B,)
        With the effects and their posterior variances added (unchanged when fewer than three of the
        other string's categories are measured).
    """
    usable = _usable(c, v, mass).reshape(shape)
    resid = np.where(usable, np.nan_to_num(c).reshape(shape) - prior.reshape(shape), 0.0)
    noise = np.where(usable, v.reshape(shape), 1.0) + prior_var.reshape(shape) + tau2
    w = np.where(usable, 1.0 / np.maximum(noise, 1e-12), 0.0)
    total = w.sum(axis=parent_axis)
    seen = total > 0
    if seen.sum() < 3:
        return prior, prior_var
    effect = (w * resid).sum(axis=parent_axis)[seen] / total[seen]
    var = 1.0 / total[seen]
    _, tau2_effect = random_effects(effect, var, mean=0.0)
    shrunk = np.zeros(total.size)
    post_var = np.full(total.size, tau2_effect)  # an unmeasured category's effect: the prior N(0, tau^2)
    shrunk[seen] = tau2_effect / (tau2_effect + var) * effect
    post_var[seen] = tau2_effect * var / (tau2_effect + var)
    new_prior = prior.reshape(shape) + np.expand_dims(shrunk, parent_axis)
    new_var = prior_var.reshape(shape) + np.expand_dims(post_var, parent_axis)
    return np.clip(new_prior, 0.0, 1.0).reshape(-1), new_var.reshape(-1)


def nested_split_posterior(table: Array, cov: Array | None, boolean_axis: int, *,
                           pairs: str = "shrink", effects: bool = True) -> NestedSplit | None:
    """Two string variables and a boolean: the posterior of ``P(TRUE | a, b)`` in a two-level model.

    The two-level form of :func:`shrink_boolean_split` (a hierarchical empirical-Bayes model,
    Efron and Morris 1975, section 7; Gelman et al., *Bayesian Data Analysis*, 3rd ed., ch. 5):
    each string variable's own splits ``P(TRUE | a)`` are shrunk towards their mean as for
    one string; every pair's split ``P(TRUE | a, b)`` is its **parent** category's shrunk
    split (``pairs="pool"``), or is shrunk towards it by ``tau_2^2 / (tau_2^2 + v_ab)``, with
    ``tau_2^2`` the moment estimate of the pairs' spread around them (``pairs="shrink"``).  The
    parent is the string variable around whose splits the pairs' splits spread less (the smaller
    moment estimate of ``tau_2^2``, before its positive part: the level-2 model that fits the
    pairs better).  Pooled, a pair's split has its parent's posterior variance ``s_a^2``; shrunk,
    ``f v_ab + (1 - f)^2 s_a^2`` (``f`` its factor), and a pair the data do not measure keeps its
    parent's split with variance ``tau_2^2 + s_a^2``.

    The decoder shrinks.  The pairs' spread is overestimated where the truth has none: a pair with
    one cell at 0 in the constrained maximum has a split of exactly 0 or 1 and a delta-method
    variance that ignores the boundary (Self and Liang 1987, JASA 82(398)), which made ``tau_2^2``
    0.01-0.03 where the truth's is 0, so pooling was closer there (design collections, 20 x 10
    strings x boolean whose boolean depends on the first string only, 200,000 clients, seeds
    100-107: mean TV 0.170 pooled against 0.182 shrunk at f=0.5, 0.431 against 0.429 at f=0.75).
    But where the boolean depends on both strings (``P(TRUE)`` 0.2 + 0.1 (a mod 7) + 0.2 ((b mod 3)
    - 1), seeds 120-121) pooling cost far more: 0.233 / 0.256 against 0.191 / 0.216 at f=0.5 (the
    full recipe 0.209 / 0.221), 0.408 / 0.448 against 0.387 / 0.435 at f=0.75.

    With ``effects`` (the default since session 14) the pairs' prior is their parent's split plus the
    other string's shrunk effect (:func:`_with_other_effect`: main effects of both strings, no
    interaction), so a boolean that depends on both strings is modelled, and one that depends on the
    parent only leaves the prior as it was.  Design collections (seeds 120-127, 20 x 10 strings x
    boolean whose ``P(TRUE)`` is the one above; seeds 100-107, the boolean depending on the first
    string only), mean TV without -> with: 0.208 -> 0.201 at f=0.5 (6 of 8 closer), 0.414 -> 0.412
    at f=0.75; 0.180 -> 0.180 and 0.428 -> 0.426 where the boolean depends on the first string only.

    Parameters
    ----------
    table : ndarray of shape (A, B, 2) with the boolean's axis anywhere
    cov : ndarray of shape (2 A B, 2 A B) or None
        Its covariance.
    boolean_axis : int
    pairs : {"shrink", "pool"}, default="shrink"
    effects : bool, default=True
        Add the other string's effect to the pairs' prior.

    Returns
    -------
    NestedSplit or None
        ``None`` without a covariance, or when either level has fewer than three usable splits.
    """
    if pairs not in ("pool", "shrink"):
        raise ValueError(f"pairs must be 'pool' or 'shrink', not {pairs!r}")
    if cov is None or table.ndim != 3 or table.shape[boolean_axis] != 2 or not table.sum() > 0:
        return None
    axes = [a for a in range(3) if a != boolean_axis]
    order = axes + [boolean_axis]
    moved = np.transpose(table, order)
    index = np.transpose(np.arange(table.size).reshape(table.shape), order).reshape(-1)
    cov_m = cov[np.ix_(index, index)]
    # cov_m's axes as (A, B, 2, A, B, 2): a string's (category, boolean) sums' covariance sums out the other string.
    cov6 = cov_m.reshape(moved.shape * 2)
    flat = moved.reshape(-1, 2)
    cond, se = conditional_distribution(flat, cov_m, 0)
    mass = flat.sum(axis=1)
    v = _split_variance(se[:, 0])
    best: tuple[float, int, Array, Array] | None = None
    for position in (0, 1):
        level_one = _level_one(moved, cov6, position)
        if level_one is None:
            continue
        parent_split, parent_var, _ = level_one
        shape = moved.shape[:2] if position == 0 else moved.shape[1::-1]
        prior = np.broadcast_to(parent_split[:, None], shape)
        prior_var = np.broadcast_to(parent_var[:, None], shape)
        if position == 1:
            prior, prior_var = prior.T, prior_var.T
        prior, prior_var = prior.reshape(-1), prior_var.reshape(-1)
        _, raw = _spread(cond[:, 0], v, mass, prior)
        if effects:
            prior, prior_var = _with_other_effect(cond[:, 0], v, mass, prior, prior_var, max(raw, 0.0),
                                                  moved.shape[:2], position)
        split, factor, tau2 = _shrink_toward(cond[:, 0], v, mass, prior)
        if split is None:
            continue
        measured = _usable(cond[:, 0], v, mass)
        variance = np.where(measured, factor * np.nan_to_num(v, posinf=0.0) + (1.0 - factor) ** 2 * prior_var,
                            tau2 + prior_var)
        if pairs == "pool":
            split, variance = prior, prior_var
        if best is None or raw < best[0]:
            best = (raw, axes[position], split.reshape(moved.shape[:2]), np.sqrt(variance).reshape(moved.shape[:2]))
    if best is None:
        return None
    _, parent, split, std = best
    return NestedSplit(split=split, std=std, parent=parent)


def shrink_nested_boolean_split(table: Array, cov: Array | None, boolean_axis: int, *,
                                pairs: str = "shrink") -> tuple[Array, int | None]:
    """Two string variables and a boolean: every pair's share kept, its split the posterior mean.

    See :func:`nested_split_posterior` for the model and ``pairs``.

    Returns
    -------
    table : ndarray
        The shrunk table, same shape (unchanged without a posterior).
    parent : int or None
        The parent's axis in ``table`` (None: unchanged).
    """
    posterior = nested_split_posterior(table, cov, boolean_axis, pairs=pairs)
    return with_splits(table, posterior, boolean_axis), None if posterior is None else posterior.parent


def with_splits(table: Array, posterior: NestedSplit | None, boolean_axis: int) -> Array:
    """``table`` with every pair's share kept and its split the posterior's mean (unchanged for None)."""
    if posterior is None:
        return table
    pairs = np.expand_dims(table.sum(axis=boolean_axis), boolean_axis)
    out: Array = pairs * np.stack([posterior.split, 1.0 - posterior.split], axis=boolean_axis)
    return out
