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
    Beyond a subsample size (:meth:`ProductLikelihood.hessian_rows`) the step's Hessian comes from a fixed random
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

import contextlib
import copy
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypeVar

import numpy as np
import numpy.typing as npt

from ..._util.lazy import lazy_module
from ._likelihood import CodedLikelihood, Factor
from ._threads import in_ranges

if TYPE_CHECKING:
    import scipy.linalg as sl
    import threadpoolctl  # a declared dependency
    from scipy import optimize
else:  # imported on first use: keeps `import rappor` light
    sl = lazy_module("scipy.linalg")
    optimize = lazy_module("scipy.optimize")
    threadpoolctl = lazy_module("threadpoolctl")  # a declared dependency

__all__ = ["FitResult", "ProductLikelihood", "fit_mixture"]

Array = npt.NDArray[np.float64]
Method = Literal["sqp", "em"]
_T = TypeVar("_T")

#: Patterns per block of the passes over the data (bounds the temporaries).
BLOCK_ROWS = 1 << 12
#: Most cells of a block's expanded first factor (per thread): blocks of a wide factor are shorter.
BLOCK_CELLS = 1 << 20
#: Above this many patterns, the SQP step's Hessian is computed on a subsample of this size.
HESSIAN_ROWS = 1 << 15
#: SQP stops when this many steps in a row move no cell of the table by more than STALL_CHANGE
#: (relative to its sum): the gap's certificate is then at its numerical floor (10 M reports, outside
#: strings: the independence fit's gap held at 0.44 for 990 of its 1000 steps, each moving the table by
#: about 1e-16: the whole decode took 2,481 s of CPU, 59 s with this stop).
STALL_STEPS, STALL_CHANGE = 5, 1e-12
#: Distinct likelihood rows of the 2nd..last variables up to which the Hessian is assembled
#: per distinct row (a boolean has 2): ``G X^2`` work instead of ``G (X Y)^2``.
_FEW_PATTERNS = 64


def _block(factor: Factor, lo: int, hi: int) -> Array:
    return factor.block(lo, hi) if isinstance(factor, CodedLikelihood) else factor[lo:hi]


def _take(factor: Factor, rows: npt.NDArray[np.intp]) -> Array:
    return factor.take(rows) if isinstance(factor, CodedLikelihood) else factor[rows]


