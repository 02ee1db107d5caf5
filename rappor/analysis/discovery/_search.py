"""Find the frequent values from discovery reports alone: prefix extension, found in one slot, confirmed in others.

The search walks the slots in order (:mod:`rappor.analysis.discovery`).  It keeps a
*frontier* of prefixes believed frequent and a *pool* of complete values found so far:

1. In slot ``s`` every frontier prefix ``P`` is extended by every tail ``t`` of the
   alphabet that fills it to ``n_s`` bytes (a *partial* candidate ``P t``), and by every
   shorter or equal tail as a *complete* value (``P t`` ends there): ``F x 131,328``
   candidates for ``F`` prefixes, 2-byte segments and all 256 bytes, scored at once
   (:meth:`SlotOracle.extensions_above`).  The strongest fragments are fitted and
   subtracted first (:meth:`SlotOracle.explain`); the candidates are then scored with
   the trimmed estimate (:meth:`SlotOracle.trimmed`), whose null law stays close to
   normal when a few cohorts collide with frequent fragments.
2. Partial candidates with ``z >= z_extend`` form the next frontier.  ``z_extend`` is
   the level at which each prefix keeps on average ``false_children`` absent children
   (``1 - Phi(z_extend) = false_children / |alphabet|**segment``): the absent prefixes
   form a subcritical branching process and die out.  From slot 1 on, that budget (and the
   two below) is spread over the tails by a byte prior learnt from the earlier slots
   (:mod:`rappor.analysis.discovery._prior`: ``1 - Phi(z_t) = false_children pi_t``, the
   same expected absent children per prefix; from slot 0 on when ``prior_values`` gives it
   values known from outside the reports).  Partial children of a regular
   prefix with ``z_reserve <= z < z_extend`` are kept as *reserve* prefixes, whose own
   children need ``z_extend``: a true prefix survives one weak slot.  From slot 1 on,
   partial children of a regular prefix below ``z_reserve`` but above a deeper level
   (``rescue`` more absent children per prefix) are kept *provisionally*, at most
   :data:`_RESCUE_BEAM` a slot: in the next slot only their most likely tails are scored,
   and a child is kept (or pooled) only at a strong level, so that all provisional
   prefixes together leave at most ``rescue_false`` absent regular children per regular
   prefix (:mod:`._rescue`; a two-step test: a true prefix survives one deep dip when its
   next link is strong).
3. Complete candidates with ``z >= z_pending`` (a low bar) join the pool.  Every pooled
   value is scored again in **every later slot** (a value of length ``l`` is whole in
   all slots with ``n_s >= l``, and the last slot, the confirmation slot, has every
   value whole), and values whose evidence falls back are dropped.  This is where the
   method departs from PEM (Wang et al. 2017), which pads every value to the longest
   length, keeps a fixed top-k per group and has no test.
   A complete candidate that misses ``z_pending`` in its one finding slot may be *held*
   instead (:mod:`._held`): the later slots score it whole and pool it if they confirm it
   (a short value's second chance after a weak slot).
4. A value is *found* in one slot and *confirmed* by the later ones: different clients
   and hash seeds, so the confirmation is independent of the selection.  Its
   ``proportion``, standard error and z-score pool the confirming slots' trimmed
   estimates (inverse-variance weights); its p-value is the exact chance probability
   of its confirming evidence (:mod:`rappor.analysis.discovery`: the convolution of
   the cohorts' own counts, which holds with heavy collisions and few reports, where a
   normal p-value of the z-score does not); ``significant`` is Bonferroni at
   ``significance_level`` over every value ever pooled.

The full-string reports then estimate the list (``rappor decode --candidates`` or
``rappor decode --discover``), which controls the false discoveries a second time.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ..._util.validation import check_int, check_options, check_probability, check_real
from ...collect._aggregate import Aggregate
from ...exceptions import InvalidParameterError
from ._confirmation import ConfirmationNull, finding_weights
from ._oracle import SlotOracle
from ._levels import DEFAULT_FALSE_CHILDREN as DEFAULT_FALSE_CHILDREN  # re-exported: the planner models the search
from ._levels import DEFAULT_PENDING as DEFAULT_PENDING
from ._levels import DEFAULT_PRIOR_MIX as DEFAULT_PRIOR_MIX
from ._levels import DEFAULT_RESERVE as DEFAULT_RESERVE
from ._levels import _thresholds as _thresholds
from ._levels import _normal_isf, _normal_sf, _tail_levels, _tails
from ._prior import TailPrior
from ._scores import _SlotScores, _uniform_weights
from ._held import DEFAULT_HOLD, DEFAULT_HOLD_FALSE, HeldValue, held_values, score_held
from ._rescue import DEFAULT_RESCUE, DEFAULT_RESCUE_FALSE, _RESCUE_BEAM, _provisional_children, provisional_budgets
from ._spec import COMPLETE, PARTIAL, DiscoverySpec

__all__ = ["DiscoveryResult", "discover", "display_string"]

Array = npt.NDArray[np.float64]


def display_string(value: bytes) -> str:
    """``value`` as text: UTF-8 when valid, otherwise with ``\\xNN`` escapes for the bad bytes."""
    return value.decode("utf-8", errors="backslashreplace")


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class DiscoveryResult:
    """Values found by :func:`discover`, most frequent first (written as ``found.csv`` by
    :func:`rappor.formats.write_found`).

    Attributes
    ----------
    values : tuple of bytes
        The discovered values (the bytes clients hold).
    strings : tuple of str
        The same, as text (:func:`display_string`).
    proportion, prop_std_error : ndarray of shape (n,)
        Estimated share of the discovery reports holding the value, and its standard
        error, pooled over the confirming slots (the slots after the one where the
        value was found: the selection slot would bias it up).
    zscore, pvalue : ndarray of shape (n,)
        Pooled z-score of the confirming slots, and the exact probability that a value
        nobody holds has confirming evidence as strong (:mod:`rappor.analysis.discovery`).
    first_slot, slots : ndarray of int, shape (n,)
        Slot where the value was found and the number of confirming slots.
    found_zscore : ndarray of shape (n,)
        z-score in the slot where the value was found.
    significant : ndarray of bool, shape (n,)
        ``pvalue <= (max_false + 1) significance_level / n_tested`` (Bonferroni over every
        value pooled; generalized, Lehmann and Romano 2005, when ``max_false > 0``; with
        ``discover(weighting="finding")`` the cutoff is the value's weight times this).
    n_tested : int
        Values pooled (found in some slot and scored in the later ones).
    n_reports : int
        Discovery reports read.
    spec : DiscoverySpec
    significance_level, max_false :
        As passed to :func:`discover`.
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
    found_zscore: Array
    significant: npt.NDArray[np.bool_]
    n_tested: int
    n_reports: int
    spec: DiscoverySpec
    significance_level: float
    max_false: int = 0
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


@dataclass
class _Pooled:
    """A value's share in the slot where it was found, and its pooled share in the later slots."""

    first_slot: int
    found_z: float
    found_weight: float
    found_weighted: float
    weight: float = 0.0
    weighted: float = 0.0
    slots: int = 0
    evidence: float = 0.0  # the confirming statistic S (rappor.analysis.discovery._confirmation)
    index: int = 0  # its place among every value pooled (its weight)

    @classmethod
    def found(cls, slot: int, share: float, se: float, index: int) -> _Pooled:
        w = 1.0 / (se * se) if se > 0 and math.isfinite(se) else 0.0
        return cls(first_slot=slot, found_z=share / se if w > 0 else 0.0, found_weight=w, found_weighted=w * share,
                   index=index)

    def add(self, share: float, se: float, evidence: float) -> None:
        self.evidence += evidence
        if se > 0 and math.isfinite(se):
            w = 1.0 / (se * se)
            self.weight += w
            self.weighted += w * share
            self.slots += 1

    def all_z(self) -> float:
        """z-score of all its slots together (to drop values whose evidence fell back)."""
        weight = self.weight + self.found_weight
        return (self.weighted + self.found_weighted) / math.sqrt(weight) if weight > 0 else 0.0


#: Trimmed z-scores of the fragments fitted and subtracted, round by round (trimmed, so
#: that an absent fragment lifted by a collision with a heavy one is not fitted): the heavy ones alone
#: first (fitted together with absent fragments that share their bits, their count is
#: split between them), then the rest above 10 once the heavy ones' collisions are gone,
#: then every fragment above the slot's *fit level* (:func:`_explain_cuts`).
_EXPLAIN_CUTS = (20.0, 10.0)

#: Expected absent fragments per slot above the last round's cut (the fit level).  A
#: fragment of ``c`` reports adds about ``c**2 / (m k)`` to an absent fragment's variance
#: (collisions): one below z = 10 adds little, but at 1 M clients the dozens of true
#: fragments between z = 6 and 10 together raised the slot's null standard error by
#: 2-3% (``benchmarks/discovery.py --trace``), which lost the weakest top-10 prefixes.
#: Fitting selected noise (an absent fragment with a high z) would take counts away from
#: the true fragments it collides with, and an absent fitted value is outside the exact
#: chance law of :mod:`rappor.analysis.discovery`; over 16 slots this rate allows
#: 0.016 such fragments in all, against the family-wise level 0.05.
_FIT_FALSE = 0.001


def _explain_cuts(candidates: int) -> tuple[float, ...]:
    """Cuts of the rounds of fits in a slot scoring ``candidates`` fragments.

    The last is the fit level ``z_fit`` with ``candidates * (1 - Phi(z_fit)) = _FIT_FALSE``
    (the trimmed z-scores of absent fragments are close to standard normal,
    :meth:`SlotOracle.trimmed`): 6.4 for a hundred prefixes by 131,328 tails.
    """
    level = _normal_isf(min(_FIT_FALSE / max(candidates, 1), 0.5))
    return tuple(c for c in _EXPLAIN_CUTS if c > level) + (level,)

#: Fewest cohorts per slot the search accepts (with fewer, nothing is trimmed and a few
#: collisions with frequent fragments make absent ones look frequent).
_MIN_COHORTS = 8

#: Pooled values whose z-score over all their slots falls below this are dropped.
_PRUNE_Z = 1.5

#: Pooled values listed in the result: confirming z-score at least this (significant or not).
_SHOW_Z = 3.0


#: Most tails scored per prefix in one slot (a segment's extensions): 256**2 + 256 fits, 256**3 does not.
MAX_TAILS = 1 << 18


def discover(aggregate: Aggregate, spec: DiscoverySpec, *, beam: int = 1000,
             false_children: float = DEFAULT_FALSE_CHILDREN, reserve: float = DEFAULT_RESERVE,
             pending: float = DEFAULT_PENDING, z_extend: float | None = None, prior_mix: float = DEFAULT_PRIOR_MIX,
             rescue: float = DEFAULT_RESCUE, rescue_false: float = DEFAULT_RESCUE_FALSE, rescue_split: str = "even",
             hold: float = DEFAULT_HOLD, hold_false: float = DEFAULT_HOLD_FALSE, prior_values: Iterable[bytes | str] = (),
             significance_level: float = 0.05, max_false: int = 0, weighting: str = "uniform", max_candidates: int = 1 << 28, explain: int = 256,
             trace: Sequence[bytes] = (), progress: Callable[[int], None] | None = None) -> DiscoveryResult:
    """Find frequent values in discovery reports (see the module docstring).

    Parameters
    ----------
    aggregate : Aggregate
        Discovery counts under ``spec.wire_params`` (``rappor sum-bits`` of the
        discovery reports, or :attr:`DiscoverySimulation.discovery`).
    spec : DiscoverySpec
    beam : int, default=1000
        Most prefixes kept per slot.
    false_children : float, default=0.25
        Expected absent partial children kept per prefix: sets ``z_extend`` by
        ``1 - Phi(z_extend) = false_children / |alphabet|**segment``.
    reserve : float, default=2.0
        Expected absent partial children of a (regular) prefix kept as *reserve*
        prefixes, with ``z`` between ``z_reserve`` (``1 - Phi(z_reserve) = (false_children
        + reserve) / |alphabet|**segment``) and ``z_extend``.  A reserve prefix is
        extended like any other, but its own children need ``z_extend``: a true prefix
        survives one weak slot, and absent prefixes still die out (each prefix leaves on
        average ``false_children (1 + reserve)`` absent children and grandchildren through
        reserves, below one with the defaults).  0 turns reserves off.
    pending : float, default=100.0
        Expected absent complete children pooled per prefix: sets ``z_pending`` (at most
        ``z_extend``).  Pooled values are scored again in every later slot, where
        absent ones fall back (and are dropped below a pooled z of 1.5), so this
        threshold can be far lower than ``z_extend``.
    z_extend : float, optional
        z-score a partial extension needs to be kept (overrides ``false_children``; the
        reserve band keeps its width; one level for every tail, no prior).
    prior_mix : float, default=0.1
        The three budgets above are spread over the tails by a prior learnt from the
        fragments found in earlier slots (:mod:`rappor.analysis.discovery._prior`: byte
        frequencies, mixed with the uniform prior with this weight): tails of the bytes
        the values use need lower z-scores, others higher, and each prefix keeps the same
        expected number of absent children.  1 gives every tail the same level.
    rescue : float, default=16.0
        Expected absent partial children of a regular prefix kept *provisionally*, from
        slot 1 on: those with ``z`` below ``z_reserve`` and above the level of the budget
        ``false_children + reserve + rescue`` (spread by the prior as the others), at most
        ``_RESCUE_BEAM`` (1,000) a slot, most likely first.  A provisional prefix is extended
        in the next slot by the ``_LIKELY_TAILS`` (4,096) most likely tails of each kind only,
        and its children are kept (partial) or pooled (complete) at its share of the
        budget ``rescue_false`` (below): a true prefix whose z-score dips once far below
        ``z_reserve`` is kept when its next slot is strong.  0 turns it off (so does
        ``z_extend``).
    rescue_false : float, default=0.1
        Expected absent regular prefixes that the provisional ones leave in the next slot,
        per regular prefix of the slot (with the defaults each prefix leaves ``0.25 + 2 x
        0.25 + 0.1 = 0.85`` absent regular prefixes one or two slots later: below one, so
        absent branches still die out).
    rescue_split : {"even", "evidence"}, default="even"
        How ``rescue_false`` is spread over the provisional prefixes
        (:func:`rappor.analysis.discovery._rescue.provisional_budgets`): ``"even"``,
        ``rescue_false / rescue`` absent partial children each (the whole budget is spent
        only when ``rescue`` provisional prefixes per regular prefix are kept; a third to a
        half of it when the beam of 1,000 binds); ``"evidence"``, all of ``rescue_false``
        times the regular prefixes, in proportion to ``pi_t / (1 - Phi(z))`` of each one's
        first link (Fisher's product of the two links' p-values; measured at 10 M: no gain
        on new seeds for 13% more CPU time, notes 6.17).  Their complete children get
        ``pending / false_children`` times as much.
    hold : float, default=20.0
        Complete children *held* a slot per prefix extended (at most 20,000), from slot 1 on:
        those that missed ``z_pending`` but are most likely by the prior (plain z-score at
        least 1.5, ranked by ``(1 - Phi(z)) / pi_t``).  The later slots score a held value
        whole; once they hold half its weight in the holding slot, it is pooled if their
        pooled z-score passes the level of ``hold_false``: a short value, which can be found
        in one slot only, survives one weak finding slot
        (:mod:`rappor.analysis.discovery._held`).  0 turns it off (so does ``z_extend``).
    hold_false : float, default=0.05
        Chance that an absent held value is pooled (level 1.645): the held values add
        ``hold_false x hold`` absent values per prefix and slot to the pool, against up to
        ``pending`` of the regular ones.
    prior_values : iterable of bytes or str, optional
        Values known from outside the reports (a candidate list, last period's values),
        whose bytes the prior learns before slot 0 (``str`` as UTF-8); the fragments fitted
        in each slot are learnt on top.  They hold no report, so every level's control holds
        as with the prior learnt from earlier slots alone; the prior is then used from slot 0
        on.  With the few frequent values of a flat population at 10 M clients the earlier
        slots fit only their first bytes (about 270 bytes in all), and the digits, ``/``, dots
        and accents of later positions get the uniform floor: a list of the same kind of
        values gives them their share (measured in notes 6.18).  ``rappor decode
        --discover`` passes its candidates.
    significance_level : float, default=0.05
        Level of :attr:`DiscoveryResult.significant`: the chance of more than
        ``max_false`` false significant values is at most this (Bonferroni).
    max_false : int, default=0
        False significant values tolerated: the p-value cutoff is ``(max_false + 1)
        significance_level / n_tested`` (the generalized Bonferroni procedure, Lehmann and
        Romano, Annals of Statistics 33, 2005, Theorem 2.1: the chance of ``max_false + 1``
        or more false values is at most ``significance_level``, whatever the dependence
        between the p-values).  0: the family-wise level.
    weighting : {"uniform", "finding"}, default="uniform"
        How the level is spread over the pooled values: ``"uniform"``, ``alpha / n_tested`` each
        (Bonferroni); ``"finding"``, in proportion to the weights of
        :func:`rappor.analysis.discovery._confirmation.finding_weights` (the posterior chance that the
        value is held, from its finding z-score over its pooling level, prior odds ``1 /
        pending``), a weighted Bonferroni with the same family-wise bound.
    max_candidates : int, default=2**28
        Guard on the candidates scored in one slot (prefixes times extensions).
    explain : int, default=256
        Most fragments of a slot fitted jointly and subtracted before the final scoring
        (:meth:`SlotOracle.explain`): first the very strong ones alone, then the rest
        above ``z_extend``; 0 scores once.
    trace : sequence of bytes, optional
        Values whose fragment's (trimmed) z-score in every slot, after the fits, goes to
        ``diagnostics["trace"]``, with whether its prefix was in the frontier: to see
        where a value known to be frequent was lost (simulations, benchmarks).
    progress : callable, optional
        Called with 1 after each of the ``spec.levels`` slots (a progress bar).

    Returns
    -------
    DiscoveryResult
        Pooled values whose confirming z-score is at least 3, most frequent first.
    """
    started = time.perf_counter()
    if not isinstance(aggregate, Aggregate):
        msg = f"The 'aggregate' parameter of discover must be an Aggregate. Got {aggregate!r} instead."
        raise InvalidParameterError(msg)
    if not isinstance(spec, DiscoverySpec):
        raise InvalidParameterError(f"The 'spec' parameter of discover must be a DiscoverySpec. Got {spec!r}.")
    if spec.params.num_cohorts < _MIN_COHORTS:
        msg = (f"discover needs at least {_MIN_COHORTS} cohorts per slot (the trimmed estimates drop the "
               f"num_cohorts // 8 highest and lowest cohorts); the discovery parameters have "
               f"{spec.params.num_cohorts}.")
        raise InvalidParameterError(msg)
    width = check_int(beam, "beam", "discover", low=1)
    alpha = check_probability(significance_level, "significance_level", "discover", open_low=True, open_high=True)
    limit = check_int(max_candidates, "max_candidates", "discover", low=1)
    budget = check_int(explain, "explain", "discover", low=0)
    th = _thresholds(spec, false_children, reserve, pending, z_extend)
    mix = check_real(prior_mix, "prior_mix", "discover", low=0.0, low_open=True, high=1.0)
    t_extend = th.extend
    n_rescue = check_real(rescue, "rescue", "discover", low=0.0)
    r_false = check_real(rescue_false, "rescue_false", "discover", low=0.0, low_open=True)
    kappa = r_false / (n_rescue * false_children) if n_rescue > 0 else 0.0  # > 0: provisional prefixes on
    k_false = check_int(max_false, "max_false", "discover", low=0)
    weighted = check_options(weighting, "weighting", "discover", ("uniform", "finding")) == "finding"
    split = check_options(rescue_split, "rescue_split", "discover", ("even", "evidence"))
    n_hold = check_real(hold, "hold", "discover", low=0.0)
    lv_held = _normal_isf(min(check_probability(hold_false, "hold_false", "discover", open_low=True, open_high=True),
                              0.5))  # the z-score a held value's later slots must reach
    held: dict[bytes, HeldValue] = {}  # complete children held in earlier slots (scored again in every one)
    provisional: list[bytes] = []
    provisional_rank: list[float] = []  # (1 - Phi(z)) / pi_t of each provisional prefix's first link
    n_regular = 0  # regular prefixes of the slot before (those that could have provisional children)
    symbols = spec.symbols
    per_prefix = sum(len(symbols) ** i for i in range(1, spec.segment + 1)) + len(symbols) ** spec.segment
    if per_prefix > MAX_TAILS:  # found by a tester: segment 3 over bytes grew to 23 GB and was killed
        msg = (f"discover: a segment of {spec.segment} bytes over an alphabet of {len(symbols)} symbols gives "
               f"{per_prefix:,} tails to score per prefix (more than {MAX_TAILS:,}: tens of GB of memory); use "
               f"segment 2 (--segment 2) or a smaller alphabet (--alphabet lowercase, hostname, url, ...)")
        raise InvalidParameterError(msg)
    prior = TailPrior(symbols, mix=mix)
    prior.learn(v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in prior_values)
    learnt: set[tuple[bytes, bytes]] = set()
    frontier: list[bytes] = [b""]
    frontier_z: list[float] = [math.inf]
    in_reserve: set[bytes] = set()
    pool: dict[bytes, _Pooled] = {}
    tested: list[tuple[float, float]] = []  # (finding z, pooling level) of every value ever pooled
    n_reports = 0
    per_slot: list[dict[str, Any]] = []
    traced: dict[bytes, list[tuple[float, bool]]] = {bytes(v): [] for v in trace}
    chance = ConfirmationNull(spec.params.num_hashes)
    for slot in range(spec.levels):
        oracle = SlotOracle(aggregate, spec, slot)
        n_reports += int(oracle.n_reports)
        n_s = spec.prefix_length(slot)
        grow = n_s - (spec.prefix_length(slot - 1) if slot else 0)
        tails = [PARTIAL + t for t in _tails(symbols, grow)] if n_s < spec.max_length else []
        tails += [COMPLETE + t for i in range(1, grow + 1) for t in _tails(symbols, i)]
        if not tails:  # the confirmation slot: pooled values only
            frontier, frontier_z, provisional = [], [], []
        total = len(frontier) * len(tails)
        if total > limit:
            msg = (f"discover: slot {slot} would score {total:,} candidates (more than max_candidates={limit:,}); "
                   f"lower 'beam' or use a smaller alphabet or segment.")
            raise InvalidParameterError(msg)
        info: dict[str, Any] = {"slot": slot, "reports": int(oracle.n_reports), "frontier": len(frontier),
                                "candidates": total + len(pool)}
        if oracle.n_reports <= 0 or (total == 0 and not pool and not provisional):
            per_slot.append({**info, "kept": 0, "found": 0})
            frontier, frontier_z, provisional = [], [], []
            if progress is not None:
                progress(1)
            continue
        # Levels per tail: by the learnt prior once it has seen enough bytes, else one for all.
        if z_extend is None and prior.active:
            info["prior_perplexity"] = prior.perplexity()
            weights = prior.weights(tails)
            lv_extend, lv_reserve, lv_pending = _tail_levels(tails, weights, th, false_children, reserve, pending)
        else:
            weights = _uniform_weights(tails)
            partial = np.array([t[:1] == PARTIAL for t in tails], dtype=bool)
            lv_extend = np.where(partial, th.extend, np.inf)
            lv_reserve = np.where(partial, th.reserve, np.inf)
            lv_pending = np.where(partial, np.inf, th.pending)
        lv_rescue = lv_reserve
        if kappa > 0 and slot > 0 and z_extend is None:  # provisional prefixes: a deeper band, one slot at a time
            lv_rescue = np.minimum(_tail_levels(tails, weights, th, false_children + reserve + n_rescue, 0.0,
                                                pending)[0], lv_reserve)
        tail_at = {t: i for i, t in enumerate(tails)}
        scores = _SlotScores(oracle, frontier, frontier_z, tails, list(pool))
        frontier_set = set(frontier) | set(provisional)
        cuts = _explain_cuts(total + len(pool))
        info["fit_level"] = cuts[-1]
        if budget > 0:
            # The clearly present fragments are fitted alone first: fitted together with the
            # absent ones that collide with them, their count would be split between them.
            # A fragment's count is at most its prefix's: only strong prefixes can have
            # children this strong (half the cut leaves a margin of several standard errors).
            for cut in cuts:
                scores.explain(scores.above(cut, cut / 2.0, robust=True), cut, budget)
        final = scores.above(np.minimum(lv_rescue, lv_pending), robust=True)
        chance.add_slot(oracle)
        kept: list[tuple[float, bytes]] = []
        reserved: list[tuple[float, bytes]] = []
        rescued: list[tuple[float, bytes]] = []
        found = 0
        n = oracle.n_reports
        if provisional and kappa > 0:
            t_prov = time.process_time()
            # Prefixes kept provisionally in the slot before: their children must be strong.
            budgets = provisional_budgets(np.array(provisional_rank), n_regular, r_false, split, n_rescue)
            for value, partial_child, e, s_e, lv in _provisional_children(
                    oracle, provisional, budgets, pending / false_children, tails, weights, th.extend):
                if partial_child:
                    kept.append((e / s_e, value))
                elif value not in pool:
                    pool[value] = _Pooled.found(slot, e / n, s_e / n, len(tested))
                    tested.append((e / s_e, lv))
                    found += 1
            info["provisional"] = len(provisional)
            info["provisional_cpu_s"] = time.process_time() - t_prov
        if slot == spec.levels - 1:  # no slot left to confirm a held value
            held.clear()
        if held:  # complete children held in earlier slots: pooled once their wait is over, if strong
            info["held"] = len(held)
            passed = score_held(oracle, held, lv_held)
            for value, share, s_e in passed:
                if value not in pool:
                    pool[value] = _Pooled.found(slot, share, s_e, len(tested))
                    tested.append((share / s_e, lv_held))
                    found += 1
            info["held_pooled"] = len(passed)
        for (head, tail), (e, s) in final.items():
            z = e / s if s > 0 else 0.0
            value = head + tail[1:]
            i = tail_at.get(tail)
            if i is None:  # a pooled or fitted fragment outside the extensions
                z_ext, z_res, z_pend = t_extend, th.reserve, th.pending
            else:
                z_ext, z_res, z_pend = lv_extend[i], lv_reserve[i], lv_pending[i]
            if tail[:1] == PARTIAL:
                if z >= z_ext:
                    kept.append((z, value))
                elif z >= z_res and head not in in_reserve:
                    reserved.append((z, value))
                elif i is not None and z >= lv_rescue[i] and head not in in_reserve:
                    # ranked by the budget its level would need: 1 - Phi(z) over the tail's prior weight
                    rescued.append((-float(_normal_sf(np.array(z))) / weights[i], value))
            elif value not in pool and z >= z_pend:
                pool[value] = _Pooled.found(slot, e / n, s / n, len(tested))
                tested.append((z, z_pend))
                found += 1
        if n_hold > 0 and slot > 0 and z_extend is None:
            t_held = time.process_time()
            held.update(held_values(oracle, scores.frontier + provisional, tails, weights, n_hold, pool,
                                    likely=prior.active))
            info["held_cpu_s"] = time.process_time() - t_held
        dropped = 0
        fitted = np.array([scores.fitted.get(pair, 0.0) for pair in scores.known_pairs], dtype=np.float64)
        evidence = chance.statistic(slot, scores.known_bits, fitted).tolist()
        for value, pair, x in zip(scores.known, scores.known_pairs, evidence):
            e, s = final[pair]
            entry = pool[value]
            entry.add(e / n, s / n, x)
            if entry.all_z() < _PRUNE_Z:
                del pool[value]
                dropped += 1
        if traced:
            t_pairs = [spec.split(v, slot) for v in traced]
            t_est, t_se = oracle.trimmed(spec.fragment_bits(t_pairs, slot))
            for value, e, se_v in zip(traced, t_est.tolist(), t_se.tolist()):
                pair = spec.split(value, slot)
                head_in = pair[0] in frontier_set or value in pool
                traced[value].append((round((e + scores.fitted.get(pair, 0.0)) / se_v, 2), head_in))
        fresh = [pair for pair in scores.fitted if pair not in learnt]
        learnt.update(fresh)
        if prior.active and fresh:  # the prior's cross-entropy on fragments it has not seen (held out)
            per_slot_bits = prior.bits_per_byte([tail[1:] for _, tail in fresh if tail[:1] == PARTIAL])
        else:
            per_slot_bits = math.nan
        prior.learn(tail[1:] for _, tail in fresh)
        kept.sort(key=lambda zv: -zv[0])
        reserved.sort(key=lambda zv: -zv[0])
        chosen = kept[:width] + reserved[:max(width - len(kept), 0)]
        n_regular = sum(1 for head in scores.frontier if head not in in_reserve)
        frontier = [v for _, v in chosen]
        frontier_z = [z for z, _ in chosen]
        in_reserve = {v for _, v in reserved[:max(width - len(kept), 0)]}
        rescued.sort(key=lambda zv: -zv[0])
        provisional = [v for _, v in rescued[:_RESCUE_BEAM]] if kappa > 0 else []
        provisional_rank = [-r for r, _ in rescued[:_RESCUE_BEAM]] if kappa > 0 else []
        per_slot.append({**info, "kept": len(frontier) - len(in_reserve), "reserve": len(in_reserve),
                         "found": found, "dropped": dropped, "prior_bits_per_byte": per_slot_bits,
                         "pool": len(pool), "fitted": len(scores.fitted),
                         "null_std_error": oracle.null_std_error / max(n, 1.0)})
        if progress is not None:
            progress(1)
    values = list(pool)
    weight = np.array([pool[v].weight for v in values], dtype=np.float64)
    mean = np.array([pool[v].weighted for v in values], dtype=np.float64)
    prop = np.divide(mean, weight, out=np.zeros_like(mean), where=weight > 0)
    prop_se = np.divide(1.0, np.sqrt(weight), out=np.full_like(weight, np.nan), where=weight > 0)
    zs = np.divide(prop, prop_se, out=np.zeros_like(prop), where=weight > 0)
    shown = np.flatnonzero(zs >= _SHOW_Z)
    order = shown[np.argsort(-prop[shown], kind="stable")]
    first = np.array([pool[values[i]].first_slot for i in order], dtype=np.int64)
    pval = chance.pvalues(np.array([pool[values[i]].evidence for i in order], dtype=np.float64), first)
    # Generalized Bonferroni (Lehmann and Romano, Ann. Statist. 33, 2005, Theorem 2.1): with the
    # cutoff (max_false + 1) alpha / n the chance of more than max_false false values is at most alpha,
    # whatever the dependence between the p-values.
    # Weighted (Genovese, Roeder and Wasserman 2006): alpha g_i / sum g over every value pooled.
    n_pooled = len(tested)
    uniform = (k_false + 1) * alpha / max(n_pooled, 1)
    cutoff: float | Array = uniform
    if weighted and tested:
        z_lv = np.array(tested, dtype=np.float64)
        g = finding_weights(z_lv[:, 0], z_lv[:, 1], 1.0 / max(pending, 1.0))
        cutoff = (k_false + 1) * alpha * g[[pool[values[i]].index for i in order]] / g.sum()
    return DiscoveryResult(
        values=tuple(values[i] for i in order), proportion=prop[order], prop_std_error=prop_se[order],
        zscore=zs[order], pvalue=pval, first_slot=first,
        slots=np.array([pool[values[i]].slots for i in order], dtype=np.int64),
        found_zscore=np.array([pool[values[i]].found_z for i in order], dtype=np.float64),
        significant=pval <= cutoff, n_tested=n_pooled, n_reports=n_reports, spec=spec,
        significance_level=alpha, max_false=k_false,
        diagnostics={"z_extend": t_extend, "z_reserve": th.reserve, "z_pending": th.pending,
                     "z_significant": _normal_isf(min(uniform, 0.5)), "beam": width, "pooled": len(values), "slots": per_slot,
                     **({"trace": {display_string(v): z for v, z in traced.items()}} if traced else {}),
                     **({"cutoffs": cutoff.tolist()} if isinstance(cutoff, np.ndarray) else {}),
                     "seconds": time.perf_counter() - started})
