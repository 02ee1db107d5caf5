"""Empirical-Bayes estimate of a table of two string variables: the conditionals share one prior (private).

In a string x string table most cells are small against their standard errors, and the
constrained maximum of the likelihood spreads mass over cells that are empty in the truth
(string x string, 200,000 reports, f=0.5: about 0.08 of the table on cells whose true share is
below 1e-4; ``docs/notes/association-measurements.md``).  Knowing which cells are empty would cut the
TV by a fifth to a quarter there; which they are, the data do not say cell by cell, but the rows'
conditionals ``P(b | a)`` are alike -- a few large values and many near 0 -- so their values are
estimated together, each borrowing from the others (Robbins 1956; Efron 2019, *Bayes, Oracle Bayes
and Empirical Bayes*, Statist. Sci. 34(2)).

Model.  The signed maximum ``x`` of the likelihood (cells may go below 0;
:mod:`~rappor.analysis.association._signed`) is about ``N(pi, V)``, ``V`` its inverse information
on the simplex.  ``pi[a, b] = r_a c[a, b]`` with ``r_a`` the row shares of the constrained maximum
(held fixed) and every conditional value ``c[a, b]`` drawn from one prior ``g`` on the grid ``{0}``
plus 80 geometric points from 1e-3 to 1.  ``g`` is the Kiefer-Wolfowitz NPMLE (Jiang and Zhang 2009,
Ann. Statist. 37(4)) given each value's own normal ``x[a, b] / r_a ~ N(c[a, b], V[ab, ab] / r_a^2)``;
the estimate is the posterior mean of ``pi`` given ``x`` with the full covariance, by Gibbs
sampling on the grid (each value given the others is ``g`` times a normal; Geman and Geman 1984),
four chains of 300 sweeps from ``max(x, 0)``, the first 60 dropped, each draw normalized.  ``V``
is singular along the sum of the cells; the sampler's precision is ``V^+`` plus the cells' mean
precision along it (the sum is not estimated here: every draw is normalized).  The rows are the
variable whose prior explains ``x`` better (the larger composite marginal log-likelihood, each cell
under its own normal and the fitted ``g``: the type-II maximum likelihood choice between the two
models).

Measured on design collections (google/rappor's client rules, 200,000 clients, seeds 100-105;
``benchmarks/association_oracle.py``'s ``eb_cond``, the rows always the first variable): TV to the
clients' joint 0.156 instead of 0.164 (f=0.5),
0.151 instead of 0.183 (f=0.5, strings outside the candidates), 0.406 instead of 0.421 (f=0.75),
0.372 instead of 0.401 (f=0.75, outside strings); three variables (the string pair's shares, the
boolean's splits as before) 0.180 instead of 0.186 and 0.428 instead of 0.450.  As the default, on
evaluation seeds 9000-9001: 6-25% closer than the maximum-likelihood pair, 0.77-0.85 of google/rappor's
full recipe's TV where every string is a candidate (``docs/benchmarks.md``).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["shrink_conditionals", "string_pair", "with_pair_shares"]

Array = npt.NDArray[np.float64]

#: The prior's grid of a conditional value: 0 and 80 geometric points from 1e-3 to 1.
GRID = np.concatenate([[0.0], np.geomspace(1e-3, 1.0, 80)])
#: Gibbs chains, sweeps a chain and the sweeps dropped at its start (one chain of 150 sweeps
#: moved the TV by up to 0.02 between chains on one collection; four of 300 by about 0.005).
CHAINS, SWEEPS, BURN = 4, 300, 60
#: EM steps of the NPMLE.
NPMLE_STEPS = 500


def _npmle(z: Array, s: Array) -> tuple[Array, float]:
    """NPMLE of ``g`` on :data:`GRID` given ``z_i ~ N(c_i, s_i^2)``, ``c_i ~ g``; with its log-likelihood."""
    lik = np.exp(-0.5 * np.square((z[:, None] - GRID[None, :]) / s[:, None])) / s[:, None]
    w = np.full(GRID.size, 1.0 / GRID.size)
    for _ in range(NPMLE_STEPS):
        w = w * (lik / np.maximum(lik @ w, 1e-300)[:, None]).mean(axis=0)
    return w, float(np.log(np.maximum(lik @ w, 1e-300)).sum())


def _gibbs_mean(x: Array, precision: Array, scale: Array, w: Array, rng: np.random.Generator) -> Array:
    """Posterior mean of ``scale * c`` (each draw normalized) given ``x ~ N(scale * c, precision^-1)``, ``c_i ~ w``."""
    xc = x / scale
    q = precision * np.outer(scale, scale)
    diag = np.diag(q).copy()
    logw = np.log(np.maximum(w, 1e-300))
    c = np.tile(np.clip(xc, 0.0, None), (CHAINS, 1))
    resid = (c - xc) @ q  # q (c - xc), one row a chain
    total = np.zeros_like(c)
    for sweep in range(SWEEPS):
        u = rng.random((x.size, CHAINS))
        for i in range(x.size):
            mean = c[:, i] - resid[:, i] / diag[i]
            lp = logw[None, :] - 0.5 * diag[i] * np.square(GRID[None, :] - mean[:, None])
            cum = np.cumsum(np.exp(lp - lp.max(axis=1, keepdims=True)), axis=1)
            pick = np.minimum((cum < u[i][:, None] * cum[:, -1:]).sum(axis=1), GRID.size - 1)
            delta = GRID[pick] - c[:, i]
            if delta.any():
                resid += delta[:, None] * q[i][None, :]
                c[:, i] = GRID[pick]
        if sweep >= BURN:
            draw = c * scale
            total += draw / np.maximum(draw.sum(axis=1, keepdims=True), 1e-300)
    out: Array = total.sum(axis=0)
    out /= out.sum()
    return out


def shrink_conditionals(table: Array, signed: Array, covariance: Array,
                        rng: np.random.Generator) -> tuple[Array, int]:
    """The posterior mean of a two-variable table whose rows' conditionals share one fitted prior.

    Parameters
    ----------
    table : ndarray of shape (A, B)
        The constrained maximum-likelihood table (its row shares scale the conditionals).
    signed : ndarray of shape (A, B) or (A * B,)
        The signed maximum.
    covariance : ndarray of shape (A * B, A * B)
        Its inverse information on the simplex.
    rng : numpy.random.Generator
        Draws the Gibbs sampler's uniforms.

    Returns
    -------
    estimate : ndarray of shape (A, B)
        Sums to 1.
    axis : int
        The variable whose conditionals were modelled as exchangeable (0: ``P(b | a)``).
    """
    shape = table.shape
    x = np.asarray(signed, dtype=np.float64).reshape(-1)
    se = np.sqrt(np.maximum(np.diag(covariance), 1e-300))
    best: tuple[float, int, Array, Array] | None = None
    for axis in (0, 1):
        shares = np.maximum(table.sum(axis=1 - axis), 1e-6)
        scale = np.repeat(shares, shape[1]) if axis == 0 else np.tile(shares, shape[0])
        w, loglik = _npmle(x / scale, se / scale)
        loglik -= float(np.log(scale).sum())  # the density of x, not of x / scale
        if best is None or loglik > best[0]:
            best = (loglik, axis, scale, w)
    assert best is not None
    _, axis, scale, w = best
    inverse: Array = np.asarray(np.linalg.pinv(covariance, hermitian=True), dtype=np.float64)
    precision: Array = inverse + float(np.mean(np.diag(inverse))) / x.size
    return _gibbs_mean(x, precision, scale, w, rng).reshape(shape), axis


def string_pair(table: Array, signed: Array, covariance: Array, boolean_axis: int | None,
                ) -> tuple[Array, Array, Array]:
    """The two string variables' table, signed maximum and covariance: summed over the boolean's axis if any."""
    shape = table.shape
    if boolean_axis is None:
        return table, np.asarray(signed).reshape(shape), covariance
    cov: Array = covariance.reshape(shape + shape).sum(axis=(boolean_axis, len(shape) + boolean_axis))
    pair: Array = table.sum(axis=boolean_axis)
    centre: Array = np.asarray(signed, dtype=np.float64).reshape(shape).sum(axis=boolean_axis)
    return pair, centre, cov.reshape(pair.size, pair.size)


def with_pair_shares(table: Array, boolean_axis: int, pair: Array) -> Array:
    """``table`` (three variables) with the string pair's shares set to ``pair``, each pair's split kept.

    A pair at 0 in ``table`` gets the boolean's overall split.
    """
    old = table.sum(axis=boolean_axis, keepdims=True)
    overall = table.sum(axis=tuple(a for a in range(table.ndim) if a != boolean_axis), keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        split = np.where(old > 0, table / old, overall / overall.sum())
    out: Array = split * np.expand_dims(pair, boolean_axis)
    out /= out.sum()
    return out
