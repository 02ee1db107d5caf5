"""The outside strings' estimated Bloom-bit rates in the table's covariance (private).

With outside strings, Other's bit probabilities ``o[r, j]`` (row ``r``: a fold of the reports
within a cohort) hold the outside strings' Bloom-bit rates, estimated from the *other* folds'
bit counts (:func:`~rappor.analysis.association._other.outside_bit_rates`), with covariance
``Cov(o)``: the counts' binomial noise and the marginal shares' errors carried in.  The table
is then a two-step estimator, and its covariance is that of the second step alone plus the
first step's noise carried through (Murphy and Topel 1985, *J. Bus. Econ. Stat.* 3(4),
theorem 1, taking the two steps' noise as independent)::

    C + C G Cov(o) G' C,    G[cell, (r, j)] = d^2 loglik / d pi_cell d o[r, j]

where ``C`` is the inverse information of the table.  For the patterns ``i`` of row ``r``, with
``L_i`` the likelihood row, ``d_i = L_i . pi`` and ``rho_i`` the posterior probability of
variable ``v``'s Other::

    G[cell, (r, j)] = sum_i n_i (L_i[cell] / d_i) (1{cell is in v's Other} - rho_i)
                      (x_ij / o[r, j] - (1 - x_ij) / (1 - o[r, j]))

(``x_ij`` the report's bit).  With the exact likelihood of each client's reports (rows are
clients, :mod:`~rappor.analysis.association._repeats`) the last factor is the derivative of the
client's ``log P(reports | Other)`` in ``o[r, j]`` (:func:`client_nuisance_products`).  The
independence is an approximation: the rates of one fold come from the other fold's reports,
but the marginal shares in them from every report.  On the 10 M design collection with outside
strings, the intervals covered 0.864 of the cells without this term, 0.886 with the binomial part
alone and 0.920 with both; with the true rates, 0.966 (``docs/notes/association-measurements.md``,
*Session 18*).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ..._util.bits import unpack_bits
from ._likelihood import Patterns
from ._mixture import ProductLikelihood
from ._other import OutsideNoise
from ._repeats import ClientReports, ClientSums, other_rate_scores, other_rows
from ._signed import SignedMaximum
from ._variables import Variable
from ._threads import in_ranges

__all__ = ["client_nuisance_products", "nuisance_covariance", "nuisance_score_products", "with_nuisance"]

Array = npt.NDArray[np.float64]

#: Patterns a block (the block's likelihood rows: ``BLOCK x cells`` floats).
BLOCK = 4096


def nuisance_score_products(lik: ProductLikelihood, table: Array, patterns: Patterns,
                            others: Sequence[tuple[int, int, Array, OutsideNoise] | None]) -> Array:
    """``G Cov(o) G'`` summed over the variables whose Other has estimated rates.

    Parameters
    ----------
    lik : ProductLikelihood
        Over ``patterns`` (the same rows, in the same order).
    table : ndarray of float64, shape (cells,)
        The table at which to take the derivatives (the maximum).
    patterns : Patterns
        With ``folds`` (each pattern's fold of reports).
    others : sequence of (num_bloombits, num_cohorts, probabilities, noise) or None
        Per variable: Other's bit probabilities ``o`` of shape (F m, k) and their
        :class:`~rappor.analysis.association._other.OutsideNoise`; ``None`` for a variable whose
        Other (if any) has no estimated rates.

    Returns
    -------
    ndarray of float64, shape (cells, cells)
    """
    size = lik.size
    out = np.zeros((size, size))
    fold_of = patterns.folds
    if fold_of is None:
        return out
    table = np.asarray(table, dtype=np.float64).reshape(-1)
    parts = []
    for axis, entry in enumerate(others):
        if entry is None:
            continue
        k, m, probs, noise = entry
        in_other = np.zeros(lik.shape, dtype=bool)
        in_other[(slice(None),) * axis + (-1,)] = True
        # The score x / o - (1 - x) / (1 - o) is x alpha - beta: one product with the bits per run.
        alpha, beta = (1.0 / probs + 1.0 / (1.0 - probs)).reshape(-1, m, k), (1.0 / (1.0 - probs)).reshape(-1, m, k)
        parts.append((axis, k, m, in_other.reshape(-1), alpha, beta, fold_of * m + patterns.cohorts, noise))
    if not parts:
        return out

    def work(start: int, stop: int) -> list[Array]:
        # G's columns in the order of Other's rows (fold, cohort) and bits, one array a variable.
        gs = [np.zeros((size, alpha.shape[0], m, k)) for _, k, m, _, alpha, _, _, _ in parts]
        for lo in range(start, stop, BLOCK):
            hi = min(lo + BLOCK, stop)
            rows = np.ascontiguousarray(lik.full_rows(lo, hi))  # the coded factors' blocks come column-major
            d = rows @ table
            with np.errstate(divide="ignore", invalid="ignore"):
                weight = np.where(d > 0, lik.weights[lo:hi] / d, 0.0)
            weighted = rows * weight[:, None]  # n_i L_i / d_i, shared by the variables
            for g, (axis, k, m, in_other, alpha, beta, row_of, _) in zip(gs, parts):
                with np.errstate(divide="ignore", invalid="ignore"):
                    rho = np.where(d > 0, rows[:, in_other] @ table[in_other] / d, 0.0)
                a = weighted * (in_other[None, :] - rho[:, None])
                bits = unpack_bits(patterns.words[axis][lo:hi], k).astype(np.float64)
                r = row_of[lo:hi]  # sorted by (cohort, fold) (group_reports): each row one run
                cuts = np.concatenate(([0], np.flatnonzero(np.diff(r)) + 1, [hi - lo])).tolist()
                for first, last in zip(cuts[:-1], cuts[1:]):
                    f, c = divmod(int(r[first]), m)
                    g[:, f, c, :] += (a[first:last].T @ bits[first:last]) * alpha[f, c] \
                        - np.outer(a[first:last].sum(axis=0), beta[f, c])
        return gs

    per_range = in_ranges(work, lik.rows, BLOCK)
    for v, part in enumerate(parts):
        out += _noise_products(np.add.reduce([gs[v] for gs in per_range]).reshape(size, -1), part[-1])
    return out


def _noise_products(g: Array, noise: OutsideNoise) -> Array:
    """``G Cov(o) G'`` with ``Cov(o) = diag(variance) + directions directions'``."""
    along = g @ noise.directions
    out: Array = (g * noise.variance) @ g.T + along @ along.T
    return out


def client_nuisance_products(lik: ProductLikelihood, table: Array, variables: Sequence[Variable],
                             selections: Sequence[tuple[Any, ...]], noises: Sequence[OutsideNoise | None],
                             reports: ClientReports, kept: npt.NDArray[np.bool_]) -> Array:
    """``G Cov(o) G'`` where the likelihood's rows are clients (the exact likelihood of their reports).

    Parameters
    ----------
    lik : ProductLikelihood
        Rows: the clients of ``kept`` in the order of their codes.
    table : ndarray of float64, shape (cells,)
    variables, selections, noises
        Per variable: the variable, its ``(columns, labels, marginal, other)`` and the noise of
        ``other`` (None: no estimated rates).
    reports : ClientReports
        Each variable's per-client sums and each client's fold (Other's rows by fold), as the
        factors were made from (:func:`~rappor.analysis.association._repeats.client_reports`).
    kept : ndarray of bool
        Per client code: whether it is a row of ``lik`` (not impossible under every category).
    """
    size = lik.size
    out = np.zeros((size, size))
    table = np.asarray(table, dtype=np.float64).reshape(-1)
    code_of_row = np.flatnonzero(kept)
    for axis, (var, sel, noise, sums) in enumerate(zip(variables, selections, noises, reports.sums)):
        if noise is None:
            continue
        params, probs = var.params, np.asarray(sel[3], dtype=np.float64)
        row_of = other_rows(params, probs, sums, reports.fold)[code_of_row]
        in_other = np.zeros(lik.shape, dtype=bool)
        in_other[(slice(None),) * axis + (-1,)] = True
        in_other = in_other.reshape(-1)
        g = np.zeros((size, probs.shape[0], params.num_bloombits))
        order = np.argsort(row_of, kind="stable")
        cuts = np.concatenate(([0], np.flatnonzero(np.diff(row_of[order])) + 1, [order.size])).tolist()
        for first, last in zip(cuts[:-1], cuts[1:]):  # Other's rows, one at a time
            row = int(row_of[order[first]])
            for lo in range(first, last, BLOCK):
                chunk = order[lo:min(lo + BLOCK, last)]
                rows = lik.take_rows(chunk)
                d = rows @ table
                with np.errstate(divide="ignore", invalid="ignore"):
                    weight = np.where(d > 0, lik.weights[chunk] / d, 0.0)
                    rho = np.where(d > 0, rows[:, in_other] @ table[in_other] / d, 0.0)
                a = rows * weight[:, None] * (in_other[None, :] - rho[:, None])
                codes = code_of_row[chunk]
                mine = ClientSums(sums.cohorts[codes], sums.reports[codes], sums.ones[codes])
                g[:, row, :] += a.T @ other_rate_scores(params, probs, mine, row)
        out += _noise_products(g.reshape(size, -1), noise)
    return out


def nuisance_covariance(covariance: Array, products: Array) -> Array:
    """``C + C (G Cov(o) G') C``: the table's covariance with the rates' noise carried through."""
    finite = np.isfinite(covariance)
    c = np.where(finite, covariance, 0.0)
    extra = c @ products @ c
    out: Array = np.where(finite, covariance + extra, covariance)
    return out


def with_nuisance(lik: ProductLikelihood, table: Array, patterns: Patterns | None, variables: Sequence[Variable],
                  selections: Sequence[tuple[Any, ...]], noises: Sequence[OutsideNoise | None], covariance: Array,
                  signed: SignedMaximum | None, extra: Array | None = None) -> tuple[Array, SignedMaximum | None]:
    """The covariance of the table, and of its signed maximum, with the rates' noise carried through.

    ``noises`` holds, per variable, the :class:`~rappor.analysis.association._other.OutsideNoise`
    of Other's bit probabilities (the fourth entry of its selection) or ``None``.  ``extra``, when
    given, is added to the products ``G Cov(o) G'`` (the clients' repeated reports:
    :func:`~rappor.analysis.association._clusters.cluster_score_products`).  Without ``patterns``
    (the likelihood's rows are clients) ``extra`` holds the products
    (:func:`client_nuisance_products`).
    """
    products = np.zeros(covariance.shape) if patterns is None else nuisance_score_products(lik, table, patterns, [
        None if noise is None else (var.params.num_bloombits, var.params.num_cohorts, sel[3], noise)
        for var, sel, noise in zip(variables, selections, noises)])
    if extra is not None:
        products += extra
    if signed is not None:
        signed = signed._replace(covariance=nuisance_covariance(signed.covariance, products))
    return nuisance_covariance(covariance, products), signed
