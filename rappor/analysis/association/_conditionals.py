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
Ann. Statist. 37(4)) given each value's own normal ``x[a, b] / r_a ~ N(c[a, b], V[ab, ab] / r_a^2)``,
or the smoothest of three kernel-smoothed versions of it (EMS; Silverman et al. 1990) whose
log-likelihood is within 1.92 of the NPMLE's (:func:`_smoothest_prior`);
the posterior of ``pi`` given ``x`` with the full covariance comes from Gibbs sampling on the
grid (each value given the others is ``g`` times a normal; Geman and Geman 1984),
four chains of 160 sweeps from ``max(x, 0)``, the first 32 dropped, each draw normalized, each chain
tempered (a ladder of 12 powers of the likelihood whose states swap; Geyer 1991), without which the
chains can stay near their start.  The
estimate is the Bayes rule for the total variation to the truth, not the posterior mean (the rule for
squared error): every cell at one common posterior quantile, except an Other that pools strings
outside the candidates, whose cells take their posterior mean (:func:`total_variation_estimate`).  ``V``
is singular along the sum of the cells; the sampler's precision is ``V^+`` plus the cells' mean
precision along it (the sum is not estimated here: every draw is normalized).  The rows are the
variable whose prior explains ``x`` better (the larger composite marginal log-likelihood, each cell
under its own normal and the fitted ``g``: the type-II maximum likelihood choice between the two
models).

Measured on design collections (google/rappor's client rules, 200,000 clients, seeds 100-105;
``benchmarks/association_oracle.py``'s ``eb_cond``, the rows always the first variable), with the
posterior mean: TV to the clients' joint 0.156 instead of 0.164 (f=0.5), 0.151 instead of 0.183 (f=0.5,
strings outside the candidates), 0.406 instead of 0.421 (f=0.75), 0.372 instead of 0.401 (f=0.75,
outside strings).  With the total-variation rule, on evaluation seeds 9002-9021 against google/rappor's
full recipe: 0.80 / 0.82 of its TV at f=0.5 / 0.75 where every string is a candidate (0.88 / 0.85 with
the posterior mean on 9002-9011), 0.59 / 0.74 with outside strings (9002-9005;
``docs/notes/association-measurements.md``, *Round of 2026-11-28*).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ._shrinkage import NestedSplit

__all__ = ["conditional_draws", "shrink_conditionals", "string_pair", "string_pair_estimate",
           "three_variable_estimate",
           "total_variation_estimate", "with_pair_shares"]

Array = npt.NDArray[np.float64]

#: The prior's grid of a conditional value: 0 and 80 geometric points from 1e-3 to 1.
GRID = np.concatenate([[0.0], np.geomspace(1e-3, 1.0, 80)])
#: Gibbs chains, sweeps a chain and the sweeps dropped at its start.  Tempered (below), 160 sweeps gave
#: the same TV as 300 on design collections (string x string, 200,000 clients, seeds 100-105: 0.392 /
#: 0.394 at f=0.75, 0.1387 / 0.1387 at f=0.5) at half the cost.  More untempered chains were measured,
#: not adopted (``docs/notes/association-measurements.md``, *Session 15*).
CHAINS, SWEEPS, BURN = 4, 160, 32
#: Parallel tempering: each chain is a ladder of LEVELS chains whose likelihood is raised to the powers
#: ``geomspace(1, BETA_MIN, LEVELS)`` (the prior is not tempered); the draws are those of the chains at
#: power 1.  Without it the chains can stay near their start: at f=0.75 on six design collections, plain
#: chains from ``max(x, 0)`` and from 0 ended 0.05 and 0.15 of TV apart on two (the same way over
#: sampler seeds); tempered chains from either start ended within 0.004 on five and 0.027 on one
#: (*Session 16*).  Adjacent powers differ by a factor 0.76, where 34-63% of the proposed swaps were
#: accepted.  LEVELS = 1 is the plain sampler.
LEVELS, BETA_MIN = 12, 0.05
#: Values whose moves are gathered before the residual is brought up to date by one matrix product.
BLOCK = 32
#: Eigenvalues of the covariance below this fraction of its largest are taken as 0 when it is inverted.
#: It is singular along the sum of the cells by construction, but rounding leaves that eigenvalue at
#: 1e-18-1e-15 of the largest, and numpy's default cutoff (1e-15) kept it once (6.3e-18 against a cutoff
#: of 6.2e-18, three variables at f=0.75): its inverse, 1.6e17, froze the Gibbs sampler at its start.
#: The table's genuine directions are far above 1e-9 of the largest (200,000 reports: 1e-5-1e-3).
PINV_RCOND = 1e-9
#: EM steps of the NPMLE.
NPMLE_STEPS = 500
#: Kernel bandwidths (grid steps) tried, smoothest last, for the prior (:func:`_smoothest_prior`), and the
#: log-likelihood a smoother prior may lose against the NPMLE: half the chi-square(1) 95% quantile.
SMOOTHING = (1.0, 2.0, 4.0)
LR_SLACK = 1.92