class ProductLikelihood:
    """Per-pattern likelihood rows ``L_i = L1_i (x) L2_i (x) ...`` with weights, and the passes over them.

    Parameters
    ----------
    factors : sequence of ndarray of float64 of shape (G, C_j), or CodedLikelihood
        Likelihood of each category of variable ``j`` for each pattern.  Every pass runs
        over blocks of :data:`BLOCK_ROWS` patterns, expanding coded factors block by block.
    weights : ndarray of float64, shape (G,)
    """

    def __init__(self, factors: Sequence[Factor], weights: Array) -> None:
        # Narrow factors (a boolean) are expanded: they are small, and dense ones let the
        # Hessian be assembled per distinct row (see hessian).
        self.factors = [f if isinstance(f, CodedLikelihood) and f.shape[1] > 8
                        else np.asarray(f.dense() if isinstance(f, CodedLikelihood) else f, dtype=np.float64)
                        for f in factors]
        self.weights = np.asarray(weights, dtype=np.float64)
        self.shape = tuple(int(f.shape[1]) for f in self.factors)
        self.size = int(np.prod(self.shape))
        self.rows = int(self.weights.shape[0])
        self.total = float(self.weights.sum())
        self._pattern_ids: npt.NDArray[np.int64] | None = None
        self._patterns: Array | None = None
        rest_dense = all(isinstance(f, np.ndarray) for f in self.factors[1:])
        if len(self.factors) > 1 and rest_dense and self.rows and self.size // self.shape[0] <= 64:
            rest = self._rest_rows(0, self.rows)
            keys = np.ascontiguousarray(rest).view(np.dtype((np.void, rest.shape[1] * 8))).reshape(-1)
            _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
            if first.size <= _FEW_PATTERNS:
                self._pattern_ids = inverse.reshape(-1).astype(np.int64)
                self._patterns = rest[first]

    def _rest_rows(self, lo: int, hi: int, rows: npt.NDArray[np.intp] | None = None) -> Array:
        """``L2_i (x) L3_i (x) ...`` for rows ``lo:hi`` (or ``rows``), shape (n, C_2 ... C_J)."""
        def get(f: Factor) -> Array:
            return _block(f, lo, hi) if rows is None else _take(f, rows)

        out = get(self.factors[1])
        for f in self.factors[2:]:
            nxt = get(f)
            out = (out[:, :, None] * nxt[:, None, :]).reshape(out.shape[0], -1)
        return out

    def full_rows(self, lo: int, hi: int) -> Array:
        """``L_i`` of patterns ``lo:hi``, shape (hi - lo, cells) (flat, C order), up to a factor per row."""
        first = _block(self.factors[0], lo, hi)
        rest = self._rest_block(lo, hi)
        out: Array = first if rest is None else (first[:, :, None] * rest[:, None, :]).reshape(hi - lo, -1)
        return out

    def take_rows(self, rows: npt.NDArray[np.intp]) -> Array:
        """``L_i`` of the patterns ``rows`` (any order, repeats allowed), shape (len(rows), cells), row-major,
        up to a factor per row."""
        first = _take(self.factors[0], rows)
        if len(self.factors) == 1:
            return np.ascontiguousarray(first)
        rest = self._rest_rows(0, 0, rows)
        out: Array = (first[:, :, None] * rest[:, None, :]).reshape(rows.size, -1)
        return out

    def _blocks(self, start: int = 0, stop: int | None = None) -> list[tuple[int, int]]:
        stop = self.rows if stop is None else stop
        step = self._block_rows()
        return [(lo, min(lo + step, stop)) for lo in range(start, stop, step)]

    def _block_rows(self) -> int:
        """Patterns per block: :data:`BLOCK_ROWS`, fewer when the first factor is wide (each thread
        expands a block of it: 4,096 x 2,001 float64 would be 66 MB a thread)."""
        return max(256, min(BLOCK_ROWS, BLOCK_CELLS // max(self.shape[0], 1)))

    def _parallel(self, work: Callable[[int, int], _T], rows: int | None = None, step: int | None = None) -> list[_T]:
        """``work(start, stop)`` over the threads' contiguous ranges of ``rows`` (multiples of ``step``,
        a block by default; :func:`~rappor.analysis.association._threads.in_ranges`)."""
        return in_ranges(work, self.rows if rows is None else rows, self._block_rows() if step is None else step)

    def _rest_block(self, lo: int, hi: int) -> Array | None:
        """:meth:`_rest_rows` of rows ``lo:hi``, or ``None`` with a single variable."""
        return None if len(self.factors) == 1 else self._rest_rows(lo, hi)

    @staticmethod
    def _dot(block: Array, tab: Array, rest: Array | None) -> Array:
        """``L_i . table`` for a block's rows (``block`` of the first factor, ``rest`` of the others)."""
        part = block @ tab
        out: Array = part[:, 0] if rest is None else np.einsum("ij,ij->i", part, rest)
        return out

    @staticmethod
    def _add_weighted(acc: Array, block: Array, rest: Array | None, v: Array) -> None:
        """``acc += sum_i v_i L_i`` over a block's rows (``acc`` of shape (C_1, C_2 ... C_J))."""
        if rest is None:
            acc[:, 0] += block.T @ v
        else:
            acc += block.T @ (rest * v[:, None])

    def _summed(self, add: Callable[[Array, int, int], None]) -> Array:
        """``add(acc, lo, hi)`` over every block into one accumulator a thread's range, then summed (flat)."""
        def work(start: int, stop: int) -> Array:
            acc = np.zeros((self.shape[0], self.size // self.shape[0]))
            for lo, hi in self._blocks(start, stop):
                add(acc, lo, hi)
            return acc

        out: Array = np.add.reduce(self._parallel(work)).reshape(-1)
        return out

    def forward(self, table: Array) -> Array:
        """``d_i = L_i . table`` for every pattern (``table`` flat, C order)."""
        first = self.factors[0]
        tab = table.reshape(self.shape[0], -1)
        out = np.empty(self.rows)

        def work(start: int, stop: int) -> None:
            for lo, hi in self._blocks(start, stop):
                out[lo:hi] = self._dot(_block(first, lo, hi), tab, self._rest_block(lo, hi))

        self._parallel(work)
        return out

    def gradient(self, v: Array) -> Array:
        """``sum_i v_i L_i`` (flat, C order)."""
        first = self.factors[0]
        if (isinstance(first, CodedLikelihood) and first.sums is not None
                and all(isinstance(f, np.ndarray) for f in self.factors[1:])):
            # Thousands of candidates: from the reports' bit-pair sums, no block expanded (_pairs).
            m = v[:, None] if len(self.factors) == 1 else self._rest_rows(0, self.rows) * v[:, None]
            exact: Array = first.transpose_product(m).reshape(-1)
            return exact

        def add(acc: Array, lo: int, hi: int) -> None:
            self._add_weighted(acc, _block(first, lo, hi), self._rest_block(lo, hi), v[lo:hi])

        return self._summed(add)

    def forward_gradient(self, table: Array, base: Array | None = None) -> tuple[Array, Array]:
        """``L . table`` per pattern and the gradient ``sum_i (w_i / d_i) L_i`` at ``d = base + L . table``.

        :meth:`forward`, then :meth:`gradient` of ``w / d`` (0 where ``d <= 0``) in the same
        pass: each block of coded likelihoods is expanded once instead of twice (the
        expansion, not the products, is most of a pass's time: 0.27 ms against 0.05 ms for a
        4,096 x 69 block, measured).
        """
        first = self.factors[0]
        tab = table.reshape(self.shape[0], -1)
        d = np.empty(self.rows)

        def add(acc: Array, lo: int, hi: int) -> None:
            block, rest = _block(first, lo, hi), self._rest_block(lo, hi)
            d[lo:hi] = d_block = self._dot(block, tab, rest)
            if base is not None:
                d_block = d_block + base[lo:hi]
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(d_block > 0, self.weights[lo:hi] / d_block, 0.0)
            self._add_weighted(acc, block, rest, ratio)

        return d, self._summed(add)

    def hessian(self, v: Array, rows: npt.NDArray[np.intp] | None = None, scale: float = 1.0) -> Array:
        """``scale * sum_i v_i L_i L_i^T`` over ``rows`` (every pattern by default)."""
        first = self.factors[0]
        x_count, rest = self.shape[0], self.size // self.shape[0]
        n_cells = x_count * rest
        pattern_ids, patterns = self._pattern_ids, self._patterns
        structured = len(self.factors) > 1 and pattern_ids is not None and patterns is not None
        step = self._block_rows() if (len(self.factors) == 1 or structured) else max(1, BLOCK_ROWS * 64 // max(n_cells, 1))
        n_rows = self.rows if rows is None else rows.size
        n_pat = patterns.shape[0] if patterns is not None and structured else 1
        def work(start: int, stop: int) -> tuple[Array, Array]:
            grams = np.zeros((n_pat, x_count, x_count))
            out = np.zeros((n_cells, n_cells) if not structured and len(self.factors) > 1 else (0, 0))
            for lo in range(start, stop, step):
                hi = min(lo + step, stop)
                r = None if rows is None else rows[lo:hi]
                block = _block(first, lo, hi) if r is None else _take(first, r)
                root = np.sqrt(v[lo:hi] if r is None else v[r])
                # Products in float32, sums of blocks in float64: relative error about 1e-6,
                # twice as fast as float64 (the Hessian only shapes steps and standard errors).
                if len(self.factors) == 1:
                    a = (block * root[:, None]).astype(np.float32)
                    grams[0] += a.T @ a
                elif pattern_ids is not None and structured:
                    ids = pattern_ids[lo:hi] if r is None else pattern_ids[r]
                    a = (block * root[:, None]).astype(np.float32)
                    for pid in range(n_pat):
                        sel = a[ids == pid]
                        if sel.shape[0]:
                            grams[pid] += sel.T @ sel
                else:
                    rest_rows = self._rest_rows(lo, hi, r)
                    z = (block[:, :, None] * rest_rows[:, None, :]).reshape(hi - lo, n_cells) * root[:, None]
                    out += z.T @ z
            return grams, out

        parts = self._parallel(work, n_rows, step)
        grams, out = parts[0]
        for g, o in parts[1:]:  # in place, in range order: no stacked copy of every range's cells^2
            grams += g
            out += o
        if len(self.factors) == 1:
            single: Array = grams[0] * scale
            return single
        if patterns is not None and structured:
            out4 = np.zeros((x_count, rest, x_count, rest))
            for pid in range(n_pat):
                ell = patterns[pid]
                out4 += grams[pid][:, None, :, None] * np.outer(ell, ell)[None, :, None, :]
            return out4.reshape(n_cells, n_cells) * scale
        return out * scale

    def restrict(self, columns: npt.NDArray[np.intp]) -> ProductLikelihood:
        """The same likelihood over the first variable's categories ``columns`` only (sorted)."""
        out = copy.copy(self)
        first = self.factors[0]
        out.factors = [first.columns(columns) if isinstance(first, CodedLikelihood) else first[:, columns],
                       *self.factors[1:]]
        out.shape = (int(columns.size), *self.shape[1:])
        out.size = int(np.prod(out.shape))
        return out

    def cells_of(self, columns: npt.NDArray[np.intp]) -> npt.NDArray[np.intp]:
        """Flat indices (C order) of the cells whose first variable's category is in ``columns``."""
        rest = self.size // self.shape[0]
        out: npt.NDArray[np.intp] = (columns[:, None] * rest + np.arange(rest)[None, :]).reshape(-1)
        return out

    def hessian_rows(self) -> int:
        """Patterns of an SQP step's Hessian: about the work of two passes over the data.

        A pattern costs ``C_1^2`` in the Hessian when the other variables have few
        distinct rows (a boolean), ``cells^2`` otherwise, against ``cells`` in a pass;
        at least 64 a cell; clipped to ``[4096, HESSIAN_ROWS]`` (the step's Hessian only steers
        it; the gradient and the certificate use every pattern).
        """
        per_row = self.shape[0] ** 2 if (len(self.factors) == 1 or self._pattern_ids is not None) else self.size ** 2
        # At least 64 patterns a cell: with fewer the small cells' curvature is too noisy, and the
        # steps converge linearly (a 432-cell table of 100,000 patterns: 55 steps from 4,096
        # patterns, 6 from all of them; measured).
        return int(min(HESSIAN_ROWS, max(1 << 12, 64 * self.size, 2 * self.rows * self.size // max(per_row, 1))))

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


def _bound(lik: ProductLikelihood, x: Array, grad: Array) -> float:
    """Duality bound on ``l(pi*) - l(x / sum x)`` from the gradient ``G(x)`` of ``l`` at ``x``."""
    return float(x.sum() * grad.max() - lik.total)


def _gap(lik: ProductLikelihood, x: Array, d: Array) -> tuple[float, Array]:
    """Duality bound on ``l(pi*) - l(x / sum x)`` and the gradient ``G(x)`` of ``l`` at ``x``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(d > 0, lik.weights / d, 0.0)
    grad = lik.gradient(ratio)
    return _bound(lik, x, grad), grad


def fit_mixture(lik: ProductLikelihood, *, method: Method = "sqp", tolerance: float = 1e-3,
                max_iterations: int = 1000, em_epsilon: float = 1e-6, start: Array | None = None,
                rng: np.random.Generator | None = None) -> FitResult:
    """Maximize ``sum_i w_i log(L_i . pi)`` over the simplex.

    Parameters
    ----------
    lik : ProductLikelihood
    method : {"sqp", "em"}, default="sqp"
    tolerance : float, default=1e-3
        Stop when the certified gap to the maximum log-likelihood is at most this.  SQP also stops,
        unconverged, when :data:`STALL_STEPS` steps in a row leave the table unchanged to
        :data:`STALL_CHANGE`: the gap cannot then be certified any lower.
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
    d, grad = lik.forward_gradient(x)
    if ((d <= 0.0) & (lik.weights > 0)).any():  # a start that makes a report impossible: mix in the uniform table
        x = 0.99 * x / x.sum() + 0.01 / n_cells
        d, grad = lik.forward_gradient(x)
    history: list[float] = []
    gap = _bound(lik, x, grad)
    change = math.inf
    iterations = 0
    if method == "em":
        while gap > tolerance and iterations < max_iterations and change >= em_epsilon:
            new = x * grad / lik.total
            change = float(np.abs(new - x).max())
            x = new
            d, grad = lik.forward_gradient(x)
            iterations += 1
            gap = _bound(lik, x, grad)
            history.append(gap)
    else:
        gen = rng if rng is not None else np.random.default_rng(0)
        sample: npt.NDArray[np.intp] | None = None
        scale = 1.0
        rows = lik.hessian_rows()
        if lik.rows > rows:
            sample = np.sort(gen.choice(lik.rows, rows, replace=False))
            scale = lik.total / float(lik.weights[sample].sum())
        # Active set (outer loop): while some categories of the first variable have every cell at 0
        # with a non-negative objective gradient (they satisfy their optimality conditions), fit
        # over the others only -- each pass then costs the working set, not the table, which is
        # what makes a table of every candidate of a large map cheap -- then check every cell.
        stalled = False
        working: npt.NDArray[np.bool_] | None = None
        while gap > tolerance and iterations < max_iterations:
            # The categories with a cell above 0, and of the others those whose cells' gradient says
            # they should enter, the most negative first, at most as many as are in (at least 32).
            slope = (1.0 - grad / lik.total).reshape(lik.shape[0], -1).min(axis=1)
            free: npt.NDArray[np.bool_] = np.asarray((x > 0.0).reshape(lik.shape[0], -1).any(axis=1))
            enter = np.flatnonzero(~free & (slope < 0.0))
            free[enter[np.argsort(slope[enter], kind="stable")[:max(32, int(free.sum()))]]] = True
            if stalled and working is not None and np.array_equal(free, working):
                break  # the same working set again, whose fit no longer moves
            working = free
            if free.all() or type(lik) is not ProductLikelihood:
                x, d, gap, grad, iterations, change, stalled = _sqp_loop(
                    lik, x, d, gap, grad, tolerance, max_iterations, iterations, sample, scale, history)
                break
            columns = np.flatnonzero(free).astype(np.intp)
            cells = lik.cells_of(columns)
            sub = lik.restrict(columns)
            sub_gap, sub_grad = _gap(sub, x[cells], d)
            x_sub, d, _, _, iterations, change, stalled = _sqp_loop(
                sub, x[cells], d, sub_gap, sub_grad, tolerance / 2, max_iterations, iterations, sample, scale,
                history)
            x = np.zeros_like(x)
            x[cells] = x_sub
            gap, grad = _gap(lik, x, d)
            history.append(gap)
    total = x.sum()
    table = x / total
    ll = lik.log_likelihood(d / total)
    return FitResult(table=table, iterations=iterations, converged=gap <= tolerance, gap=max(gap, 0.0),
                     log_likelihood=ll, max_change=change, seconds=time.perf_counter() - started, method=method,
                     history=history)


def _sqp_loop(lik: ProductLikelihood, x: Array, d: Array, gap: float, grad: Array, tolerance: float,
              max_iterations: int, iterations: int, sample: npt.NDArray[np.intp] | None, scale: float,
              history: list[float]) -> tuple[Array, Array, float, Array, int, float, bool]:
    """mix-SQP steps from ``x`` until the certified gap is at most ``tolerance``, the iteration cap, or a stall.

    The last value returned says whether it stopped because :data:`STALL_STEPS` steps in a row moved
    the table by less than :data:`STALL_CHANGE`.
    """
    change = math.inf
    still = 0
    while gap > tolerance and iterations < max_iterations:
        step = _sqp_step(lik, x, d, grad, sample, scale)
        if step is None:
            break
        x_new, d_new, grad_new = step
        change = float(np.abs(x_new / x_new.sum() - x / x.sum()).max())
        x, d = x_new, d_new
        iterations += 1
        still = still + 1 if change < STALL_CHANGE else 0
        if grad_new is None:
            gap, grad = _gap(lik, x, d)
        else:
            grad = grad_new
            gap = _bound(lik, x, grad)
        history.append(gap)
        if still >= STALL_STEPS:
            return x, d, gap, grad, iterations, change, True
    return x, d, gap, grad, iterations, change, False


@contextlib.contextmanager
def _single_thread() -> Iterator[None]:
    """One BLAS thread for the small dense algebra of a step: with idle threads spinning on a
    busy machine, a 200 x 200 Cholesky took 0.3-0.7 s instead of 0.5 ms (measured)."""
    with threadpoolctl.threadpool_limits(limits=1, user_api="blas"):
        yield


def _nonnegative_qp(hess: Array, g: Array, x: Array) -> Array | None:
    """``argmin_{y >= 0} 1/2 y'Hy + (g - Hx)'y`` as ``min ||R y - c||`` with ``H = R'R`` and ``R'c = Hx - g``."""
    n_cells = x.size
    ridge = 1e-10 * max(float(np.trace(hess)) / n_cells, 1e-300)
    hess[np.diag_indices(n_cells)] += ridge
    try:
        chol = sl.cholesky(hess, lower=False, check_finite=False)
    except np.linalg.LinAlgError:
        hess[np.diag_indices(n_cells)] += 1e-6 * max(float(np.trace(hess)) / n_cells, 1e-300)
        chol = sl.cholesky(hess, lower=False, check_finite=False)
    # The Newton step itself first: near the maximum it is tiny against x, and solving for
    # y = x + step from scratch (below) loses it to rounding (|step| ~ 1e-8 came back as 1e-17 on
    # some BLAS kernels, and the fit stalled).  Only a step that leaves the orthant needs the NNLS.
    newton: npt.NDArray[np.float64] = x - sl.cho_solve((chol, False), g, check_finite=False)
    if (newton >= 0.0).all():
        return newton
    rhs = sl.solve_triangular(chol, hess @ x - g, trans="T", lower=False, check_finite=False)
    try:
        y, _ = optimize.nnls(chol, rhs, maxiter=max(50 * n_cells, 1000))
    except RuntimeError:  # pragma: no cover - nnls iteration limit
        return None
    out: Array = y
    return out


def _sqp_step(lik: ProductLikelihood, x: Array, d: Array, grad: Array, sample: npt.NDArray[np.intp] | None,
              scale: float) -> tuple[Array, Array, Array | None] | None:
    """One mix-SQP step: the quadratic model's non-negative minimizer, then an Armijo line search.

    Returns the new table, its ``d`` and, when the full step is taken (almost always near
    the maximum), the gradient there (computed in the same pass as the step's ``d``).
    """
    total = lik.total
    g = 1.0 - grad / total
    with np.errstate(divide="ignore", invalid="ignore"):
        curvature = np.where(d > 0, lik.weights / (d * d), 0.0)
    hess = lik.hessian(curvature, sample, scale) / total
    with _single_thread():
        y = _nonnegative_qp(hess, g, x)
    if y is None:  # pragma: no cover - nnls iteration limit
        return None
    delta = y - x
    slope = float(g @ delta)
    if not slope < 0.0:
        return None
    dd, grad_full = lik.forward_gradient(delta, base=d)
    with np.errstate(divide="ignore"):
        f0 = -lik.log_likelihood(d) / total + float(x.sum())
    if -slope <= 64 * np.finfo(np.float64).eps * (abs(f0) + 1.0) and (d + dd > 0).all():
        # The predicted decrease is below the rounding of f (the certified gap can still be above
        # the tolerance: it scales with the gradient, not with the decrease), so Armijo's test
        # would be decided by rounding and stall the fit; at that distance the unit Newton step
        # is the step to take (Nocedal & Wright, Numerical Optimization, 2nd ed., Thm. 3.5).
        return np.maximum(x + delta, 0.0), d + dd, grad_full
    alpha = 1.0
    while alpha > 1e-12:
        d_new = d + alpha * dd
        positive = d_new > 0
        if positive.all() or not (lik.weights[~positive] > 0).any():
            f_new = -lik.log_likelihood(np.where(positive, d_new, 1.0)) / total + float(x.sum() + alpha * delta.sum())
            if f_new <= f0 + 1e-4 * alpha * slope:
                return np.maximum(x + alpha * delta, 0.0), d_new, grad_full if alpha == 1.0 else None
        alpha *= 0.5
    return None
