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

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["conditional_distribution", "constrained_covariance", "independence_null_draws", "marginal_distribution",
           "projected_covariance"]

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

    ``min (y - z)' cov^+ (y - z)`` over ``y >= 0`` is solved as the non-negative least-squares
    problem ``min ||R (y - z)||`` with ``R'R = cov^+ + rho 1 1'`` (``rho`` large keeps
    ``sum y = 1``).  ``whiten`` maps a deviation to the coordinates in which ``cov`` is the
    identity (its rank: the directions the data resolve).
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
        self.chol = np.linalg.cholesky(0.5 * (metric + metric.T)).T

    def project(self, z: Array) -> Array:
        """The point of the simplex nearest to ``z`` in the metric."""
        from scipy.optimize import nnls

        n = z.size
        y, _ = nnls(self.chol, self.chol @ z, maxiter=max(30 * n, 300))
        out: Array = y
        return out


def projected_covariance(table: Array, cov: Array, rng: np.random.Generator, *, draws: int = 1000) -> Array:
    """Covariance of the estimate's law on the simplex: a normal projected onto ``pi >= 0``.

    When cells lie on or near the boundary, the maximum-likelihood estimate is not normal:
    its local asymptotic law is the projection, in the metric of the information, of the
    normal ``N(pi, V)`` onto the feasible set (Andrews 1999, "Estimation when a parameter
    is on a boundary", Econometrica 67(6), Theorem 2; Self and Liang 1987, JASA 82(398)).
    Drawn here ``draws`` times around the estimate: each draw ``z`` is projected by the
    non-negative least-squares problem ``min ||R (y - z)||`` over ``y >= 0`` with
    ``R'R = V^+ + rho 1 1'`` (``rho`` large keeps ``sum y = 1``).  Far from the boundary
    the projection is the identity and this is ``V``; near it the spread is smaller --
    measured, up to 2.5 times for cells of a few percent whose Wald standard error is
    larger than their share (``docs/association.md``).

    Returns
    -------
    ndarray of shape (n, n)
        The draws' covariance (Monte Carlo error about ``1 / sqrt(2 draws)`` relative);
        ``cov`` itself if it has infinite entries.
    """
    n = table.size
    if n == 1 or not np.isfinite(cov).all():
        return cov
    proj = _SimplexProjection(cov)
    centre = table.reshape(-1)
    samples = np.empty((draws, n))
    noise = rng.standard_normal((draws, proj.rank))
    for b in range(draws):
        samples[b] = proj.project(centre + proj.root @ noise[b])
    out: Array = np.cov(samples, rowvar=False)
    return out


def _independence_directions(marginals: Sequence[Array]) -> Array:
    """Tangent space at ``outer(marginals)`` of the independence tables: one column per direction.

    Moving marginal ``j`` by ``u`` (``sum u = 0``) moves the table by the outer product of
    ``u`` with the other marginals: ``sum_j (C_j - 1)`` directions.
    """
    columns = []
    for j, mj in enumerate(marginals):
        basis = _tangent_basis(mj.size)
        for u in basis.T:
            factors = [u if i == j else m for i, m in enumerate(marginals)]
            vec = factors[0]
            for f in factors[1:]:
                vec = np.multiply.outer(vec, f)
            columns.append(np.asarray(vec, dtype=np.float64).reshape(-1))
    return np.array(columns).T if columns else np.zeros((int(np.prod([m.size for m in marginals])), 0))


def independence_null_draws(marginals: Sequence[Array], cov: Array, rng: np.random.Generator, *,
                            draws: int = 1000) -> Array | None:
    """Draws of the likelihood-ratio statistic of independence under independence, boundary included.

    In the quadratic approximation of the log-likelihood around the independence estimate
    ``pi0 = outer(marginals)`` with covariance ``V`` (the inverse information on the simplex,
    :func:`constrained_covariance`), the unconstrained estimate is ``z ~ N(pi0, V)`` and
    ``2 (l_joint - l_indep) = min_{y in H0} ||z - y||^2 - min_{y in simplex} ||z - y||^2`` in
    the metric ``V^+``; ``H0`` is linearized at ``pi0`` (:func:`_independence_directions`).
    Without the constraint ``y >= 0`` this is chi-square with
    ``prod C_j - 1 - sum (C_j - 1)`` degrees of freedom (Wilks 1938); with it, a cell whose
    share is within a few standard errors of 0 cannot go below it, the second term grows
    and the statistic is stochastically smaller (Self and Liang 1987, JASA 82(398); Andrews
    2001, "Testing when a parameter is on the boundary of the maintained hypothesis",
    Econometrica 69(3)).  The projection is that of :func:`projected_covariance`.

    Returns
    -------
    ndarray of shape (draws,) or None
        ``None`` when ``V`` has infinite entries (unresolved cells).
    """
    pi0 = marginals[0]
    for m in marginals[1:]:
        pi0 = np.multiply.outer(pi0, m)
    centre = np.asarray(pi0, dtype=np.float64).reshape(-1)
    if centre.size == 1 or not np.isfinite(cov).all():
        return None
    proj = _SimplexProjection(cov)
    directions = proj.whiten @ _independence_directions(marginals)
    left, sing, _ = np.linalg.svd(directions, full_matrices=False)
    basis = left[:, sing > 1e-10 * max(float(sing.max()), 1e-300)] if sing.size else left
    noise = rng.standard_normal((draws, proj.rank))
    # Residual of the null (a linear subspace in whitened coordinates): |e|^2 - |Q'e|^2.
    null_residual = (noise * noise).sum(axis=1) - ((noise @ basis) ** 2).sum(axis=1)
    out = np.empty(draws)
    for b in range(draws):
        z = centre + proj.root @ noise[b]
        y = proj.project(z)
        w = proj.whiten @ (z - y)
        out[b] = null_residual[b] - float(w @ w)
    result: Array = np.maximum(out, 0.0)
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