def _npmle(z: Array, s: Array, bandwidth: float = 0.0) -> tuple[Array, float]:
    """NPMLE of ``g`` on :data:`GRID` given ``z_i ~ N(c_i, s_i^2)``, ``c_i ~ g``; with its log-likelihood.

    With ``bandwidth > 0`` every EM step is followed by a smoothing of the weights of the positive
    grid points with a Gaussian kernel of that many grid steps (the EMS algorithm: Silverman, Jones,
    Wilson and Nychka 1990, JRSS B 52(2)); the atom at 0 is left as it is.
    """
    lik = np.exp(-0.5 * np.square((z[:, None] - GRID[None, :]) / s[:, None])) / s[:, None]
    kernel = None
    if bandwidth > 0:
        steps = np.arange(GRID.size - 1)
        kernel = np.exp(-0.5 * np.square((steps[:, None] - steps[None, :]) / bandwidth))
        kernel /= kernel.sum(axis=0, keepdims=True)  # keeps the mass
    w = np.full(GRID.size, 1.0 / GRID.size)
    for _ in range(NPMLE_STEPS):
        w = w * (lik / np.maximum(lik @ w, 1e-300)[:, None]).mean(axis=0)
        if kernel is not None:
            w[1:] = kernel @ w[1:]
    return w, float(np.log(np.maximum(lik @ w, 1e-300)).sum())


def _smoothest_prior(z: Array, s: Array, npmle: tuple[Array, float]) -> Array:
    """The smoothest prior of :data:`SMOOTHING` whose log-likelihood is within :data:`LR_SLACK` of the NPMLE's.

    The NPMLE of a deconvolution is discrete (a few atoms) whatever the true ``g``, and where the
    values' standard errors are large the likelihood hardly prefers it to smoother priors; the
    posterior then pulls the values to its atoms.  Among the priors the data do not reject against
    the NPMLE (the likelihood-ratio region at the 5% level, ``chi2_1(0.95) / 2 = 1.92``, of the same
    composite likelihood of the values' own normals that the NPMLE maximizes), the smoothest is
    taken; the bandwidths are tried in increasing order and the first rejected one ends the search.
    Where the data are informative no smoothing passes, and the NPMLE stays (string x string,
    200,000 clients: f=0.5 rejects every smoothing, f=0.75 mostly keeps one; measured in
    ``docs/notes/association-measurements.md``, *Session 17*).
    """
    best, top = npmle
    for bandwidth in SMOOTHING:
        w, loglik = _npmle(z, s, bandwidth)
        if loglik < top - LR_SLACK:
            break
        best = w
    return best


