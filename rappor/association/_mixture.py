"""Maximum likelihood of a joint distribution from per-report likelihoods (private).

The model (google/rappor ``association.R``): report tuple ``i`` (one report per
variable, weight ``w_i`` = how many identical tuples) has likelihood
``d_i(pi) = sum_cell pi[cell] L_i[cell]`` with ``L_i = L1_i (x) L2_i (x) ...``, the outer
product of the per-variable likelihoods (the variables' reports are independent given
the client's values).  The log-likelihood ``l(pi) = sum_i w_i log d_i(pi)`` is concave
on the simplex.

Two solvers reach the same maximum:

``"sqp"``
    Sequential quadratic programming of Kim, Carbonetto, Stephens and Anitescu (2020),
    "A fast algorithm for maximum likelihood estimation of mixture proportions using
    sequential quadratic programming", JCGS 29(2) (mix-SQP): minimize
    ``f(x) = -l(x) / W + sum(x)`` over ``x >= 0`` (its minimum has ``sum(x) = 1``), each
    step a non-negative quadratic program with the Hessian (solved as a non-negative
    least-squares problem on its Cholesky factor), then a backtracking line search.
    Beyond :data:`HESSIAN_ROWS` patterns the step's Hessian comes from a fixed random
    subsample of them (the gradient and the line search always use every pattern):
    a slightly worse step, far cheaper.
``"em"``
    The EM iteration of ``association.R`` (``UpdatePij``):
    ``pi <- pi * grad l(pi) / W``, from the uniform table.  Each step is cheap but at
    RAPPOR noise levels it needs thousands of them.

Convergence is certified by the duality bound of the mixture likelihood: by concavity
``l(pi*) - l(pi) <= max_cell G[cell] - W`` with ``G = grad l(pi)`` (e.g. Lindsay 1983,
"The geometry of mixture likelihoods", Ann. Statist. 11(1)), so ``gap = max G - W`` is
how far, in log-likelihood, ``pi`` can be from the maximum.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

__all__ = ["FitResult", "ProductLikelihood", "fit_mixture"]

Array = npt.NDArray[np.float64]
Method = Literal["sqp", "em"]

#: Patterns per block of the passes over the data (bounds the temporaries).
BLOCK_ROWS = 1 << 15
#: Above this many patterns, the SQP step's Hessian is computed on a subsample of this size.
HESSIAN_ROWS = 1 << 17
#: Distinct likelihood rows of the 2nd..last variables up to which the Hessian is assembled
#: per distinct row (a boolean has 2): ``G X^2`` work instead of ``G (X Y)^2``.
_FEW_PATTERNS = 64


class ProductLikelihood:
    """Per-pattern likelihood rows ``L_i = L1_i (x) L2_i (x) ...`` with weights, and the passes over them.

    Parameters
    ----------
    factors : sequence of ndarray of float64, shape (G, C_j)
        Likelihood of each category of variable ``j`` for each pattern.
    weights : ndarray of float64, shape (G,)
    """

    def __init__(self, factors: Sequence[Array], weights: Array) -> None:
        self.factors = [np.ascontiguousarray(f, dtype=np.float64) for f in factors]
        self.weights = np.asarray(weights, dtype=np.float64)
        self.shape = tuple(f.shape[1] for f in self.factors)
        self.size = int(np.prod(self.shape))
        self.rows = int(self.weights.shape[0])
        self.total = float(self.weights.sum())
        self._pattern_ids: npt.NDArray[np.int64] | None = None
        self._patterns: Array | None = None
        if len(self.factors) > 1:
            rest = self._rest_rows(0, self.rows)
            if self.rows:
                keys = np.ascontiguousarray(rest).view(np.dtype((np.void, rest.shape[1] * 8))).reshape(-1)
                _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
                if first.size <= _FEW_PATTERNS:
                    self._pattern_ids = inverse.reshape(-1).astype(np.int64)
                    self._patterns = rest[first]

    def _rest_rows(self, lo: int, hi: int) -> Array:
        """``L2_i (x) L3_i (x) ...`` for rows ``lo:hi``, shape (hi - lo, C_2 ... C_J)."""
        out = self.factors[1][lo:hi]
        for f in self.factors[2:]:
            out = (out[:, :, None] * f[lo:hi, None, :]).reshape(hi - lo, -1)
        return out

    def _blocks(self) -> list[tuple[int, int]]:
        return [(lo, min(lo + BLOCK_ROWS, self.rows)) for lo in range(0, self.rows, BLOCK_ROWS)]

    def forward(self, table: Array) -> Array:
        """``d_i = L_i . table`` for every pattern (``table`` flat, C order)."""
        first = self.factors[0]
        if len(self.factors) == 1:
            return first @ table
        tab = table.reshape(self.shape[0], -1)
        out = np.empty(self.rows)
        for lo, hi in self._blocks():
            out[lo:hi] = np.einsum("ij,ij->i", first[lo:hi] @ tab, self._rest_rows(lo, hi))
        return out

    def gradient(self, v: Array) -> Array:
        """``sum_i v_i L_i`` (flat, C order)."""
        first = self.factors[0]
        if len(self.factors) == 1:
            return first.T @ v
        acc = np.zeros((self.shape[0], self.size // self.shape[0]))
        for lo, hi in self._blocks():
            acc += first[lo:hi].T @ (self._rest_rows(lo, hi) * v[lo:hi, None])
        return acc.reshape(-1)

    def hessian(self, v: Array, rows: npt.NDArray[np.intp] | None = None, scale: float = 1.0) -> Array:
        """``scale * sum_i v_i L_i L_i^T`` over ``rows`` (every pattern by default)."""
        first = self.factors[0]
        n_cells = self.size
        if rows is None:
            rows = np.arange(self.rows)
        if len(self.factors) == 1:
            out = np.zeros((n_cells, n_cells))
            for lo in range(0, rows.size, BLOCK_ROWS):
                r = rows[lo:lo + BLOCK_ROWS]
                a = first[r] * np.sqrt(v[r])[:, None]
                out += a.T @ a
            return out * scale
        x_count, rest = self.shape[0], n_cells // self.shape[0]
        if self._pattern_ids is not None and self._patterns is not None:
            ids = self._pattern_ids[rows]
            out4 = np.zeros((x_count, rest, x_count, rest))
            for pid in range(self._patterns.shape[0]):
                r = rows[ids == pid]
                if r.size == 0:
                    continue
                block = np.zeros((x_count, x_count))
                for lo in range(0, r.size, BLOCK_ROWS):
                    rr = r[lo:lo + BLOCK_ROWS]
                    a = first[rr] * np.sqrt(v[rr])[:, None]
                    block += a.T @ a
                ell = self._patterns[pid]
                out4 += block[:, None, :, None] * np.outer(ell, ell)[None, :, None, :]
            return out4.reshape(n_cells, n_cells) * scale
        out = np.zeros((n_cells, n_cells))
        step = max(1, BLOCK_ROWS * 64 // max(n_cells, 1))
        for lo in range(0, rows.size, step):
            r = rows[lo:lo + step]
            rest_rows = self.factors[1][r]
            for f in self.factors[2:]:
                rest_rows = (rest_rows[:, :, None] * f[r, None, :]).reshape(r.size, -1)
            z = (first[r][:, :, None] * rest_rows[:, None, :]).reshape(r.size, n_cells) * np.sqrt(v[r])[:, None]
            out += z.T @ z
        return out * scale

    def log_likelihood(self, d: Array) -> float:
        """``sum_i w_i log d_i`` (up to the constant of the row scaling)."""
        with np.errstate(divide="ignore"):
            return float(self.weights @ np.log(d))


@dataclass
class FitResult:
    """Output of :func:`fit_mixture`."""

    table: Array
    iterations: int
    converged: bool
    gap: float
    log_likelihood: float
    max_change: float
    seconds: float
    method: str
    history: list[float] = field(default_factory=list)


def _gap(lik: ProductLikelihood, x: Array, d: Array) -> tuple[float, Array]:
    """Duality bound on ``l(pi*) - l(x / sum x)`` and the gradient ``G(x)`` of ``l`` at ``x``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(d > 0, lik.weights / d, 0.0)
    grad = lik.gradient(ratio)
    return float(x.sum() * grad.max() - lik.total), grad


