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

Values known from outside the reports (a candidate list: ``discover(prior_values=...)``) may be
learnt first: they hold no report either, so the control is unchanged, and the prior is used
from slot 0 on.  At 10 M clients of a flat population the earlier slots fit only the first
bytes of the few frequent values (about 270 bytes in all), so the bytes of later positions
(digits, ``/``, ``.``, accents) sit at the smoothing floor; a list of values of the same kind
gives them their share (measured: docs/notes/discovery-measurements.md, 6.18).

Frequencies given the byte before (a chain ``q(b | a)``, shrunk toward ``q(b)``) were
tried on the design seeds: no more values found at 10 M clients, twice the CPU time at
1 M (one set of levels per last byte of the prefixes), so the prior ignores the byte before.

What it buys: values drawn from a small alphabet (words, host names, paths) have tails
of a few hundred likely byte pairs among 65,536, and their level falls from 4.48 to about
2.8-3.6; a tail with bytes never seen needs about 4.95 instead of 4.48 (``mix`` 0.1).
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
        self._groups_key: tuple[bytes, ...] = ()
        self._groups: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.bool_]]] = []

    def learn(self, parts: Iterable[bytes]) -> None:
        """Count the bytes of ``parts`` (found tails, without their marker)."""
        idx = self._index[np.frombuffer(b"".join(parts), dtype=np.uint8)]
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

    def bits_per_byte(self, parts: Sequence[bytes]) -> float:
        """Mean ``-log2 q(b)`` of the bytes of ``parts`` (tails without marker): the prior's
        cross-entropy on them (``2**`` it: the per-byte perplexity the planner models)."""
        idx = self._index[np.frombuffer(b"".join(parts), dtype=np.uint8)]
        if idx.size == 0 or (idx < 0).any():
            return math.nan
        return float(-np.log2(self.frequencies())[idx].mean())

    def weights(self, tails: Sequence[bytes]) -> Array:
        """Prior mass of each tail (marker byte first, as :mod:`._search` builds them).

        Tails of each (marker, length) group get ``(1 - mix) prod_i q(b_i) + mix / n``
        with ``n`` the group's size: every group sums to one when it holds every string
        of the alphabet of its length (as a slot's tails do).  Uniform (``1 / n``) while
        the prior is not :attr:`active`.
        """
        out = np.empty(len(tails), dtype=np.float64)
        log_q = np.log(self.frequencies())
        for members, idx, bad in self._split(tails):
            n = members.size
            if not self.active or idx.shape[1] == 0:
                out[members] = 1.0 / n
                continue
            logp = log_q[idx].sum(axis=1)
            out[members] = (1.0 - self.mix) * np.where(bad, 0.0, np.exp(logp)) + self.mix / n
        return out

    def _split(self, tails: Sequence[bytes],
               ) -> list[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.bool_]]]:
        """Per (marker, length) group of ``tails``: positions, byte indices (without the marker) and
        whether a byte is outside the alphabet.  Cached for the last tail list (one per slot)."""
        key = tuple(tails)
        if key != self._groups_key:
            groups: dict[tuple[bytes, int], list[int]] = {}
            for i, t in enumerate(tails):
                groups.setdefault((t[:1], len(t)), []).append(i)
            self._groups = []
            for (_, length), members in groups.items():
                data = np.frombuffer(b"".join(tails[i][1:] for i in members), dtype=np.uint8)
                idx = self._index[data].reshape(len(members), length - 1)
                bad: npt.NDArray[np.bool_] = np.asarray((idx < 0).any(axis=1), dtype=bool)
                self._groups.append((np.asarray(members, dtype=np.int64), np.maximum(idx, 0), bad))
            self._groups_key = key
        return self._groups