def _gibbs_draws(x: Array, precision: Array, scale: Array, w: Array, rng: np.random.Generator) -> Array:
    """Posterior draws of ``scale * c``, each normalized, given ``x ~ N(scale * c, precision^-1)``, ``c_i ~ w``.

    Single-site Gibbs sampling on :data:`GRID` (Geman and Geman 1984) with parallel tempering (Geyer
    1991; Earl and Deem 2005, Phys. Chem. Chem. Phys. 7(23)): with ``Q = precision`` in units of ``c``
    and ``r = Q (c - x / scale)``, value ``i`` given the others is ``w`` times the normal of mean ``c_i
    - r_i / Q_ii`` and precision ``beta Q_ii``, drawn by the inverse of its distribution function;
    ``beta`` is the chain's power of the likelihood.  Each of the :data:`CHAINS` chains is a ladder of
    :data:`LEVELS` powers; after every sweep, adjacent powers of a ladder (even pairs, then odd pairs on
    the next sweep) swap their states with probability ``min(1, exp((beta_a - beta_b) (E_a - E_b)))``,
    ``E = (c - x / scale)' Q (c - x / scale) / 2``, which keeps every level's law invariant; the draws
    are the states at power 1.  All the ladders' chains advance together, one array row each.  The
    residual ``r`` is brought up to date once per block of :data:`BLOCK` values by one matrix product;
    within a block, a value's own residual adds the block's earlier moves (exact, the same ``r_i`` as an
    update after every move).

    Returns an array of shape ``(CHAINS * (SWEEPS - BURN), x.size)``, every row summing to 1.
    """
    xc = x / scale
    q = precision * np.outer(scale, scale)
    diag = np.diag(q).copy()
    log_w = np.log(np.maximum(w, 1e-300))[None, :]
    betas = np.geomspace(1.0, BETA_MIN, LEVELS)
    rows = CHAINS * LEVELS
    # at[r, l]: the row holding ladder r's level l; beta[row]: its power
    at = np.arange(rows).reshape(CHAINS, LEVELS)
    beta = np.tile(betas, CHAINS)
    c = np.tile(np.clip(xc, 0.0, None), (rows, 1))
    resid = (c - xc) @ q  # q (c - xc), one row a chain
    draws = np.empty((SWEEPS - BURN, CHAINS, x.size))
    last = GRID.size - 1
    for sweep in range(SWEEPS):
        u = rng.random((x.size, rows, 1))
        power = beta[:, None]
        for lo in range(0, x.size, BLOCK):
            hi = min(x.size, lo + BLOCK)
            block = q[lo:hi]
            moves = np.zeros((rows, hi - lo))
            for j in range(hi - lo):
                i = lo + j
                # Q_ii m = Q_ii c_i - r_i, with r_i including the block's earlier moves; the log density
                # up to a constant: log w + beta (Q_ii m g - Q_ii g^2 / 2)
                pull = diag[i] * c[:, i] - resid[:, i] - moves[:, :j] @ block[:j, i]
                lp = log_w + power * (pull[:, None] - 0.5 * diag[i] * GRID) * GRID
                lp -= lp.max(axis=1, keepdims=True)
                cum = np.cumsum(np.exp(lp), axis=1)
                pick = np.minimum((cum < u[i] * cum[:, -1:]).sum(axis=1), last)
                new = GRID[pick]
                moves[:, j] = new - c[:, i]
                c[:, i] = new
            resid += moves @ block
        if LEVELS > 1:
            energy = 0.5 * np.einsum("ri,ri->r", c - xc, resid)
            lower = np.arange(sweep % 2, LEVELS - 1, 2)
            a, b = at[:, lower], at[:, lower + 1]
            accept = np.log(rng.random(a.shape)) < (betas[lower] - betas[lower + 1]) * (energy[a] - energy[b])
            at[:, lower], at[:, lower + 1] = np.where(accept, b, a), np.where(accept, a, b)
            beta[at] = betas[None, :]
        if sweep >= BURN:
            draw = c[at[:, 0]] * scale
            draws[sweep - BURN] = draw / np.maximum(draw.sum(axis=1, keepdims=True), 1e-300)
    out: Array = draws.reshape(-1, x.size)
    return out


