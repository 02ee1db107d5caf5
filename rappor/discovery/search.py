"""Find the frequent values from discovery reports alone: prefix extension with pooled completions.

The search walks the slots in order (:mod:`rappor.discovery.spec`).  It keeps a
*frontier* of prefixes believed frequent and a pool of *complete* values found so far:

1. In slot ``s`` every frontier prefix ``P`` is extended by every tail ``t`` of the
   alphabet that fills it to ``n_s`` bytes (a *partial* candidate ``P t``), and by every
   shorter or equal tail as a *complete* value (``P t`` ends there).  Each candidate's
   count is read from :class:`~rappor.discovery.oracle.SlotOracle`; the z-score is
   ``estimate / std_error``.
2. Partial candidates with ``z >= z_extend`` (at most ``beam`` of them, best first)
   form the next frontier.  ``z_extend`` defaults to the level at which each prefix
   spawns on average ``false_children`` absent children (``1 - Phi(z) = false_children
   / branching``): a geometric bound on the false prefixes that survive.
3. Complete candidates with ``z >= z_extend`` join the pool.  Every pooled value is
   scored again in every later slot: a value of length ``l`` is whole in all slots
   with ``n_s >= l``, so its evidence adds up over them (inverse-variance weighted
   mean of its per-slot shares).  This is where the method departs from PEM (Wang et
   al. 2017), which pads every value to the longest length and keeps a fixed top-k.
4. The result lists the pooled values with their share of the slots' reports, its
   standard error, the pooled z and a one-sided p-value; ``significant`` marks those
   passing Bonferroni at ``significance_level`` over every complete candidate tried
   and seen in at least two slots.

The full-string reports then confirm and estimate the list (``rappor decode
--candidates``), which controls the false discoveries a second time.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .._io import PathLike, atomic_output
from .._lazy import lazy_module
from .._validation import check_int, check_probability, check_real
from ..aggregate import Aggregate
from ..exceptions import InvalidParameterError
from .oracle import SlotOracle
from .spec import COMPLETE, PARTIAL, DiscoverySpec

if TYPE_CHECKING:
    from scipy import special
else:  # imported on first use: keeps `import rappor` light
    special = lazy_module("scipy.special")

__all__ = ["DiscoveryResult", "discover", "display_string"]

Array = npt.NDArray[np.float64]


def display_string(value: bytes) -> str:
    """``value`` as text: UTF-8 when valid, otherwise with ``\\xNN`` escapes for the bad bytes."""
    return value.decode("utf-8", errors="backslashreplace")


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class DiscoveryResult:
    """Values found by :func:`discover`, most frequent first.

    Attributes
    ----------
    values : tuple of bytes
        The discovered values (the bytes clients hold).
    strings : tuple of str
        The same, as text (:func:`display_string`).
    proportion, prop_std_error : ndarray of shape (n,)
        Estimated share of the discovery reports holding the value, and its standard
        error (pooled over the slots where the value is whole).
    zscore, pvalue : ndarray of shape (n,)
        Pooled z-score and its one-sided normal p-value.
    first_slot, slots : ndarray of int, shape (n,)
        Slot where the value was found and the number of slots pooled.
    significant : ndarray of bool, shape (n,)
        Bonferroni at ``significance_level`` over ``n_tested`` complete candidates, and
        seen in at least two slots: a value first found in the last slot has no second,
        independent group of clients to confirm it, and the null law of one slot's
        z-scores has heavier tails than the normal (collisions with heavy values), so
        such values are left to the full-string decoder to confirm.
    n_tested : int
        Complete candidates scored (the Bonferroni count).
    n_reports : int
        Discovery reports read.
    spec : DiscoverySpec
    diagnostics : dict
        Frontier sizes, candidates per slot, thresholds, time.
    """

    values: tuple[bytes, ...]
    proportion: Array
    prop_std_error: Array
    zscore: Array
    pvalue: Array
    first_slot: npt.NDArray[np.int64]
    slots: npt.NDArray[np.int64]
    significant: npt.NDArray[np.bool_]
    n_tested: int
    n_reports: int
    spec: DiscoverySpec
    significance_level: float
    diagnostics: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.values)

    @property
    def strings(self) -> tuple[str, ...]:
        return tuple(display_string(v) for v in self.values)

    def candidates(self, *, significant_only: bool = True) -> list[str]:
        """The discovered values as candidate strings for the full-string decoder.

        Values that are not valid UTF-8 are left out (a ``str`` candidate is hashed as
        UTF-8, so they could not match a client's string).
        """
        out = []
        for v, keep in zip(self.values, self.significant):
            if keep or not significant_only:
                try:
                    out.append(v.decode("utf-8"))
                except UnicodeDecodeError:
                    continue
        return out

    def to_csv(self, path: PathLike | None) -> None:
        """Write ``string,proportion,prop_std_error,zscore,pvalue,significant,first_slot,slots`` (atomically)."""
        with atomic_output(path) as out:
            out.write("string,proportion,prop_std_error,zscore,pvalue,significant,first_slot,slots\n")
            for i, s in enumerate(self.strings):
                cell = '"' + s.replace('"', '""') + '"' if any(ch in s for ch in ',"\r\n') or s != s.strip() else s
                out.write(f"{cell},{self.proportion[i]!r},{self.prop_std_error[i]!r},{self.zscore[i]:.4f},"
                          f"{self.pvalue[i]:.4g},{str(bool(self.significant[i])).lower()},"
                          f"{int(self.first_slot[i])},{int(self.slots[i])}\n")


@dataclass
class _Pooled:
    first_slot: int
    weight: float = 0.0
    weighted: float = 0.0
    slots: int = 0

    def add(self, share: float, se: float) -> None:
        if se > 0 and math.isfinite(se):
            w = 1.0 / (se * se)
            self.weight += w
            self.weighted += w * share
            self.slots += 1


def _tails(symbols: bytes, length: int) -> list[bytes]:
    out = [b""]
    for _ in range(length):
        out = [t + bytes([c]) for t in out for c in symbols]
    return out


def _normal_sf(z: Array) -> Array:
    out: Array = 0.5 * special.erfc(z / math.sqrt(2.0))
    return out


def _normal_isf(p: float) -> float:
    return float(math.sqrt(2.0) * special.erfcinv(2.0 * p))


def discover(aggregate: Aggregate, spec: DiscoverySpec, *, beam: int = 1000, false_children: float = 0.5,
             z_extend: float | None = None, significance_level: float = 0.05,
             max_candidates: int = 64_000_000, explain: int = 256) -> DiscoveryResult:
    """Find frequent values in discovery reports (see the module docstring).

    Parameters
    ----------
    aggregate : Aggregate
        Discovery counts under ``spec.wire_params`` (``rappor sum-bits`` of the
        discovery reports, or :attr:`DiscoverySimulation.discovery`).
    spec : DiscoverySpec
    beam : int, default=1000
        Most prefixes kept per slot.
    false_children : float, default=0.5
        Expected absent children kept per prefix, which sets the default ``z_extend``.
    z_extend : float, optional
        z-score a candidate needs to be kept (overrides ``false_children``).
    significance_level : float, default=0.05
        Family-wise level of :attr:`DiscoveryResult.significant` (Bonferroni).
    max_candidates : int, default=64,000,000
        Guard on the candidates scored in one slot (``beam`` times the extensions).
    explain : int, default=256
        Strongest candidates of each slot fitted jointly and subtracted before a second
        scoring pass (:meth:`SlotOracle.explain`); 0 scores once.

    Returns
    -------
    DiscoveryResult
    """
    started = time.perf_counter()
    if not isinstance(spec, DiscoverySpec):
        raise InvalidParameterError(f"The 'spec' parameter of discover must be a DiscoverySpec. Got {spec!r}.")
    width = check_int(beam, "beam", "discover", low=1)
    alpha = check_probability(significance_level, "significance_level", "discover", open_low=True, open_high=True)
    limit = check_int(max_candidates, "max_candidates", "discover", low=1)
    symbols = spec.symbols
    branching = sum(len(symbols) ** i for i in range(1, spec.segment + 1)) + len(symbols) ** spec.segment
    if z_extend is None:
        r = check_real(false_children, "false_children", "discover", low=0.0, low_open=True)
        threshold = _normal_isf(min(r / branching, 0.5))
    else:
        threshold = check_real(z_extend, "z_extend", "discover")
    frontier: list[bytes] = [b""]
    pool: dict[bytes, _Pooled] = {}
    n_tested = 0
    n_reports = 0
    per_slot: list[dict[str, Any]] = []
    for slot in range(spec.levels):
        oracle = SlotOracle(aggregate, spec, slot)
        n_reports += int(oracle.n_reports)
        n_s = spec.prefix_length(slot)
        prev = spec.prefix_length(slot - 1) if slot else 0
        grow = n_s - prev
        tail_list = [PARTIAL + t for t in _tails(symbols, grow)] if n_s < spec.max_length else []
        n_tp = len(tail_list)
        tail_list += [COMPLETE + t for i in range(1, grow + 1) for t in _tails(symbols, i)]
        known = list(pool)
        total = len(frontier) * len(tail_list) + len(known)
        if total > limit:
            msg = (f"discover: slot {slot} would score {total:,} candidates (more than max_candidates={limit:,}); "
                   f"lower 'beam' or use a smaller alphabet or segment.")
            raise InvalidParameterError(msg)
        if oracle.n_reports <= 0 or total == 0:
            per_slot.append({"slot": slot, "reports": int(oracle.n_reports), "frontier": len(frontier),
                             "candidates": 0, "kept": 0, "found": 0})
            frontier = []
            continue
        known_pairs = [spec.split(v, slot) for v in known]
        est_x, se_x = oracle.score_extensions(frontier, tail_list)
        est_k, se_k = oracle.score_values(known)
        n_x = est_x.size
        est = np.concatenate([est_x.reshape(-1), est_k])
        se = np.concatenate([se_x.reshape(-1), se_k])
        z = np.divide(est, se, out=np.zeros_like(est), where=se > 0)
        explained = np.zeros(0, dtype=np.int64)
        fitted = np.zeros(0)
        # Fit the clearly present fragments first, then the rest above the threshold: fitting
        # a heavy value together with the absent ones that collide with it would split its
        # count between them (they share its bits), so the heavy values go alone.
        for cut in ((max(4.0 * threshold, 20.0), threshold) if explain > 0 else ()):
            strong = np.setdiff1d(np.flatnonzero(z >= cut), explained)
            strong = strong[np.argsort(-z[strong], kind="stable")[:max(explain - explained.size, 0)]]
            if strong.size == 0:
                continue
            width_x = len(tail_list)
            pairs = [(frontier[i // width_x], tail_list[i % width_x]) if i < n_x else known_pairs[i - n_x]
                     for i in strong.tolist()]
            explained = np.concatenate([explained, strong])
            fitted = np.concatenate([fitted, oracle.explain(pairs)])
            est_x, se_x = oracle.score_extensions(frontier, tail_list)
            est_k, se_k = oracle.score_values(known)
            est = np.concatenate([est_x.reshape(-1), est_k])
            se = np.concatenate([se_x.reshape(-1), se_k])
            est[explained] += fitted
            z = np.divide(est, se, out=np.zeros_like(est), where=se > 0)
        share, share_se = est / oracle.n_reports, se / oracle.n_reports
        zx = z[:n_x].reshape(len(frontier), len(tail_list))
        keep = np.argwhere(zx[:, :n_tp] >= threshold)
        if keep.shape[0] > width:
            keep = keep[np.argsort(-zx[keep[:, 0], keep[:, 1]], kind="stable")[:width]]
        frontier_next = [frontier[i] + tail_list[j][1:] for i, j in keep.tolist()]
        n_tested += len(frontier) * (len(tail_list) - n_tp)
        found = 0
        for i, j in np.argwhere(zx[:, n_tp:] >= threshold).tolist():
            value = frontier[i] + tail_list[n_tp + j][1:]
            if value in pool:
                continue
            flat = i * len(tail_list) + n_tp + j
            pool[value] = _Pooled(first_slot=slot)
            pool[value].add(float(share[flat]), float(share_se[flat]))
            found += 1
        for j, value in enumerate(known):
            pool[value].add(float(share[n_x + j]), float(share_se[n_x + j]))
        per_slot.append({"slot": slot, "reports": int(oracle.n_reports), "frontier": len(frontier),
                         "candidates": int(z.size), "kept": len(frontier_next), "found": found,
                         "null_std_error": oracle.null_std_error / max(oracle.n_reports, 1.0)})
        frontier = frontier_next
    values = list(pool)
    weight = np.array([pool[v].weight for v in values], dtype=np.float64)
    mean = np.array([pool[v].weighted for v in values], dtype=np.float64)
    prop = np.divide(mean, weight, out=np.zeros_like(mean), where=weight > 0)
    prop_se = np.divide(1.0, np.sqrt(weight), out=np.full_like(weight, np.nan), where=weight > 0)
    zs = np.divide(prop, prop_se, out=np.zeros_like(prop), where=weight > 0)
    order = np.argsort(-prop, kind="stable")
    pval = _normal_sf(zs)
    cutoff = alpha / max(n_tested, 1)
    slots_arr = np.array([pool[v].slots for v in values], dtype=np.int64)
    return DiscoveryResult(
        values=tuple(values[i] for i in order), proportion=prop[order], prop_std_error=prop_se[order],
        zscore=zs[order], pvalue=pval[order],
        first_slot=np.array([pool[values[i]].first_slot for i in order], dtype=np.int64),
        slots=np.array([pool[values[i]].slots for i in order], dtype=np.int64),
        significant=(pval[order] <= cutoff) & (slots_arr[order] >= min(2, spec.levels)), n_tested=n_tested, n_reports=n_reports, spec=spec,
        significance_level=alpha,
        diagnostics={"z_extend": threshold, "beam": width, "slots": per_slot,
                     "seconds": time.perf_counter() - started})
