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
  randomized-response part, so that z-scores of absent fragments have variance one
  when heavy values collide.
* That null law has heavy tails: an absent fragment that lands, in a few cohorts, on
  the bits of frequent fragments nobody has fitted gets their counts there, and among
  millions of candidates some do.  The search therefore decides on the *trimmed*
  estimate (:meth:`SlotOracle.trimmed`: the ``m // 8`` largest and smallest per-cohort
  terms dropped), whose null mean and variance are simulated from the slot's own
  counts with random bit patterns (fixed seed).

Scoring is linear in the number of fragments.  The extensions of many prefixes by every
tail of the alphabet are one sparse matrix product (the bit index is additive, see
:mod:`rappor.analysis.discovery`): ``E R`` with ``E`` the tails' one-hot bits (``T x m h k``,
``m h`` ones a row) and ``R[(c, i, b), f] = t_c[(a_ci(f) + b) mod k]`` for head ``f``
(:meth:`SlotOracle.extensions_above`); 131,328 tails of one prefix cost about 5 ms.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ...collect._aggregate import Aggregate
from ...exceptions import IncompatibleParamsError
from ...client._randomizer import debias
from ._spec import DiscoverySpec

if TYPE_CHECKING:
    from scipy import sparse

__all__ = ["SlotOracle"]

Array = npt.NDArray[np.float64]

#: Fragments hashed at once (bounds the temporaries to a few tens of MB).
_BLOCK = 1 << 15
#: Random bit patterns behind the trimmed estimate's null law, and the seed they are drawn
#: with (plus the slot number): fixed, so the search is deterministic.
_NULL_DRAWS = 4096
_NULL_SEED = 0x5EED

#: Cells of one block of the sparse product (float32: 64 MB).
_CELLS = 1 << 24
#: Fragments scored exactly at once after the bound (bits and per-cohort terms: ~70 MB each at 32 cohorts).
_SCORE_BLOCK = 1 << 18