def total_variation_estimate(draws: Array, *, at_mean: npt.NDArray[np.bool_] | None = None,
                             steps: int = 60) -> Array:
    """The table minimizing the posterior expected total variation: the cells at one common quantile.

    The Bayes rule for absolute error is the posterior median (Berger 1985, *Statistical Decision
    Theory and Bayesian Analysis*, 2nd ed., section 4.4.2); under the constraint ``sum(t) = 1`` the
    Karush-Kuhn-Tucker conditions of ``min E sum_i |pi_i - t_i|`` give ``2 F_i(t_i) - 1 + lambda = 0``
    for every positive ``t_i`` (``F_i`` the cell's posterior distribution function) and
    ``F_i(0) >= tau`` for every ``t_i = 0``: every cell at its posterior ``tau``-quantile, ``tau``
    the level at which those quantiles sum to 1.  The quantiles' sum grows continuously from the
    cells' smallest draws' sum to their largest's, and every draw sums to 1, so such a ``tau``
    exists; it is found by bisection (``steps`` halvings), the quantiles linear between order
    statistics.  For small cells, whose posteriors are skewed to the right, ``tau`` lies above 1/2 and
    the quantile below the posterior mean: the rule moves mass from the many small cells to the few
    large ones, where the mean spreads it.

    Cells in ``at_mean`` keep their posterior mean and the others share the rest of the mass at one
    common quantile (the same conditions, restricted to them).  The decoder passes Other's row or
    column when its variable's marginal decode shows strings outside the candidates
    (:func:`~rappor.analysis.association._other.other_pools_outside_strings`): Other then pools
    many strings, its conditionals are not draws from the candidates' prior, and its quantiles under
    that prior are not to be trusted where its mean is (design collections, seeds 100-103: with
    every fifth string outside the candidates, Other's cells at their quantile put the table further
    from the truth than the posterior mean by 0.005-0.045 of TV; at their mean 0.009 closer at f=0.5,
    as close at f=0.75).  Without such strings Other holds the undetected candidates, small and
    alike the others, and takes the common quantile with them.

    Parameters
    ----------
    draws : ndarray of shape (S, n)
        Posterior draws, each row summing to 1.
    at_mean : ndarray of bool of shape (n,), optional
        Cells estimated by their posterior mean.
    steps : int, default=60
        Bisection steps for ``tau``.

    Returns
    -------
    ndarray of shape (n,)
        Sums to 1 (the bisection's last few ulps removed by a normalization).
    """
    out: Array = draws.mean(axis=0)
    free = np.ones(draws.shape[1], dtype=bool) if at_mean is None else ~np.asarray(at_mean, dtype=bool)
    target = 1.0 - float(out[~free].sum())
    if free.any() and target > 0:
        ordered = np.sort(draws[:, free], axis=0)
        top = ordered.shape[0] - 1

        def quantiles(level: float) -> Array:  # linear between order statistics (numpy's default rule)
            at = level * top
            below = min(int(at), top - 1) if top > 0 else 0
            row: Array = ordered[below] + (at - below) * (ordered[min(below + 1, top)] - ordered[below])
            return row

        lo, hi = 0.0, 1.0
        for _ in range(steps):
            tau = 0.5 * (lo + hi)
            if float(quantiles(tau).sum()) < target:
                lo = tau
            else:
                hi = tau
        out[free] = quantiles(0.5 * (lo + hi))
    out /= out.sum()
    return out


def conditional_draws(table: Array, signed: Array, covariance: Array, rng: np.random.Generator, *,
                      other: tuple[bool, bool] = (False, False)) -> tuple[Array, npt.NDArray[np.bool_], int]:
    """Posterior draws of a two-variable table whose rows' conditionals share one prior.

    The model and sampler of the module's docstring; :func:`shrink_conditionals` gives their
    Bayes estimate under the total variation.

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
    other : (bool, bool), default=(False, False)
        Whether each variable's last category is an Other that pools strings outside the
        candidates; its cells are then estimated by their posterior mean
        (:func:`total_variation_estimate`).

    Returns
    -------
    draws : ndarray of shape (S, A * B)
        Each row sums to 1.
    at_mean : ndarray of bool of shape (A * B,)
        The cells to be estimated by their posterior mean (Other's, per ``other``).
    axis : int
        The variable whose conditionals were modelled as exchangeable (0: ``P(b | a)``).
    """
    shape = table.shape
    x = np.asarray(signed, dtype=np.float64).reshape(-1)
    se = np.sqrt(np.maximum(np.diag(covariance), 1e-300))
    best: tuple[float, int, Array, tuple[Array, float]] | None = None
    for axis in (0, 1):
        shares = np.maximum(table.sum(axis=1 - axis), 1e-6)
        scale = np.repeat(shares, shape[1]) if axis == 0 else np.tile(shares, shape[0])
        npmle = _npmle(x / scale, se / scale)
        loglik = npmle[1] - float(np.log(scale).sum())  # the density of x, not of x / scale
        if best is None or loglik > best[0]:
            best = (loglik, axis, scale, npmle)
    assert best is not None
    _, axis, scale, npmle = best
    w = _smoothest_prior(x / scale, se / scale, npmle)
    inverse: Array = np.asarray(np.linalg.pinv(covariance, rcond=PINV_RCOND, hermitian=True), dtype=np.float64)
    precision: Array = inverse + float(np.mean(np.diag(inverse))) / x.size
    at_mean = np.zeros(shape, dtype=bool)
    at_mean[-1, :] |= other[0]
    at_mean[:, -1] |= other[1]
    return _gibbs_draws(x, precision, scale, w, rng), at_mean.reshape(-1), axis