def fit_mixture(lik: ProductLikelihood, *, method: Method = "sqp", tolerance: float = 1e-3,
                max_iterations: int = 1000, em_epsilon: float = 1e-6, start: Array | None = None,
                rng: np.random.Generator | None = None) -> FitResult:
    """Maximize ``sum_i w_i log(L_i . pi)`` over the simplex.

    Parameters
    ----------
    lik : ProductLikelihood
    method : {"sqp", "em"}, default="sqp"
    tolerance : float, default=1e-3
        Stop when the certified gap to the maximum log-likelihood is at most this.
    max_iterations : int, default=1000
    em_epsilon : float, default=1e-6
        EM also stops when no cell moves by more than this (``association.R``'s ``epsilon``);
        it is then converged only if the gap is within ``tolerance``.
    start : ndarray, optional
        Starting table (flat); uniform by default (as ``association.R``).
    rng : numpy.random.Generator, optional
        Draws the Hessian subsample of SQP (seed 0 by default).

    Returns
    -------
    FitResult
    """
    started = time.perf_counter()
    n_cells = lik.size
    x = np.full(n_cells, 1.0 / n_cells) if start is None else np.asarray(start, dtype=np.float64).copy()
    d = lik.forward(x)
    history: list[float] = []
    gap, grad = _gap(lik, x, d)
    change = math.inf
    iterations = 0
    if method == "em":
        while gap > tolerance and iterations < max_iterations and change >= em_epsilon:
            new = x * grad / lik.total
            change = float(np.abs(new - x).max())
            x = new
            d = lik.forward(x)
            iterations += 1
            gap, grad = _gap(lik, x, d)
            history.append(gap)
    else:
        gen = rng if rng is not None else np.random.default_rng(0)
        sample: npt.NDArray[np.intp] | None = None
        scale = 1.0
        if lik.rows > HESSIAN_ROWS:
            sample = np.sort(gen.choice(lik.rows, HESSIAN_ROWS, replace=False))
            scale = lik.total / float(lik.weights[sample].sum())
        while gap > tolerance and iterations < max_iterations:
            step = _sqp_step(lik, x, d, grad, sample, scale)
            if step is None:
                break
            x_new, d_new = step
            change = float(np.abs(x_new / x_new.sum() - x / x.sum()).max())
            x, d = x_new, d_new
            iterations += 1
            gap, grad = _gap(lik, x, d)
            history.append(gap)
    total = x.sum()
    table = x / total
    ll = lik.log_likelihood(d / total)
    return FitResult(table=table, iterations=iterations, converged=gap <= tolerance, gap=max(gap, 0.0),
                     log_likelihood=ll, max_change=change, seconds=time.perf_counter() - started, method=method,
                     history=history)


