"""The search's prior over tails, learnt from the fragments found in earlier slots.

A slot's search keeps, per prefix, the extensions ``P t`` whose z-score passes a level
set so that each prefix keeps on average ``r`` absent children (:mod:`._search`): with
``T`` tails, one level ``1 - Phi(z) = r / T`` for every tail (Bonferroni).  Any levels
``z_t`` with ``sum_t (1 - Phi(z_t)) = r`` keep the same expected number of absent
children, so the budget ``r`` may be spread by a prior ``pi_t`` (``sum_t pi_t = 1``):
``1 - Phi(z_t) = r pi_t`` (the *weighted Bonferroni* procedure; Genovese, Roeder and
Wasserman, "False discovery control with p-value weighting", Biometrika 93, 2006).
The absent prefixes still form a subcritical branching process, whatever the prior.

The prior here is a product of byte frequencies, learnt in slot order from the fragments
fitted in earlier slots (those above the fit level, where 0.001 absent fragments are
expected per slot: the bytes of values clients hold).  Earlier slots hold other clients
(each client reports in one slot), so the prior is independent of the counts it is
applied to, and the control above holds exactly.  It is mixed with the uniform prior
(``mix``): a tail of bytes never seen so far keeps ``mix`` of its uniform share.

What it buys: values drawn from a small alphabet (words, host names, paths) have tails
of a few hundred likely byte pairs among 65,536, and their level falls from 4.48 to about
3.0-3.6; a tail with bytes never seen needs about 4.95 instead of 4.48 (``mix`` 0.1).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["TailPrior"]

Array = npt.NDArray[np.float64]

#: Bytes the prior needs before it departs from the uniform one.
_MIN_BYTES = 32


class TailPrior:
    """Byte frequencies learnt from found fragments, and the prior they put on tails.

    Parameters
    ----------
    symbols : bytes
        The search's alphabet.
    mix : float, default=0.1
        Weight of the uniform prior in the mixture (every tail keeps at least ``mix``
        times its uniform share of the budget).
    smoothing : float, default=0.05
        Pseudo-count added to every byte of the alphabet.
    """

    def __init__(self, symbols: bytes, *, mix: float = 0.1, smoothing: float = 0.05) -> None:
        self.symbols = symbols
        self.mix = float(mix)
        self.smoothing = float(smoothing)
        self._index = np.full(256, -1, dtype=np.int64)
        self._index[np.frombuffer(symbols, dtype=np.uint8)] = np.arange(len(symbols))
        self.counts = np.zeros(len(symbols), dtype=np.float64)

    def learn(self, parts: Iterable[bytes]) -> None:
        """Count the bytes of ``parts`` (found tails, without their marker)."""
        data = np.frombuffer(b"".join(parts), dtype=np.uint8)
        idx = self._index[data]
        self.counts += np.bincount(idx[idx >= 0], minlength=len(self.symbols))

    @property
    def active(self) -> bool:
        """Whether enough bytes were seen for the prior to depart from the uniform one."""
        return bool(self.counts.sum() >= _MIN_BYTES) and self.mix < 1.0

    def frequencies(self) -> Array:
        """Smoothed byte frequencies over ``symbols`` (summing to one)."""
        c = self.counts + self.smoothing
        out: Array = c / c.sum()
        return out

    def perplexity(self) -> float:
        """``2**H`` of the byte frequencies: the alphabet size they amount to."""
        q = self.frequencies()
        return float(2.0 ** -(q * np.log2(q)).sum())

    def weights(self, tails: Sequence[bytes]) -> Array:
        """Prior mass of each tail (marker byte first, as :mod:`._search` builds them).

        Tails of each (marker, length) group get ``(1 - mix) prod_i q(b_i) + mix / n``
        with ``n`` the group's size: every group sums to one when it holds every string
        of the alphabet of its length (as a slot's tails do).  Uniform (``1 / n``) while
        the prior is not :attr:`active`.
        """
        n_tails = len(tails)
        out = np.empty(n_tails, dtype=np.float64)
        groups: dict[tuple[bytes, int], list[int]] = {}
        for i, t in enumerate(tails):
            groups.setdefault((t[:1], len(t)), []).append(i)
        log_q = np.log(self.frequencies())
        for (_, length), members in groups.items():
            n = len(members)
            if not self.active or length <= 1:
                out[members] = 1.0 / n
                continue
            data = np.frombuffer(b"".join(tails[i][1:] for i in members), dtype=np.uint8)
            idx = self._index[data].reshape(n, length - 1)
            logp = np.where(idx >= 0, log_q[np.maximum(idx, 0)], -math.inf).sum(axis=1)
            out[members] = (1.0 - self.mix) * np.exp(logp) + self.mix / n
        return out
