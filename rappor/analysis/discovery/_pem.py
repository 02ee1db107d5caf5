"""The literature baseline: PEM (Wang, Li and Jha 2017/2019) with RAPPOR as its frequency oracle.

Prefix Extending Method, as published ("Locally Differentially Private Heavy Hitter
Identification", arXiv:1708.06674; IEEE TDSC 2021), implemented plainly:

* every value is padded to ``max_length`` bytes (here with ``0x00``), so all values
  have one length;
* users are split into ``g = ceil(max_length / segment)`` groups; group ``i`` reports
  the prefix of ``(i + 1) * segment`` bytes of its padded value, with the whole budget;
* the server, group by group, scores every extension by ``segment`` bytes of the top
  ``top_k`` prefixes of the previous group (``top_k * 256**segment`` candidates) with a
  frequency oracle and keeps the ``top_k`` largest estimates;
* the last group's ``top_k`` are the heavy hitters.

PEM uses OLH as its oracle; here the oracle is RAPPOR's (the same Bloom-filter reports
and :class:`~rappor.analysis.discovery._oracle.SlotOracle` scores, one pass), so the comparison
with :func:`rappor.analysis.discovery.discover` isolates the search.  The padded values are
reported through the same :class:`DiscoverySpec` layout (a padded value is "complete"
only in the last slot).
"""

from __future__ import annotations

import time

import numpy as np

from ..._util.validation import check_int
from ...collect._aggregate import Aggregate
from ...exceptions import InvalidParameterError
from ...simulation._populations import Population
from ._oracle import SlotOracle
from ._levels import _normal_sf, _tails
from ._search import DiscoveryResult
from ._spec import COMPLETE, PARTIAL, DiscoverySpec

__all__ = ["PAD", "pem_discover", "pem_population"]

#: The padding byte (as a character, it is UTF-8 ``0x00``).
PAD = "\x00"


def pem_population(population: Population, max_length: int) -> Population:
    """``population`` with every string padded with ``PAD`` to ``max_length`` UTF-8 bytes.

    Raises
    ------
    InvalidParameterError
        If a string is longer than ``max_length`` bytes or contains ``PAD``.
    """
    out = []
    for s in population.strings:
        size = len(s.encode("utf-8"))
        if size > max_length or PAD in s:
            msg = f"pem_population: {s!r} is longer than {max_length} bytes or contains the padding byte."
            raise InvalidParameterError(msg)
        out.append(s + PAD * (max_length - size))
    return Population(strings=tuple(out), probabilities=population.probabilities, name=population.name + " padded")


def pem_discover(aggregate: Aggregate, spec: DiscoverySpec, *, top_k: int = 50) -> DiscoveryResult:
    """PEM's search over padded prefixes (see the module docstring).

    Returns
    -------
    DiscoveryResult
        The last group's ``top_k`` values, padding removed, by estimated share; all
        marked significant (PEM has no test), ``zscore`` and ``pvalue`` from the oracle.
    """
    started = time.perf_counter()
    k_top = check_int(top_k, "top_k", "pem_discover", low=1)
    symbols = spec.symbols if 0 in spec.symbols else bytes(sorted(set(spec.symbols) | {0}))
    frontier: list[bytes] = [b""]
    last_est = np.zeros(0)
    last_se = np.zeros(0)
    values: list[bytes] = []
    n_last = 1.0
    for slot in range(spec.levels - int(spec.confirmation)):  # PEM has no confirmation slot
        oracle = SlotOracle(aggregate, spec, slot)
        n_s = spec.prefix_length(slot)
        grow = n_s - (spec.prefix_length(slot - 1) if slot else 0)
        final = n_s >= spec.max_length
        tails = [(COMPLETE if final else PARTIAL) + t for t in _tails(symbols, grow)]
        est, se = oracle.score_extensions(frontier, tails)
        flat = est.reshape(-1)
        best = np.argsort(-flat, kind="stable")[:k_top]
        values = [frontier[i // len(tails)] + tails[i % len(tails)][1:] for i in best.tolist()]
        last_est, last_se = flat[best], se.reshape(-1)[best]
        n_last = max(oracle.n_reports, 1.0)
        frontier = values
    stripped = [v.rstrip(PAD.encode()) for v in values]
    keep: dict[bytes, int] = {}
    for i, v in enumerate(stripped):
        keep.setdefault(v, i)
    idx = np.array(list(keep.values()), dtype=np.int64)
    prop = last_est[idx] / n_last
    prop_se = last_se[idx] / n_last
    z = np.divide(prop, prop_se, out=np.zeros_like(prop), where=prop_se > 0)
    return DiscoveryResult(values=tuple(keep), proportion=prop, prop_std_error=prop_se, zscore=z,
                           pvalue=_normal_sf(z), first_slot=np.full(idx.size, spec.levels - 1 - int(spec.confirmation),
                                                                    dtype=np.int64),
                           slots=np.ones(idx.size, dtype=np.int64), found_zscore=z,
                           significant=np.ones(idx.size, dtype=bool),
                           n_tested=int(idx.size), n_reports=int(aggregate.total_reports), spec=spec,
                           significance_level=1.0,
                           diagnostics={"method": "pem", "top_k": k_top, "seconds": time.perf_counter() - started})