def _sqp_step(lik: ProductLikelihood, x: Array, d: Array, grad: Array, sample: npt.NDArray[np.intp] | None,
              scale: float) -> tuple[Array, Array] | None:
    """One mix-SQP step: the quadratic model's non-negative minimizer, then an Armijo line search."""
    import scipy.linalg as sl
    from scipy.optimize import nnls

    total = lik.total
    g = 1.0 - grad / total
    with np.errstate(divide="ignore", invalid="ignore"):
        curvature = np.where(d > 0, lik.weights / (d * d), 0.0)
    hess = lik.hessian(curvature, sample, scale) / total
    n_cells = x.size
    ridge = 1e-10 * max(float(np.trace(hess)) / n_cells, 1e-300)
    hess[np.diag_indices(n_cells)] += ridge
    try:
        chol = sl.cholesky(hess, lower=False, check_finite=False)
    except np.linalg.LinAlgError:
        hess[np.diag_indices(n_cells)] += 1e-6 * max(float(np.trace(hess)) / n_cells, 1e-300)
        chol = sl.cholesky(hess, lower=False, check_finite=False)
    # min 1/2 y'Hy + (g - Hx)'y over y >= 0  <=>  min ||R y - c|| with R'c = Hx - g.
    rhs = sl.solve_triangular(chol, hess @ x - g, trans="T", lower=False, check_finite=False)
    try:
        y, _ = nnls(chol, rhs, maxiter=max(50 * n_cells, 1000))
    except RuntimeError:  # pragma: no cover - nnls iteration limit
        return None
    delta = y - x
    slope = float(g @ delta)
    if not slope < 0.0:
        return None
    dd = lik.forward(delta)
    with np.errstate(divide="ignore"):
        f0 = -lik.log_likelihood(d) / total + float(x.sum())
    alpha = 1.0
    while alpha > 1e-12:
        d_new = d + alpha * dd
        positive = d_new > 0
        if positive.all() or not (lik.weights[~positive] > 0).any():
            f_new = -lik.log_likelihood(np.where(positive, d_new, 1.0)) / total + float(x.sum() + alpha * delta.sum())
            if f_new <= f0 + 1e-4 * alpha * slope:
                return np.maximum(x + alpha * delta, 0.0), d_new
        alpha *= 0.5
    return None