def _trimmed_mean_variance(alpha: float) -> float:
    """Variance of the alpha-trimmed mean of normal values over that of their mean.

    Asymptotic formula ``sigma_w**2 / (1 - 2 alpha)**2`` with the winsorized variance
    ``sigma_w**2 = (1 - 2 alpha) - 2 c phi(c) + 2 alpha c**2``, ``c = Phi^-1(1 - alpha)``
    (Huber 1981, sec. 3.3); within 1% of simulation for 8 to 64 values.
    """
    if alpha <= 0.0:
        return 1.0
    from scipy import special

    c = float(np.sqrt(2.0) * special.erfcinv(2.0 * alpha))
    phi = float(np.exp(-0.5 * c * c) / np.sqrt(2.0 * np.pi))
    winsorized = (1.0 - 2.0 * alpha) - 2.0 * c * phi + 2.0 * alpha * c * c
    return winsorized / (1.0 - 2.0 * alpha) ** 2


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
        self._tail_matrix_cache: Any = None
        self._tail_bits = np.zeros((0, md, h), dtype=np.int64)
        self.beta = 1.0 - (1.0 - 1.0 / k) ** h
        self.trim = md // 8
        self.trim_factor = _trimmed_mean_variance(self.trim / md)
        self._null_bits: npt.NDArray[np.int64] | None = None
        self.t: Array = debias(y, params.p01 * n[:, None], d)
        rate = np.divide(y, n[:, None], out=np.zeros_like(y), where=n[:, None] > 0)
        self.var_t: Array = n[:, None] * rate * (1.0 - rate) / d**2
        self._set_null()

    def _set_null(self) -> None:
        """Null variance of an absent fragment's estimate and its collision part (module docstring)."""
        h, k = self.spec.params.num_hashes, self.spec.params.num_bloombits
        md = self.cohorts.size
        denom = h * (1.0 - self.beta) ** 2
        rr = self.var_t.mean(axis=1)
        spread = self.t.var(axis=1) if k > 1 else np.zeros(md)
        null_var = float(spread.sum()) / denom
        rr_var = float(rr.sum()) / denom
        self.collision_var = max(null_var - rr_var, 0.0)
        self.null_std_error = float(np.sqrt(max(null_var, rr_var)))
        # The trimmed estimate's null law, by simulation: an absent fragment's bits are
        # uniform in every cohort, so the trimmed estimates of random bit patterns (drawn
        # once, with a fixed seed: the result is deterministic) give its mean (below 0
        # when the collisions are skewed: the trimming drops their large values, not the
        # small ones) and its variance.
        if self._null_bits is None:
            gen = np.random.default_rng(_NULL_SEED + self.slot)
            self._null_bits = gen.integers(0, k, size=(_NULL_DRAWS, md, h), dtype=np.int64)
        est, rr_null = self._trimmed_raw(self._null_bits)
        self.trim_offset = float(est.mean())
        self.trim_null_var = float(est.var())
        self.trim_rr_mean = float(rr_null.mean())

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

    def score_bits(self, idx: npt.NDArray[np.integer], *, robust: bool = False) -> tuple[Array, Array]:
        """Estimates and standard errors of fragments given by their bits, shape ``(F, m, h)``
        (:meth:`DiscoverySpec.fragment_bits`); ``robust`` for the trimmed estimate (:meth:`trimmed`)."""
        if robust:
            return self.trimmed(idx)
        est, var = self._gather(idx, self.t)
        return est, np.sqrt(var + self.collision_var)

    def trimmed(self, idx: npt.NDArray[np.integer]) -> tuple[Array, Array]:
        """Trimmed estimates and standard errors of fragments given by their bits, shape ``(F, m, h)``.

        The estimate is a sum over cohorts of ``y_c = (mean_i t_c,j_i - beta b_c) / (1 - beta)``
        (``b_c`` the cohort's unexplained reports).  Collisions make its null law
        heavy-tailed: an absent fragment that lands on the bits of frequent fragments
        nobody has fitted in a few cohorts gets their counts there.  The trimmed
        estimate drops the ``r = floor(m / 8)`` largest and ``r`` smallest ``y_c`` and
        scales the rest by ``m / (m - 2r)``; a true fragment's ``y_c`` are alike across
        cohorts (clients pick cohorts uniformly), so it loses little (for normal noise
        the variance grows by the factor ``sigma_w**2 / (1 - 2 alpha)**2`` of the
        alpha-trimmed mean, ``alpha = r / m``; Huber, *Robust Statistics*, 1981, sec. 3.3;
        1.08 at ``alpha = 1/8``).  The null law (an absent fragment's bits are uniform in
        each cohort) is simulated from the slot's own counts (:meth:`_set_null`): its
        mean is subtracted, its variance is the standard error, plus that factor times
        the excess of the fragment's randomized-response variance over an absent one's.
        """
        est, rr = self._trimmed_raw(idx)
        var = self.trim_null_var + self.trim_factor * np.maximum(rr - self.trim_rr_mean, 0.0)
        return est - self.trim_offset, np.sqrt(var)

    def _trimmed_raw(self, idx: npt.NDArray[np.integer]) -> tuple[Array, Array]:
        """Trimmed estimates before the null offset, and the randomized-response variances at the bits."""
        md = self.cohorts.size
        h = idx.shape[2]
        k = self.spec.params.num_bloombits
        scale = 1.0 - self.beta
        flat = idx.astype(np.intp, copy=False) + (np.arange(md, dtype=np.intp) * k)[None, :, None]
        y = (np.take(self.t, flat).mean(axis=2) - self.beta * self.background[None, :]) / scale  # (F, md)
        var = np.take(self.var_t, flat).sum(axis=(1, 2)) / (h * h) / scale**2
        r = self.trim
        if r > 0:
            y.sort(axis=1)
            est = y[:, r:md - r].sum(axis=1) * (md / (md - 2 * r))
        else:
            est = y.sum(axis=1)
        return est, var

    def score_pairs(self, fragments: Sequence[tuple[bytes, bytes]]) -> tuple[Array, Array]:
        """Estimated reports of ``(head, tail)`` fragments in this slot, and standard errors.

        Returns
        -------
        estimate, std_error : ndarray of shape (len(fragments),)
        """
        est = np.empty(len(fragments))
        var = np.empty(len(fragments))
        for start in range(0, len(fragments), _BLOCK):
            idx = self.spec.fragment_bits(fragments[start:start + _BLOCK], self.slot)
            e, v = self._gather(idx, self.t)
            est[start:start + e.size], var[start:start + e.size] = e, v
        return est, np.sqrt(var + self.collision_var)

    def score_values(self, values: Sequence[bytes]) -> tuple[Array, Array]:
        """Estimated reports of the fragments of client ``values`` in this slot, and standard errors.

        The fragment is a prefix, or the whole value when it is short enough
        (:meth:`DiscoverySpec.split`).

        Returns
        -------
        estimate, std_error : ndarray of shape (len(values),)
        """
        return self.score_pairs([self.spec.split(v, self.slot) for v in values])

    # ---------------------------------------------------------------- extensions: one sparse product
    def _tail_matrix(self, tails: Sequence[bytes]) -> tuple[sparse.csr_matrix, npt.NDArray[np.int64]]:
        """``E`` of shape ``(T, m h k)``: row ``t`` has a one at ``(c, i, b_ci(t))`` for every cohort and hash.

        With ``R[(c, i, b), f] = t_c[(a_ci(f) + b) mod k]`` for head ``f``, ``(E R)[t, f]`` is
        the sum over cohorts and hashes of the debiased counts at the fragment's bits
        (the index is additive, :mod:`rappor.analysis.discovery`).  Cached per tail list.
        """
        key = tuple(tails)
        if self._tail_key != key:
            from scipy import sparse as sp

            params = self.spec.params
            md, h, k = self.cohorts.size, params.num_hashes, params.num_bloombits
            bits = self.spec.part_bits(list(tails), self.slot, tail=True)  # (T, md, h)
            offsets = (np.arange(md * h, dtype=np.int64) * k).reshape(md, h)
            cols = (bits + offsets[None, :, :]).reshape(len(key), md * h)
            nnz = cols.size
            matrix = sp.csr_matrix((np.ones(nnz, dtype=np.float32), cols.reshape(-1).astype(np.int32),
                                    np.arange(0, nnz + 1, md * h, dtype=np.int64)), shape=(len(key), md * h * k))
            self._tail_key, self._tail_matrix_cache, self._tail_bits = key, matrix, bits
        return self._tail_matrix_cache, self._tail_bits

    def _rotated(self, arr: Array, head_bits: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        """``R[(c, i, b), f] = arr[c, (a_ci(f) + b) mod k]`` for heads' indices ``a`` of shape ``(F, m, h)``."""
        k = self.spec.params.num_bloombits
        f, md, h = head_bits.shape
        idx = (head_bits[:, :, :, None] + np.arange(k)[None, None, None, :]) % k  # (F, md, h, k)
        idx += (np.arange(md) * k)[None, :, None, None]
        out: npt.NDArray[np.float32] = np.take(arr, idx).reshape(f, md * h * k).T.astype(np.float32)
        return out

    def _chunk(self, n_tails: int) -> int:
        params = self.spec.params
        width = max(n_tails, self.cohorts.size * params.num_hashes * params.num_bloombits)
        return max(1, _CELLS // max(width, 1))

    def extension_estimates(self, heads: Sequence[bytes], tails: Sequence[bytes]) -> Array:
        """Estimated reports of every fragment ``(head, tail)``, shape ``(len(heads), len(tails))``."""
        matrix, _ = self._tail_matrix(tails)
        head_bits = self.spec.part_bits(list(heads), self.slot, tail=False)
        h = self.spec.params.num_hashes
        offset = self.beta * float(self.background.sum())
        out = np.empty((len(heads), len(tails)))
        step = self._chunk(len(tails))
        for start in range(0, len(heads), step):
            sums = matrix @ self._rotated(self.t, head_bits[start:start + step])  # (T, F)
            out[start:start + sums.shape[1]] = (sums.T / h - offset) / (1.0 - self.beta)
        return out

    def extensions_above(self, heads: Sequence[bytes], tails: Sequence[bytes], z_floor: float | Array, *,
                         robust: bool = False,
                         ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], Array, Array]:
        """Every fragment ``(heads[i], tails[j])`` whose z-score (estimate / standard error) is ``>= z_floor``
        (one level, or one per tail: ``z_floor[j]``; ``inf`` leaves a tail out).

        The estimates of all ``len(heads) * len(tails)`` fragments come from one sparse
        product per block of heads; a lower bound on the randomized-response variance
        (the smallest per bit, in each cohort) gives an upper bound on every z-score,
        and only the fragments above ``z_floor`` by that bound are scored exactly.  With
        ``robust``, the exact score is the trimmed one (:meth:`trimmed`), and the bound
        is taken one standard error lower (the two estimates differ by about a quarter
        of one).

        Returns
        -------
        head_index, tail_index, estimate, std_error : ndarray of shape (n,)
            Sorted by head, then tail.
        """
        matrix, tail_bits = self._tail_matrix(tails)
        head_bits = self.spec.part_bits(list(heads), self.slot, tail=False)
        params = self.spec.params
        h, k = params.num_hashes, params.num_bloombits
        scale = 1.0 - self.beta
        offset = self.beta * float(self.background.sum())
        var_low = float(self.var_t.min(axis=1).sum()) * h / (h * h) / scale**2
        floors = np.broadcast_to(np.asarray(z_floor, dtype=np.float64), (len(tails),))
        if robust:
            # The trimmed estimate differs from the sum by the trimmed cohorts: about a
            # quarter of a standard error for normal noise; one is left as margin.
            se_low, shift, pre = float(np.sqrt(self.trim_null_var)), self.trim_offset, floors - 1.0
        else:
            se_low, shift, pre = float(np.sqrt(var_low + self.collision_var)), 0.0, floors
        with np.errstate(invalid="ignore"):  # tails left out (inf) give inf - inf, then inf
            bound = pre * se_low + shift
            floor_sum = np.where((pre > 0) & (se_low > 0), (bound * scale + offset) * h, -np.inf)
            floor_col = (floor_sum - 1e-3 * np.abs(floor_sum)).astype(np.float32)[:, None]
        floor_col[np.isposinf(floors)] = np.inf
        found_h: list[npt.NDArray[np.int64]] = []
        found_t: list[npt.NDArray[np.int64]] = []
        step = self._chunk(len(tails))
        for start in range(0, len(heads), step):
            sums = matrix @ self._rotated(self.t, head_bits[start:start + step])  # (T, F)
            ti, fi = np.nonzero(sums >= floor_col)
            found_h.append(fi.astype(np.int64) + start)
            found_t.append(ti.astype(np.int64))
        hi = np.concatenate(found_h) if found_h else np.zeros(0, dtype=np.int64)
        ti = np.concatenate(found_t) if found_t else np.zeros(0, dtype=np.int64)
        # Exact scores block by block: millions of fragments can pass the bound at 10 M
        # clients, and their bits and per-cohort terms would take gigabytes at once.
        kept: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], Array, Array]] = []
        for start in range(0, hi.size, _SCORE_BLOCK):
            bh, bt = hi[start:start + _SCORE_BLOCK], ti[start:start + _SCORE_BLOCK]
            est, se = self.score_bits((head_bits[bh] + tail_bits[bt]) % k, robust=robust)
            keep = est >= floors[bt] * se
            kept.append((bh[keep], bt[keep], est[keep], se[keep]))
        if not kept:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0)
        hi, ti, est, se = (np.concatenate(parts) for parts in zip(*kept))
        order = np.lexsort((ti, hi))
        return hi[order], ti[order], est[order], se[order]

    def score_extensions(self, heads: Sequence[bytes], tails: Sequence[bytes]) -> tuple[Array, Array]:
        """Estimates and standard errors of every fragment ``(head, tail)``, ``head`` in ``heads``.

        Returns
        -------
        estimate, std_error : ndarray of shape (len(heads), len(tails))
        """
        matrix, _ = self._tail_matrix(tails)
        head_bits = self.spec.part_bits(list(heads), self.slot, tail=False)
        h = self.spec.params.num_hashes
        scale = 1.0 - self.beta
        offset = self.beta * float(self.background.sum())
        est = np.empty((len(heads), len(tails)))
        var = np.empty((len(heads), len(tails)))
        step = self._chunk(len(tails))
        for start in range(0, len(heads), step):
            block = head_bits[start:start + step]
            sums = matrix @ self._rotated(self.t, block)
            est[start:start + block.shape[0]] = (sums.T / h - offset) / scale
            vsum = matrix @ self._rotated(self.var_t, block)
            var[start:start + block.shape[0]] = vsum.T / (h * h) / scale**2
        return est, np.sqrt(np.maximum(var, 0.0) + self.collision_var)
