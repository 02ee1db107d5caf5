"""google/rappor's association algorithm re-implemented plainly: the baseline of the measurements (private).

Follows ``analysis/R/association.R`` step by step, one row per report (no grouping),
for comparisons (``benchmarks/association.py``, ``docs/association.md``) and as an
independent check of the fast code:

* ``GetCondProb``: ``P(report | x) = prod_j P(r_j | Bloom_j(x))`` with ``pstar = p01``
  and ``qstar = p11`` -- computed here from the dense Bloom filters (each distinct bit
  once; the R code counts a bit twice when two hashes collide);
* ``UpdatePij`` / ``EM``: uniform start, ``pij <- mean_i(pij * L_i / sum(pij * L_i))``
  (a report with zero likelihood everywhere contributes zeros but still counts in the
  mean, as in R), stopping when no cell moves by ``epsilon = 1e-6`` or after
  ``max_em_iters`` (1000);
* ``ComputeVar``: ``solve(sum_i L_i L_i^T / (L_i . est)^2)``, the unconstrained inverse.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..._util.bits import unpack_bits
from ...client._reports import ReportBatch
from ._variables import Variable

__all__ = ["ReferenceFit", "reference_conditional_probabilities", "reference_em"]

Array = npt.NDArray[np.float64]


def reference_conditional_probabilities(batch: ReportBatch, var: Variable, columns: Sequence[int],
                                        prob_other: Array | None = None) -> Array:
    """``GetCondProb`` for every report: shape (n, len(columns)) or (n, len(columns) + 1) with "other"."""
    params = var.params
    k, m = params.num_bloombits, params.num_cohorts
    pstar, qstar = params.p01, params.p11
    bloom = var.candidate_map.matrix[:, list(columns)].toarray().reshape(m, k, len(columns))
    n = len(batch)
    out = np.empty((n, len(columns) + (prob_other is not None)))
    for lo in range(0, n, 1 << 14):  # in blocks: the (rows, k, X) temporaries stay small
        hi = min(lo + (1 << 14), n)
        bits = unpack_bits(batch.words[lo:hi], k).astype(np.float64)
        rows = bloom[batch.cohorts[lo:hi]]          # (rows, k, X): the Bloom bit of each candidate
        r = bits[:, :, None]
        per_bit = np.where(rows > 0, np.where(r > 0, qstar, 1 - qstar), np.where(r > 0, pstar, 1 - pstar))
        out[lo:hi, :len(columns)] = per_bit.prod(axis=1)
        if prob_other is not None:
            po = prob_other[batch.cohorts[lo:hi]]
            out[lo:hi, -1] = np.where(bits > 0, po, 1.0 - po).prod(axis=1)
    return out


@dataclass
class ReferenceFit:
    """``EM``'s output: the table, its SEs (``ComputeVar``) and the iterations run."""

    table: Array
    std_error: Array | None
    iterations: int


def reference_em(cond_probs: Sequence[Array], *, max_em_iters: int = 1000, epsilon: float = 1e-6,
                 estimate_var: bool = False) -> ReferenceFit:
    """``EM`` on the joint conditionals ``L_i = outer(cond_probs[0][i], cond_probs[1][i], ...)``.

    Each step is ``UpdatePij``: ``pij <- mean_i(pij * L_i / (pij . L_i))`` (a report with
    ``pij . L_i = 0`` adds zeros), written as ``pij * sum_i (L_i / d_i) / n`` with
    ``d_i = L_i . pij`` and computed from the per-variable factors (``L_i`` never formed):
    the same numbers as R's, without its ``n x cells`` temporaries.
    """
    n = cond_probs[0].shape[0]
    shape = tuple(c.shape[1] for c in cond_probs)
    first = cond_probs[0]

    def rest(lo: int, hi: int) -> Array:
        out = cond_probs[1][lo:hi] if len(cond_probs) > 1 else np.ones((hi - lo, 1))
        for c in cond_probs[2:]:
            out = (out[:, :, None] * c[lo:hi, None, :]).reshape(hi - lo, -1)
        return out

    blocks = [(lo, min(lo + (1 << 15), n)) for lo in range(0, n, 1 << 15)]

    def d_of(pij: Array) -> Array:
        tab = pij.reshape(shape[0], -1)
        return np.concatenate([np.einsum("ij,ij->i", first[lo:hi] @ tab, rest(lo, hi)) for lo, hi in blocks])

    def sum_over_reports(v: Array) -> Array:
        acc = np.zeros((shape[0], int(np.prod(shape)) // shape[0]))
        for lo, hi in blocks:
            acc += first[lo:hi].T @ (rest(lo, hi) * v[lo:hi, None])
        return acc.reshape(-1)

    pij = np.full(int(np.prod(shape)), 1.0 / int(np.prod(shape)))
    iterations = 0
    for iterations in range(1, max_em_iters + 1):
        d = d_of(pij)
        with np.errstate(divide="ignore"):
            inv = np.where(d > 0, 1.0 / d, 0.0)
        new = pij * sum_over_reports(inv) / n
        dif = float(np.abs(new - pij).max())
        pij = new
        if dif < epsilon:
            break
    se = None
    if estimate_var:
        d = d_of(pij)
        inform = np.zeros((pij.size, pij.size))
        for lo, hi in blocks:
            z = (first[lo:hi][:, :, None] * rest(lo, hi)[:, None, :]).reshape(hi - lo, -1) / d[lo:hi, None]
            inform += z.T @ z
        var_cov = np.linalg.solve(inform, np.eye(inform.shape[0]))
        se = np.sqrt(np.maximum(np.diag(var_cov), 0.0)).reshape(shape)
    return ReferenceFit(table=pij.reshape(shape), std_error=se, iterations=iterations)
