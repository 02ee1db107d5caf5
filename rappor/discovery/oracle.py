"""A frequency oracle over one slot of discovery reports: any fragment's count, cheaply.

For slot ``s`` with ``n_c`` reports in cohort ``c`` and ``y_cj`` ones on bit ``j``:

* debiased Bloom counts ``t_cj = (y_cj - p01 n_c) / (p11 - p01)`` (google/rappor
  ``decode.R``, ``EstimateBloomCounts``), with variance ``n_c r (1 - r) / (p11 - p01)**2``
  where ``r = y_cj / n_c``;
* for a fragment ``x`` setting bits ``J_c(x)`` (``h`` hashes) in cohort ``c``, every other
  client's value sets a given bit with probability ``beta = 1 - (1 - 1/k)**h`` on average
  over the hash functions, so ``E[mean_{j in J_c(x)} t_cj] = N_c(x) + beta (n_c - N_c(x))``
  and ``N_c(x) = (mean_j t_cj - beta n_c) / (1 - beta)`` is unbiased over the hashing;
  the estimate is ``N(x) = sum_c N_c(x)``.  This is the count-mean sketch estimator
  (Apple, "Learning with Privacy at Scale", 2017) read off RAPPOR's per-cohort Bloom
  filters, with RAPPOR's debiasing.
* Its noise has two parts: the randomized response (from the variances above) and the
  other values' ones on the same bits (*collisions*).  The second is estimated from the
  data: a fragment nobody holds picks ``h`` bits at random in each cohort, so its
  estimate has variance ``sum_c Var_j(t_cj) / (h (1 - beta)**2)`` where ``Var_j`` is the
  spread of the debiased counts over the cohort's bits (the "random string" null of the
  decoder, in closed form).  The standard error adds the excess of that spread over the
  randomized-response part, so that z-scores of absent fragments stay standard normal
  when heavy values collide.

:meth:`SlotOracle.score` is linear in the number of fragments (one hash per fragment and
cohort, ``h`` look-ups), so prefix extensions over all 256 bytes are cheap.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ..aggregate import Aggregate
from ..exceptions import IncompatibleParamsError
from ..hashing import reduce_words, split_hash_words
from ..randomizer import debias
from .spec import DiscoverySpec

__all__ = ["SlotOracle"]

Array = npt.NDArray[np.float64]

#: Fragments hashed at once (bounds the temporaries to a few tens of MB).
_BLOCK = 1 << 15


class SlotOracle:
    """Estimate the number of reports of any fragment in one slot of a discovery aggregate.

    Parameters
    ----------
    aggregate : Aggregate
        Discovery reports' counts, under ``spec.wire_params``.
    spec : DiscoverySpec
    slot : int
        In ``[0, spec.levels)``.
    """

    def __init__(self, aggregate: Aggregate, spec: DiscoverySpec, slot: int) -> None:
        if aggregate.params != spec.wire_params:
            msg = (f"The discovery counts were made with {aggregate.params!r}; the discovery layout needs "
                   f"{spec.wire_params!r} (num_cohorts = levels x cohorts per slot).")
            raise IncompatibleParamsError(msg)
        params = spec.params
        md, k, h = params.num_cohorts, params.num_bloombits, params.num_hashes
        self.spec = spec
        self.slot = slot
        self.cohorts = np.arange(slot * md, (slot + 1) * md, dtype=np.int64)
        n = aggregate.reports_per_cohort[slot * md:(slot + 1) * md].astype(np.float64)
        y = aggregate.bit_counts[slot * md:(slot + 1) * md].astype(np.float64)
        d = params.p11 - params.p01
        self.n_reports = float(n.sum())
        self.n_cohort = n
        self.background = n.copy()  # reports not explained by fitted fragments, per cohort
        self._tail_key: tuple[bytes, ...] | None = None
        self._tail_words = np.zeros((0, md, h), dtype=np.uint64)
        self.beta = 1.0 - (1.0 - 1.0 / k) ** h
        self.t: Array = debias(y, params.p01 * n[:, None], d)
        rate = np.divide(y, n[:, None], out=np.zeros_like(y), where=n[:, None] > 0)
        self.var_t: Array = n[:, None] * rate * (1.0 - rate) / d**2
        self._set_null()

    def _set_null(self) -> None:
        """Null variance of an absent fragment's estimate and its collision part (module docstring)."""
        h, k = self.spec.params.num_hashes, self.spec.params.num_bloombits
        spread = self.t.var(axis=1) if k > 1 else np.zeros(self.cohorts.size)
        null_var = float(spread.sum()) / (h * (1.0 - self.beta) ** 2)
        rr_var = float(self.var_t.mean(axis=1).sum()) / (h * (1.0 - self.beta) ** 2)
        self.collision_var = max(null_var - rr_var, 0.0)
        self.null_std_error = float(np.sqrt(max(null_var, rr_var)))

    def explain(self, fragments: Sequence[tuple[bytes, bytes]]) -> Array:
        """Fit the counts of ``(head, tail)`` fragments jointly and subtract them from the slot.

        Least squares on ``t_cj - beta n_c = sum_x N(x) (n_c / n) (1[j in J_c(x)] - beta)``
        over every (cohort, bit), i.e. each fitted fragment spread over the cohorts in
        proportion to their reports.  Afterwards the debiased counts hold the residual
        (``t`` minus the fitted fragments' ones), the background is the unexplained
        reports, and the collision variance is re-estimated from the residual, so the
        heavy fragments' ones no longer pass for other fragments' (collisions are the
        main noise of prefix extension over bytes).

        Returns
        -------
        ndarray of shape (len(values),)
            The fitted counts (scores read afterwards leave them out: add them back
            for these fragments).
        """
        if not fragments:
            return np.zeros(0)
        md, k = self.cohorts.size, self.spec.params.num_bloombits
        idx = self.spec.fragment_bits(list(fragments), self.slot)  # (R, md, h)
        r = idx.shape[0]
        share = self.n_cohort / max(self.n_reports, 1.0)
        ind = np.zeros((md * k, r))
        rows = (np.arange(md)[None, :, None] * k + idx).reshape(r, -1)
        cols = np.repeat(np.arange(r), rows.shape[1])
        ind[rows.reshape(-1), cols] = 1.0
        design = (ind - self.beta) * np.repeat(share, k)[:, None]
        target = (self.t - self.beta * self.background[:, None]).reshape(-1)
        # Normal equations (R x R): the design has md * k rows but few columns.
        coef, *_ = np.linalg.lstsq(design.T @ design, design.T @ target, rcond=None)
        fitted = (ind * np.repeat(share, k)[:, None]) @ coef
        self.t = self.t - fitted.reshape(md, k)
        self.background = self.background - share * float(coef.sum())
        self._set_null()
        out: Array = np.asarray(coef, dtype=np.float64)
        return out

    def _gather(self, idx: npt.NDArray[np.integer], t: Array) -> tuple[Array, Array]:
        """Estimates and randomized-response variances from bit indices of shape ``(F, m, h)``."""
        h = idx.shape[2]
        k = self.spec.params.num_bloombits
        scale = 1.0 - self.beta
        flat = idx.astype(np.intp, copy=False) + (np.arange(self.cohorts.size, dtype=np.intp) * k)[None, :, None]
        if h == 1:
            flat = flat[:, :, 0]
            est = np.take(t, flat).sum(axis=1)
            var = np.take(self.var_t, flat).sum(axis=1)
        else:
            est = np.take(t, flat).sum(axis=(1, 2)) / h
            var = np.take(self.var_t, flat).sum(axis=(1, 2)) / (h * h)
        est = (est - self.beta * float(self.background.sum())) / scale
        return est, var / scale**2

    def score_values(self, values: Sequence[bytes], *, residual: Array | None = None) -> tuple[Array, Array]:
        """Estimated reports of the fragments of ``values`` in this slot, and standard errors.

        Parameters
        ----------
        values : sequence of bytes
            Client values (their fragment in this slot is scored: a prefix, or the whole
            value when it is short enough).
        residual : ndarray of shape (m, k), optional
            Debiased counts to read instead of the slot's.

        Returns
        -------
        estimate, std_error : ndarray of shape (len(values),)
        """
        t = self.t if residual is None else residual
        est = np.empty(len(values))
        var = np.empty(len(values))
        for start in range(0, len(values), _BLOCK):
            idx = self.spec.bloom_bits(values[start:start + _BLOCK], self.slot)
            e, v = self._gather(idx.astype(np.intp), t)
            est[start:start + e.size], var[start:start + e.size] = e, v
        return est, np.sqrt(var + self.collision_var)

    def score_extensions(self, heads: Sequence[bytes], tails: Sequence[bytes], *,
                         residual: Array | None = None) -> tuple[Array, Array]:
        """Estimates and standard errors of every fragment ``(head, tail)``, ``head`` in ``heads``.

        The tails are hashed once for all heads (:func:`rappor.hashing.split_hash_words`).

        Returns
        -------
        estimate, std_error : ndarray of shape (len(heads), len(tails))
        """
        t = self.t if residual is None else residual
        h = self.spec.params.num_hashes
        k = self.spec.params.num_bloombits
        head_words = split_hash_words(list(heads), self.cohorts, h, tail=False)
        key = tuple(tails) if not isinstance(tails, tuple) else tails
        if self._tail_key != key:
            self._tail_key, self._tail_words = key, split_hash_words(list(tails), self.cohorts, h, tail=True)
        tail_words = self._tail_words
        est = np.empty((len(heads), len(tails)))
        var = np.empty((len(heads), len(tails)))
        step = max(1, _BLOCK // max(1, h))
        for i in range(len(heads)):
            for start in range(0, len(tails), step):
                words = tail_words[start:start + step] + head_words[i][None, :, :]
                e, v = self._gather(reduce_words(words, k).astype(np.intp), t)
                est[i, start:start + e.size], var[i, start:start + e.size] = e, v
        return est, np.sqrt(var + self.collision_var)
