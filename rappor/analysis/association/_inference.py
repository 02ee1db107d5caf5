"""Standard errors, derived distributions and the independence test (private).

Covariance of the joint table
    The observed information of ``l(pi) = sum_i w_i log(L_i . pi)`` is
    ``I = sum_i w_i L_i L_i^T / d_i^2`` (google/rappor ``association.R`` ``ComputeVar``'s
    ``inform``).  ``ComputeVar`` inverts it as is, which ignores that the cells sum to 1
    and overstates every variance (with noiseless reports it gives ``pi / N`` instead of
    the multinomial ``pi (1 - pi) / N``).  Here the inverse is taken on the simplex's
    tangent space: ``V = Q (Q^T I Q)^+ Q^T`` with ``Q`` an orthonormal basis of
    ``{v : sum v = 0}`` (Aitchison and Silvey 1958, "Maximum-likelihood estimation of
    parameters subject to restraints", Ann. Math. Statist. 29(3)).  Directions the data
    cannot resolve (e.g. two categories with the same bits in every cohort) have
    infinite variance; cells that load on them get an infinite standard error.
Intervals
    ``estimate ± z * std_error`` with the upper end raised to the projected law's upper
    quantile where the law has an atom at 0 (:func:`boundary_interval`): the standard
    deviation of a law truncated at 0 understates its upper tail.
Marginal and conditional distributions
    Linear (marginals) or ratio (conditionals ``pi[x, y] / sum_x' pi[x', y]``) functions of
    the table, with delta-method standard errors from ``V``.
Independence
    Likelihood-ratio test of ``pi = pi_1 (x) pi_2 (x) ...``: under independence the
    likelihood factorizes, ``d_i = prod_j (L_j,i . pi_j)``, so each marginal is its own
    mixture fit.  ``2 (l_joint - sum_j l_j)`` is chi-square with
    ``prod C_j - 1 - sum (C_j - 1)`` degrees of freedom (Wilks 1938) only when no cell is
    near 0; RAPPOR tables have many cells within a standard error of 0, where the
    statistic is much smaller (p-values near 1 for every string x string table, dependent
    or not), so its law is drawn from the quadratic approximation with the constraint
    ``pi >= 0`` (:func:`independence_null_draws`).  google/rappor's ``TestIndependence``
    uses ``diff^T I diff`` instead, which is not a chi-square statistic (``I`` is the
    information of the table, not of the differences).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..._util import tails
from ..._util.lazy import lazy_module

if TYPE_CHECKING:
    from scipy import optimize, special
else:  # imported on first use: keeps `import rappor` light
    optimize = lazy_module("scipy.optimize")
    special = lazy_module("scipy.special")

__all__ = ["boundary_interval", "conditional_distribution", "constrained_covariance", "independence_null_draws",
           "marginal_distribution", "projected_covariance", "projected_draws"]

Array = npt.NDArray[np.float64]


def _tangent_basis(n: int) -> Array:
    """Orthonormal basis (n x (n - 1)) of the vectors summing to 0 (Helmert contrasts)."""
    q = np.zeros((n, n - 1))
    for j in range(1, n):
        q[:j, j - 1] = 1.0 / np.sqrt(j * (j + 1))
        q[j, j - 1] = -j / np.sqrt(j * (j + 1))
    return q


def constrained_covariance(information: Array, *, rcond: float = 1e-10) -> Array:
    """Covariance of the table's cells given the observed information, on the simplex.

    Parameters
    ----------
    information : ndarray of shape (n, n)
    rcond : float, default=1e-10
        Eigenvalues below ``rcond`` times the largest count as zero (unresolved
        directions: infinite variance).

    Returns
    -------
    ndarray of shape (n, n)
        ``inf`` on the rows and columns of cells that load on an unresolved direction.
    """
    n = information.shape[0]
    if n == 1:
        return np.zeros((1, 1))
    q = _tangent_basis(n)
    reduced = q.T @ information @ q
    reduced = 0.5 * (reduced + reduced.T)
    values, vectors = np.linalg.eigh(reduced)
    top = float(values.max()) if values.size else 0.0
    good = values > rcond * max(top, 0.0)
    basis = q @ vectors
    kept = basis[:, good]
    cov: Array = (kept / values[good]) @ kept.T
    if (~good).any():
        loading = np.abs(basis[:, ~good]).max(axis=1) > 1e-6
        cov[loading, :] = np.inf
        cov[:, loading] = np.inf
    return cov


class _SimplexProjection:
    """Draws of the normal ``N(centre, cov)`` and their projections onto the simplex in the metric ``cov^+``.

    ``min (y - z)' M (y - z)`` over ``y >= 0`` with ``M = cov^+ + rho 1 1'`` (``rho`` large
    keeps ``sum y = 1``) is a strictly convex quadratic program; :meth:`project` solves it
    for a batch of points at once (:func:`_project_batch`).  ``whiten`` maps a deviation
    to the coordinates in which ``cov`` is the identity (its rank: the directions the data
    resolve).
    """

    def __init__(self, cov: Array) -> None:
        n = cov.shape[0]
        values, vectors = np.linalg.eigh(0.5 * (cov + cov.T))
        keep = values > 1e-12 * max(float(values.max()), 1e-300)
        self.rank = int(keep.sum())
        self.root = vectors[:, keep] * np.sqrt(values[keep])
        self.whiten = (vectors[:, keep] / np.sqrt(values[keep])).T
        metric = (vectors[:, keep] / values[keep]) @ vectors[:, keep].T
        scale = float(np.trace(metric)) / n
        metric += 1e6 * scale / n * np.ones((n, n))
        metric[np.diag_indices(n)] += 1e-12 * scale
        self.metric = 0.5 * (metric + metric.T)
        lower = np.linalg.cholesky(self.metric)
        self.chol = lower.T
        root_inverse = np.linalg.inv(lower)
        self.inverse_metric = root_inverse.T @ root_inverse

    def project(self, z: Array) -> Array:
        """The points of the simplex nearest to the rows of ``z`` (shape (B, n)) in the metric."""
        return _project_batch(self.metric, self.inverse_metric, self.chol, np.atleast_2d(z))


#: Iterations of the batched active-set method before a point falls back to Lawson-Hanson.
_MAX_ACTIVE_SET_ITERATIONS = 50


#: Bytes of one stack of sub-systems in :func:`_solve_on_subsets` (bounds its temporaries).
_STACK_BYTES = 1 << 23


def _solve_on_subsets(matrix: Array, subsets: npt.NDArray[np.bool_], rhs: Array) -> Array:
    """For every row ``b``: ``x_S = matrix[S, S]^{-1} rhs[b, S]`` with ``S = subsets[b]``, 0 elsewhere.

    The sub-systems are gathered into stacks padded with identity rows to the largest
    ``|S|`` and solved by one batched LAPACK call per stack of at most :data:`_STACK_BYTES`.
    """
    rows, n = rhs.shape
    counts = subsets.sum(axis=1)
    out = np.zeros((rows, n))
    size = int(counts.max()) if rows else 0
    if size == 0:
        return out
    # Padding slot j points at row n + j of an identity block appended to the matrix.
    big = np.zeros((n + size, n + size))
    big[:n, :n] = matrix
    big[np.arange(n, n + size), np.arange(n, n + size)] = 1.0
    step = max(1, _STACK_BYTES // (8 * size * size))
    for lo in range(0, rows, step):
        hi = min(lo + step, rows)
        order = np.argsort(~subsets[lo:hi], axis=1, kind="stable")[:, :size]        # members of S first
        member = np.arange(size)[None, :] < counts[lo:hi, None]
        padded = np.where(member, order, n + np.arange(size)[None, :])
        stack = big[padded[:, :, None], padded[:, None, :]]
        right = np.where(member, np.take_along_axis(rhs[lo:hi], order, axis=1), 0.0)
        x = np.linalg.solve(stack, right[:, :, None])[:, :, 0]
        np.put_along_axis(out[lo:hi], order, np.where(member, x, 0.0), axis=1)
    return out


def _project_batch(metric: Array, inverse: Array, chol: Array, z: Array) -> Array:
    """Rows of ``z`` projected onto ``y >= 0`` in the metric ``metric``, all at once.

    ``inverse`` is the metric's inverse and ``chol`` its upper Cholesky factor; with
    :class:`_SimplexProjection`'s metric (``rho 1 1'`` added) the projection is onto the simplex.

    Primal-dual active-set iteration (Hintermueller, Ito and Kunisch 2002, "The primal-dual
    active set strategy as a semismooth Newton method", SIAM J. Optim. 13(3)), every point
    in step: given the set ``A`` of cells held at 0, the minimizer on ``{y_A = 0}`` is
    ``y_P = M_PP^{-1} (M z)_P`` (or, equivalently and cheaper when ``A`` is the smaller set,
    ``y = z - H_{.A} H_AA^{-1} z_A`` with ``H = M^{-1}``), and its multipliers are
    ``g_A = (M (y - z))_A``; then ``A <- {i in A: g_i > 0} + {i not in A: y_i < 0}``.  A
    point stops when ``A`` no longer changes: ``y >= 0`` and ``g_A >= 0`` are then the
    problem's optimality conditions, so the answer is the exact projection (the same as a
    Lawson-Hanson NNLS, to rounding).  Starting from ``A = {z_i < 0}`` it took 3-7 iterations
    on the 100-300-cell tables of ``docs/association.md``; a point still moving after
    :data:`_MAX_ACTIVE_SET_ITERATIONS` (the iteration can cycle on matrices that are not
    M-matrices) is solved by NNLS.
    """
    rows, n = z.shape
    tol = 1e-12 * max(float(np.abs(z).max()) if z.size else 0.0, 1e-300)
    active = z < 0
    out = np.empty_like(z)
    todo = np.arange(rows)
    for _ in range(_MAX_ACTIVE_SET_ITERATIONS):
        if todo.size == 0:
            break
        held, point = active[todo], z[todo]
        if held.sum(axis=1).max() <= (~held).sum(axis=1).max():
            shift = _solve_on_subsets(inverse, held, point)
            y = point - shift @ inverse
            multiplier = -shift
        else:
            y = _solve_on_subsets(metric, ~held, point @ metric)
            multiplier = (y - point) @ metric
        y[held] = 0.0
        new = (held & (multiplier > 0)) | (~held & (y < -tol))
        settled = (new == held).all(axis=1)
        out[todo[settled]] = y[settled]
        active[todo] = new
        todo = todo[~settled]
    for b in todo:
        out[b], _ = optimize.nnls(chol, chol @ z[b], maxiter=max(30 * n, 300))
    return out


def projected_draws(table: Array, cov: Array, rng: np.random.Generator, *, draws: int = 1000) -> Array | None:
    """Draws of the estimate's law on the simplex: a normal projected onto ``pi >= 0``.

    When cells lie on or near the boundary, the maximum-likelihood estimate is not normal:
    its local asymptotic law is the projection, in the metric of the information, of the
    normal ``N(pi, V)`` onto the feasible set (Andrews 1999, "Estimation when a parameter
    is on a boundary", Econometrica 67(6), Theorem 2; Self and Liang 1987, JASA 82(398)).
    Drawn here ``draws`` times around the estimate: each draw ``z`` is projected by the
    quadratic program ``min (y - z)' (V^+ + rho 1 1') (y - z)`` over ``y >= 0`` (``rho``
    large keeps ``sum y = 1``), all draws at once (:func:`_project_batch`).

    Returns
    -------
    ndarray of shape (draws, n) or None
        ``None`` when the table has one cell or ``cov`` has infinite entries.
    """
    n = table.size
    if n == 1 or not np.isfinite(cov).all():
        return None
    proj = _SimplexProjection(cov)
    centre = table.reshape(-1)
    noise = rng.standard_normal((draws, proj.rank))
    return proj.project(centre + noise @ proj.root.T)


def projected_covariance(table: Array, cov: Array, rng: np.random.Generator, *, draws: int = 1000) -> Array:
    """Covariance of :func:`projected_draws`: the estimate's spread with the boundary ``pi >= 0``.

    Far from the boundary the projection is the identity and this is ``V``; near it the
    spread is smaller -- measured, up to 2.5 times for cells of a few percent whose Wald
    standard error is larger than their share (``docs/association.md``).

    Returns
    -------
    ndarray of shape (n, n)
        The draws' covariance (Monte Carlo error about ``1 / sqrt(2 draws)`` relative);
        ``cov`` itself if it has infinite entries.
    """
    samples = projected_draws(table, cov, rng, draws=draws)
    if samples is None:
        return cov
    out: Array = np.cov(samples, rowvar=False)
    return out


def boundary_interval(table: Array, std_error: Array, samples: npt.NDArray[np.floating[Any]] | None,
                      level: float) -> tuple[Array, Array]:
    """Intervals of the cells: ``estimate ± z * std_error``, the upper end raised to the projected law's quantile.

    ``std_error`` is the standard deviation of the projected law (:func:`projected_draws`).
    Where that law has an atom at 0 -- a cell at or near the boundary -- its standard
    deviation understates its upper tail: for the law of ``max(0, N(0, s^2))`` it is
    ``0.58 s``, so ``1.96`` of them reach its 87th percentile, not its 97.5th, and a cell
    estimated at 0 whose true share is 1.2-2 ``s`` is missed.  The upper end is therefore
    the larger of the Wald end and the law's ``(1 + level) / 2`` quantile, which is the
    Neyman upper bound of the one-dimensional boundary problem (for an estimate of 0,
    ``{theta : P_theta(estimate <= 0) >= (1 - level) / 2} = [0, z s]``); away from the
    boundary the law is normal and the quantile is the Wald end (up to Monte Carlo error,
    about ``0.05 s`` with 1,000 draws).  The lower end stays the Wald end: the law's lower
    quantile is 0 for almost every small cell (measured: the percentile intervals covered
    every cell below a share of 0.005; ``docs/association.md``).  Both ends are clipped to
    ``[0, 1]``.

    Parameters
    ----------
    table, std_error : ndarray
        Same shape.
    samples : ndarray of shape (draws, cells) or None
        The projected law's draws (flat, C order); ``None`` gives the Wald interval.
    level : float

    Returns
    -------
    low, high : ndarray
        Shaped like ``table``.
    """
    z = tails.two_sided_z(level)
    with np.errstate(invalid="ignore"):
        low: Array = np.clip(table - z * std_error, 0.0, 1.0)
        high: Array = np.clip(table + z * std_error, 0.0, 1.0)
        if samples is not None:
            upper = np.quantile(samples, 0.5 + level / 2.0, axis=0).reshape(table.shape)
            finite = np.isfinite(std_error)
            high = np.where(finite, np.clip(np.maximum(high, upper), 0.0, 1.0), high)
    return low, high


def _independence_directions(marginals: Sequence[Array]) -> tuple[Array, Array]:
    """Tangent space at ``outer(marginals)`` of the independence tables, and the bounds of its coordinates.

    Moving marginal ``j`` by ``u`` (``sum u = 0``) moves the table by the outer product of
    ``u`` with the other marginals: ``sum_j (C_j - 1)`` directions, one per category ``c``
    but the largest ``r`` of each marginal, ``(e_c - e_r)`` times the other marginals, so
    that a coordinate is the move of its category's share.  A marginal stays a distribution
    (the null hypothesis is a product of distributions) while each coordinate is at least
    minus its category's share: the second array, ``-marginals[j][c]`` per column.
    """
    columns, lower = [], []
    for j, mj in enumerate(marginals):
        top = int(np.argmax(mj))
        for c in range(mj.size):
            if c == top:
                continue
            u = np.zeros(mj.size)
            u[c], u[top] = 1.0, -1.0
            factors = [u if i == j else m for i, m in enumerate(marginals)]
            vec = factors[0]
            for f in factors[1:]:
                vec = np.multiply.outer(vec, f)
            columns.append(np.asarray(vec, dtype=np.float64).reshape(-1))
            lower.append(-float(mj[c]))
    if not columns:
        return np.zeros((int(np.prod([m.size for m in marginals])), 0)), np.zeros(0)
    return np.array(columns).T, np.array(lower)


def _bounded_null_residual(directions: Array, lower: Array, noise: Array) -> Array:
    """``min ||e - B u||^2`` over ``u >= lower`` for every row ``e`` of ``noise``: the null's residual.

    ``B`` (``directions``) is the null's tangent space in whitened coordinates.  With ``a``
    the unconstrained least-squares coefficients, ``||e - B u||^2 = ||e - B a||^2 + (u - a)'
    G (u - a)`` (``G = B'B``), so the bounded minimum adds to the unconstrained residual the
    projection of ``a - lower`` onto ``u >= 0`` in the metric ``G`` (:func:`_project_batch`).
    """
    gram = directions.T @ directions
    p = gram.shape[0]
    if p == 0:
        out: Array = (noise * noise).sum(axis=1)
        return out
    gram = 0.5 * (gram + gram.T)
    gram[np.diag_indices(p)] += 1e-12 * max(float(np.trace(gram)) / p, 1e-300)
    chol: Array = np.asarray(np.linalg.cholesky(gram), dtype=np.float64)
    coef = np.linalg.solve(chol.T, np.linalg.solve(chol, directions.T @ noise.T)).T   # (draws, p)
    fitted = coef @ directions.T
    residual: Array = ((noise - fitted) ** 2).sum(axis=1)
    shifted = coef - lower
    outside = (shifted < 0).any(axis=1)
    if outside.any():
        root_inverse = np.linalg.inv(chol)
        moved = _project_batch(gram, root_inverse.T @ root_inverse, chol.T, shifted[outside]) - shifted[outside]
        residual[outside] += np.einsum("bi,ij,bj->b", moved, gram, moved)
    return residual


def design_effects(cov: Array, sampling: Array) -> Array:
    """The eigenvalues of ``sampling`` in the coordinates where ``cov`` is the identity: the design effects.

    With ``z ~ N(pi0, sampling)`` (clients that report more than once,
    :mod:`~rappor.analysis.association._clusters`) the likelihood-ratio statistic in the metric
    ``cov^+`` is ``sum_i lambda_i chi^2_1`` over the directions it measures (Rao and Scott 1981,
    JASA 76(374)).  Infinite where either matrix has unresolved cells.
    """
    if not (np.isfinite(cov).all() and np.isfinite(sampling).all()):
        return np.full(1, math.inf)
    proj = _SimplexProjection(cov)
    inner = proj.whiten @ sampling @ proj.whiten.T
    out: Array = np.clip(np.linalg.eigvalsh(0.5 * (inner + inner.T)), 0.0, None) if inner.size else np.ones(1)
    return out


def clustered_tail_bound(statistic: float, effects: Array, df: int, *, steps: int = 100) -> float:
    """An upper bound on ``P(T >= statistic)`` for the independence statistic ``T`` under clustered sampling.

    ``T`` is the squared length of the whitened estimate's projection on ``df`` of the directions,
    so ``T <= sum_i lambda_i chi^2_1`` over all of them (``lambda`` the :func:`design_effects`) and
    ``T <= lambda_max chi^2_df``; the boundary only makes it smaller.  The bound is the smaller of
    that chi-square tail and the Chernoff bound ``min_t exp(-t s) prod_i (1 - 2 t lambda_i)^(-1/2)``
    over ``0 < t < 1 / (2 lambda_max)`` (its exponent is convex in ``t``: the minimum is where its
    derivative ``-s + sum_i lambda_i / (1 - 2 t lambda_i)`` is 0, found by bisection).  1 when some
    effect is infinite.
    """
    lam = np.asarray(effects, dtype=np.float64)
    if not np.isfinite(lam).all():
        return 1.0
    top = max(float(lam.max(initial=0.0)), 1.0)
    best = float(special.chdtrc(df, statistic / top)) if df > 0 else 1.0
    lam = lam[lam > 1e-12 * top]
    if statistic <= float(lam.sum()):
        return best
    lo, hi = 0.0, 0.5 / float(lam.max())
    for _ in range(steps):
        t = 0.5 * (lo + hi)
        if float(np.sum(lam / (1.0 - 2.0 * t * lam))) < statistic:
            lo = t
        else:
            hi = t
    exponent = -lo * statistic - 0.5 * float(np.sum(np.log1p(-2.0 * lo * lam)))
    return min(best, math.exp(exponent))


def independence_null_draws(marginals: Sequence[Array], cov: Array, rng: np.random.Generator, *,
                            draws: int = 1000, sampling: Array | None = None) -> Array | None:
    """Draws of the likelihood-ratio statistic of independence under independence, boundary included.

    In the quadratic approximation of the log-likelihood around the independence estimate
    ``pi0 = outer(marginals)`` with covariance ``V`` (the inverse information on the simplex,
    :func:`constrained_covariance`), the unconstrained estimate is ``z ~ N(pi0, V)`` and
    ``2 (l_joint - l_indep) = min_{y in H0} ||z - y||^2 - min_{y in simplex} ||z - y||^2`` in
    the metric ``V^+``; ``H0`` is linearized at ``pi0`` (:func:`_independence_directions`),
    each marginal kept a distribution (no category's share below 0: :func:`_bounded_null_residual`;
    without that bound the draws were too small wherever the marginal fit holds categories at 0,
    and independent data with many candidates nobody reports were rejected at p = 0.001).
    Without the constraint ``y >= 0`` this is chi-square with
    ``prod C_j - 1 - sum (C_j - 1)`` degrees of freedom (Wilks 1938); with it, a cell whose
    share is within a few standard errors of 0 cannot go below it, the second term grows
    and the statistic is stochastically smaller (Self and Liang 1987, JASA 82(398); Andrews
    2001, "Testing when a parameter is on the boundary of the maintained hypothesis",
    Econometrica 69(3)).  The projection is that of :func:`projected_covariance`.  With
    ``sampling`` (the covariance of the estimate when it is not ``V``: clients that report
    more than once, :mod:`~rappor.analysis.association._clusters`) ``z ~ N(pi0, sampling)``,
    the statistic still measured in the metric ``V^+``: its law under the clustered sample
    (the simulated counterpart of Rao and Scott's correction).

    Returns
    -------
    ndarray of shape (draws,) or None
        ``None`` when ``V`` (or ``sampling``) has infinite entries (unresolved cells).
    """
    pi0 = marginals[0]
    for m in marginals[1:]:
        pi0 = np.multiply.outer(pi0, m)
    centre = np.asarray(pi0, dtype=np.float64).reshape(-1)
    if centre.size == 1 or not np.isfinite(cov).all() or (sampling is not None and not np.isfinite(sampling).all()):
        return None
    proj = _SimplexProjection(cov)
    tangent, lower = _independence_directions(marginals)
    directions = proj.whiten @ tangent
    noise = rng.standard_normal((draws, proj.rank))
    if sampling is not None:  # whitened draws of N(0, sampling) instead of N(0, V)
        inner = proj.whiten @ sampling @ proj.whiten.T
        values, vectors = np.linalg.eigh(0.5 * (inner + inner.T))
        noise = noise @ (vectors * np.sqrt(np.maximum(values, 0.0))).T
    # Residual of the null: its tangent space in whitened coordinates, each marginal kept >= 0.
    null_residual = _bounded_null_residual(directions, lower, noise)
    z = centre + noise @ proj.root.T
    w = (z - proj.project(z)) @ proj.whiten.T
    result: Array = np.maximum(null_residual - (w * w).sum(axis=1), 0.0)
    return result


def marginal_distribution(table: Array, cov: Array | None, axis: int) -> tuple[Array, Array]:
    """Marginal of variable ``axis`` and its standard errors."""
    shape = table.shape
    labels = np.indices(shape)[axis].reshape(-1)
    probs: Array = np.bincount(labels, weights=table.reshape(-1), minlength=shape[axis]).astype(np.float64)
    if cov is None:
        return probs, np.full(shape[axis], np.nan)
    member = np.zeros((labels.size, shape[axis]))
    member[np.arange(labels.size), labels] = 1.0
    infinite = np.isinf(cov)
    var = np.einsum("ij,ik,kj->j", member, np.where(infinite, 0.0, cov), member)
    var = np.where(infinite.any(axis=0) @ member > 0, np.inf, var)
    se: Array = np.sqrt(np.maximum(var, 0.0))
    return probs, se


def conditional_distribution(table: Array, cov: Array | None, given: int) -> tuple[Array, Array]:
    """``P(other variables | variable given)``: the table divided by the marginal of ``given``.

    Returns the conditional table (same shape; ``nan`` where the marginal is 0) and its
    delta-method standard errors.
    """
    shape = table.shape
    flat = table.reshape(-1)
    labels = np.indices(shape)[given].reshape(-1)
    sums = np.bincount(labels, weights=flat, minlength=shape[given])
    s = sums[labels]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio: Array = flat / s
    if cov is None:
        return ratio.reshape(shape), np.full(shape, np.nan)
    member = np.zeros((flat.size, shape[given]))
    member[np.arange(flat.size), labels] = 1.0
    finite = np.nan_to_num(cov, posinf=0.0)
    cov_cell_group = finite @ member                      # sum over cells c' of the group of each column
    own = cov_cell_group[np.arange(flat.size), labels]    # sum_{c' in g(c)} V[c, c']
    group_total = np.einsum("ig,ij,jg->g", member, finite, member)[labels]
    with np.errstate(divide="ignore", invalid="ignore"):
        var = (np.diag(finite) / s**2 - 2.0 * flat * own / s**3 + flat**2 * group_total / s**4)
    bad = np.isinf(cov).any(axis=1) | (np.isinf(cov) @ member > 0)[np.arange(flat.size), labels]
    var = np.where(bad, np.inf, var)
    se: Array = np.sqrt(np.maximum(var, 0.0)).reshape(shape)
    return ratio.reshape(shape), se