def shrink_conditionals(table: Array, signed: Array, covariance: Array, rng: np.random.Generator, *,
                        other: tuple[bool, bool] = (False, False)) -> tuple[Array, int]:
    """The Bayes estimate (total variation loss) of a two-variable table whose rows' conditionals share one prior.

    The arguments are :func:`conditional_draws`'s.

    Returns
    -------
    estimate : ndarray of shape (A, B)
        Sums to 1: the cells at one common posterior quantile, those of ``other`` at their mean.
    axis : int
        The variable whose conditionals were modelled as exchangeable (0: ``P(b | a)``).
    """
    draws, at_mean, axis = conditional_draws(table, signed, covariance, rng, other=other)
    return total_variation_estimate(draws, at_mean=at_mean).reshape(table.shape), axis


def three_variable_estimate(draws: Array, at_mean: npt.NDArray[np.bool_], splits: NestedSplit, boolean_axis: int,
                            rng: np.random.Generator) -> Array:
    """Two string variables and a boolean: the Bayes estimate (total variation loss) of their table.

    Each draw of the string pair (:func:`conditional_draws`) is split between TRUE and FALSE by a
    draw of every pair's split from its posterior (:func:`~rappor.analysis.association._shrinkage.
    nested_split_posterior`: normal, clipped to [0, 1]; independent of the pair's draw), and the
    table is the three-way cells' common posterior quantile (:func:`total_variation_estimate`),
    not the pair's estimate times the splits' means: the rule for total variation acts on the
    cells that total variation sums over.  Cells of an Other in ``at_mean`` keep their mean.

    Parameters
    ----------
    draws : ndarray of shape (S, A * B)
        The string pair's draws, in the order of the table's string axes.
    at_mean : ndarray of bool of shape (A * B,)
    splits : NestedSplit
    boolean_axis : int
        The boolean's axis in the returned table.
    rng : numpy.random.Generator
        Draws the splits.

    Returns
    -------
    ndarray of shape (A, B, 2) with the boolean's axis at ``boolean_axis``
        Sums to 1.
    """
    shape = splits.split.shape
    pairs = draws.reshape((draws.shape[0],) + shape)
    true = np.clip(splits.split + splits.std * rng.standard_normal(pairs.shape), 0.0, 1.0)
    cells = np.stack([pairs * true, pairs * (1.0 - true)], axis=-1).reshape(draws.shape[0], -1)
    table = total_variation_estimate(cells, at_mean=np.repeat(at_mean, 2)).reshape(shape + (2,))
    return np.moveaxis(table, -1, boolean_axis)


def string_pair_estimate(table: Array, ml: Array, signed: Array, covariance: Array, boolean_axis: int | None, *,
                         other: tuple[bool, bool], splits: NestedSplit | None, rng: np.random.Generator) -> Array:
    """The decoder's estimate of two string variables' table, or of theirs and a boolean's.

    Two strings: :func:`shrink_conditionals`.  With a boolean and its splits' posterior:
    :func:`three_variable_estimate`; without that posterior, the pair's estimate with ``table``'s
    splits (:func:`with_pair_shares`).

    Parameters
    ----------
    table : ndarray
        The table so far (its splits are kept when ``splits`` is None).
    ml : ndarray
        The constrained maximum-likelihood table, same shape.
    signed, covariance : ndarray
        The signed maximum and its inverse information (all the table's cells).
    boolean_axis : int or None
    other : (bool, bool)
        Whether each string's Other pools strings outside the candidates.
    splits : NestedSplit or None
    rng : numpy.random.Generator

    Returns
    -------
    ndarray
        Same shape as ``table``; sums to 1.
    """
    pair, centre, cov = string_pair(ml, signed, covariance, boolean_axis)
    draws, at_mean, _ = conditional_draws(pair, centre, cov, rng, other=other)
    if boolean_axis is not None and splits is not None:
        return three_variable_estimate(draws, at_mean, splits, boolean_axis, rng)
    estimate = total_variation_estimate(draws, at_mean=at_mean).reshape(pair.shape)
    return estimate if boolean_axis is None else with_pair_shares(table, boolean_axis, estimate)


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
