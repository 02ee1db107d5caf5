"""Planning a collection with discovery: the discovery parameters, each client's privacy, what is found.

:func:`plan_discovery` complements :func:`rappor.privacy.plan` (the full-string design):
given the full-string parameters, the number of clients, the share of them that send a
discovery report instead (``split="clients"``) and the discovery layout, it sets the
discovery parameters to the same privacy targets, states the per-client privacy
(:func:`rappor.analysis.discovery.discovery_privacy`) and predicts the smallest share of
the clients whose value the search finds (:func:`discovery_frequency`).

Model behind the prediction
---------------------------
A slot gets ``n_s = N w_s / W`` reports (slot weights ``w_s``, all 1 by default).  A value held by a share ``x``
of the clients has ``x n_s`` reports of its fragment there; the trimmed estimate's
standard error is ``sqrt(c n_s v / (1 - beta)**2)`` with ``v = lam (1 - lam) / (p11 -
p01)**2`` the variance of one report's debiased bit at the typical rate ``lam = p01 +
(p11 - p01) beta`` (``beta = 1 - (1 - 1/k)**h``), ``c`` the alpha-trimmed mean's
variance factor (:func:`rappor.analysis.discovery._oracle._trimmed_mean_variance`).  Collisions
with other values are left out (the search fits the frequent ones and trims the
rest).  A value of ``l`` bytes is extended through ``S = ceil(l / segment)`` slots, by
the search's own rules (:func:`rappor.analysis.discovery.discover`, its default
``false_children``, ``reserve`` and ``pending``): its prefix needs ``z >= z_extend`` in
each of the first ``S - 1`` slots, or ``z >= z_reserve`` in one whose parent prefix was
not itself a reserve (a two-state chain over the slots), the value ``z >= z_pending`` in
the last, and its confirming slots (those after its end; the last slot for a value that
ends there) ``z >= z_confirm``.  With ``mu = x n_s / se`` each step passes with
probability ``Phi(mu - z)``; :func:`discovery_frequency` solves the product for ``power``.
From slot 1 on, the search spreads each budget by its learnt prior over tails
(:mod:`rappor.analysis.discovery._prior`); the model gives a value's tails of ``j`` bytes
the prior ``(1 - mix) P**-j + mix / |A|**j`` of a text whose bytes have perplexity ``P``
under it (``perplexity``; the search reports the held-out figure, ``prior_bits_per_byte``
in its diagnostics: 4.0-5.8 bits, median 4.7, ``P`` about 26, on the benchmark's word-
and host-like populations), and the levels that prior sets (weighted Bonferroni).
A prefix is held by every client whose value starts with it, so in the first slots it is
more frequent than the value (two-byte prefixes are shared by many values; ``www.``, a
common syllable): the model adds to the value's share ``x``, in each prefix slot, the
share of the other values sharing its prefix there (the *shared-prefix credit*:
:func:`shared_prefix_credit` of a population or an earlier ``found.csv``, one row per
value, the probability found averaged over the rows; by default the cautious
:func:`typical_prefix_credit`, ``P**-n`` for an ``n``-byte prefix, 0.15% for two bytes at
``P = 26``).  Left out: collisions with unfitted values raise the trimmed null standard
error some 10% above this randomized-response model (measured ``z / mu`` of 0.89-0.93 in
slots 2-7, ``docs/discovery.md`` section 4, which compares the model's 1/2 points with
the benchmark's).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from ..._util.lazy import lazy_module
from ..._util.validation import check_int, check_options, check_probability, check_real
from ...exceptions import InvalidParameterError
from ...params import Params
from ...privacy._planner import PlanResult, plan
from ._oracle import _trimmed_mean_variance
from ._privacy import DiscoveryPrivacy, discovery_privacy
from ._search import DEFAULT_FALSE_CHILDREN, DEFAULT_PENDING, DEFAULT_PRIOR_MIX, DEFAULT_RESERVE, _thresholds
from ._spec import DiscoverySpec

if TYPE_CHECKING:
    from scipy import optimize, special
else:  # imported on first use: keeps `import rappor` light
    optimize = lazy_module("scipy.optimize")
    special = lazy_module("scipy.special")

__all__ = ["DiscoveryPlan", "discovery_frequency", "plan_discovery", "plan_slot_weights", "plan_with_discovery",
           "shared_prefix_credit", "typical_prefix_credit"]

#: The discovery design measured in docs/discovery.md: one hash, 256 bits, 32 cohorts per slot.
DEFAULT_DISCOVERY_BITS = 256
DEFAULT_DISCOVERY_COHORTS = 32


#: z-score a value's confirming slots need: Bonferroni at the level 0.05 over the values pooled, some
#: 10**5 to 10**6 at 1 M to 10 M clients (``1 - Phi(5.0) = 2.9e-7``; 4.9 to 5.3 by the count).
_Z_CONFIRM = 5.0

#: Per-byte perplexity of values under the search's learnt prior that the planner assumes: the
#: held-out figure (``prior_bits_per_byte``) on the benchmark's populations is 4.0-5.8 bits, median 4.7.
DEFAULT_PERPLEXITY = 26.0


def _norm_cdf(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def _levels(spec: DiscoverySpec, th: Any, steps: int, end: int, false_children: float, reserve: float,
            pending: float, perplexity: float | None, prior_mix: float) -> list[tuple[float, float]]:
    """Per slot of a value's path, ``(z_extend, z_reserve)``; the last ``(inf, z_pending)`` (``end`` bytes).

    Slot 0 has no prior yet; from slot 1 on, a tail of ``j`` bytes gets the prior
    ``(1 - mix) P**-j + mix / |A|**j`` (:func:`discovery_frequency`).
    """
    size = len(spec.symbols)
    n_complete = sum(size ** i for i in range(1, spec.segment + 1))
    out: list[tuple[float, float]] = []
    for slot in range(steps):
        last = slot == steps - 1
        if slot == 0 or perplexity is None or prior_mix >= 1.0:
            out.append((math.inf, th.pending) if last else (th.extend, th.reserve))
            continue
        ppl = min(float(perplexity), float(size))
        j = end if last else spec.segment
        prior = (1.0 - prior_mix) * ppl ** -j + prior_mix / size ** j
        if last:
            share = prior * size ** j / n_complete
            out.append((math.inf, min(_isf(min(pending * share, 0.5)), th.extend)))
        else:
            extend = _isf(min(false_children * prior, 0.5))
            out.append((extend, min(_isf(min((false_children + reserve) * prior, 0.5)), extend)))
    return out


def _isf(q: float) -> float:
    """``z`` with ``1 - Phi(z) = q``."""
    from scipy import special

    return float(math.sqrt(2.0) * special.erfcinv(2.0 * q))


def shared_prefix_credit(spec: DiscoverySpec, shares: Mapping[str, float] | Mapping[bytes, float], *,
                         top: int | None = 50) -> npt.NDArray[np.float64]:
    """Shared-prefix credit: per value and prefix slot, the share of the other values with its prefix there.

    In slot ``s`` a client holding a value longer than ``n_s`` bytes reports its
    ``n_s``-byte prefix, so the prefix's share is the sum of the shares of every value
    longer than ``n_s`` that starts with it; a value's *credit* there is that sum minus
    its own share (0 in the slots where the value is complete).  Two-byte prefixes are
    shared by many values (on the benchmark's word- and host-like populations the top
    values' slot-0 credit is 0.11% to over 2%, median about 1%, against their own
    0.2-0.8%), longer ones rarely (``www.``, a common syllable).

    Parameters
    ----------
    spec : DiscoverySpec
    shares : mapping of str or bytes to float
        Values (UTF-8 for ``str``) and their shares: a population, or the significant
        values of an earlier collection's ``found.csv`` (whose credit is then a lower bound:
        the values it did not find share prefixes too).
    top : int or None, default=50
        Rows for the ``top`` most frequent values only (those near the detection
        threshold are what the planner needs); None: every value.

    Returns
    -------
    ndarray of shape (v, spec.levels - 1)
        For :func:`discovery_frequency` ``shared`` and :func:`plan_slot_weights`.
    """
    items = [(v.encode("utf-8") if isinstance(v, str) else bytes(v), float(x)) for v, x in shares.items()]
    items = [(v, x) for v, x in items if v and x > 0 and math.isfinite(x)]
    if not items:
        raise InvalidParameterError("shared_prefix_credit: 'shares' needs a value with a positive share.")
    items.sort(key=lambda vx: -vx[1])
    rows = items if top is None else items[:check_int(top, "top", "shared_prefix_credit", low=1)]
    out = np.zeros((len(rows), spec.levels - 1), dtype=np.float64)
    for s in range(spec.levels - 1):
        n_s = spec.prefix_length(s)
        mass: dict[bytes, float] = {}
        for v, x in items:
            if len(v) > n_s:
                mass[v[:n_s]] = mass.get(v[:n_s], 0.0) + x
        for i, (v, x) in enumerate(rows):
            if len(v) > n_s:
                out[i, s] = max(mass[v[:n_s]] - x, 0.0)
    return out


def typical_prefix_credit(spec: DiscoverySpec, perplexity: float = DEFAULT_PERPLEXITY) -> npt.NDArray[np.float64]:
    """Shared-prefix credit of a typical value whose bytes have per-byte ``perplexity``: one row, ``P**-n_s``.

    The others' share of a value's ``n``-byte prefix is about the probability of that
    prefix among the values; for a value whose bytes carry ``log2 P`` bits each (the
    search's held-out figure, :data:`DEFAULT_PERPLEXITY`), its typical (geometric mean)
    value is ``P**-n``: 0.15% for two bytes at ``P = 26``, nothing from four bytes on.
    Real values share more (a first letter carries fewer bits than an average byte, and
    ``www.`` or a common syllable start many values: on the benchmark's populations the
    top values' median two-byte credit is about 1%), so this is a cautious default for
    when no population or earlier ``found.csv`` is at hand (:func:`shared_prefix_credit`).
    """
    ppl = check_real(perplexity, "perplexity", "typical_prefix_credit", low=1.0, low_open=True)
    return np.array([[ppl ** -float(spec.prefix_length(s)) for s in range(spec.levels - 1)]], dtype=np.float64)


def _credit_rows(shared: npt.ArrayLike | None, spec: DiscoverySpec, owner: str) -> npt.NDArray[np.float64]:
    if shared is None:
        return np.zeros((1, spec.levels - 1), dtype=np.float64)
    rows = np.atleast_2d(np.asarray(shared, dtype=np.float64))
    if rows.ndim != 2 or rows.shape[0] == 0 or rows.shape[1] != spec.levels - 1 or not np.all(np.isfinite(rows)) \
            or np.any(rows < 0):
        raise InvalidParameterError(f"The 'shared' parameter of {owner} must be non-negative shares of shape "
                                    f"(v, {spec.levels - 1}) (one column per prefix slot). Got shape "
                                    f"{np.shape(shared)}.")
    return rows


def discovery_frequency(spec: DiscoverySpec, n_reports: int, *, value_length: int = 16, power: float = 0.5,
                        false_children: float = DEFAULT_FALSE_CHILDREN, reserve: float = DEFAULT_RESERVE,
                        pending: float = DEFAULT_PENDING, perplexity: float | None = DEFAULT_PERPLEXITY,
                        prior_mix: float = DEFAULT_PRIOR_MIX, shared: npt.ArrayLike | None = None) -> float:
    """Smallest share of the discovery reports whose value is found with probability ``power``.

    Parameters
    ----------
    spec : DiscoverySpec
    n_reports : int
        Discovery reports (spread evenly over the ``spec.levels`` slots).
    value_length : int, default=16
        Bytes of the value.
    power : float, default=0.5
    false_children, reserve, pending, prior_mix : float
        As :func:`rappor.analysis.discovery.discover` (they set ``z_extend``, ``z_reserve``
        and ``z_pending``, and spread them over the tails).
    perplexity : float or None, default=26.0
        Per-byte perplexity of the values under the search's learnt prior (its held-out
        figure on the benchmark's word- and host-like populations, 2**4.7); ``None``:
        every tail at one level (``prior_mix=1``, or values of random bytes).
    shared : array-like of shape (v, levels - 1), optional
        Shared-prefix credit: row ``i`` holds, for each prefix slot, the share of the
        *other* values whose prefix there is the same as that of a value ``i``
        (:func:`shared_prefix_credit`); a value's prefix in slot ``s`` then has share
        ``x + shared[i, s]``, and the probability found is the mean over the rows.
        None: no credit (every prefix as rare as its value).

    Returns
    -------
    float
        The share (of the discovery reports); see the module docstring for the model.
    """
    n = check_int(n_reports, "n_reports", "discovery_frequency", low=1)
    length = check_int(value_length, "value_length", "discovery_frequency", low=1, high=spec.max_length)
    pw = check_probability(power, "power", "discovery_frequency", open_low=True, open_high=True)
    th = _thresholds(spec, false_children, reserve, pending, None)
    steps = math.ceil(length / spec.segment)
    levels = _levels(spec, th, steps, length - spec.segment * (steps - 1), false_children, reserve, pending,
                     perplexity, prior_mix)
    p = spec.params
    beta = 1.0 - (1.0 - 1.0 / p.num_bloombits) ** p.num_hashes
    d = p.p11 - p.p01
    lam = p.p01 + d * beta
    per_report = lam * (1.0 - lam) / (d * d) / p.num_hashes / (1.0 - beta) ** 2
    trim = p.num_cohorts // 8
    unit = math.sqrt(_trimmed_mean_variance(trim / p.num_cohorts) * per_report)
    # z of a value of share x in slot s: x n_s / (unit sqrt(n_s)) = x sqrt(n_s) / unit.
    roots = np.sqrt(n * spec.slot_shares[:steps]) / unit
    # The slots after the value's end confirm it (its p-value pools them); a value that
    # ends in the last slot has none of its own and is confirmed there.
    confirm = math.sqrt(n * float(spec.slot_shares[steps:].sum() or spec.slot_shares[-1])) / unit
    credit = _credit_rows(shared, spec, "discovery_frequency")[:, :steps - 1]
    extend = np.array([lv[0] for lv in levels[:-1]], dtype=np.float64)
    low = np.array([lv[1] for lv in levels[:-1]], dtype=np.float64)

    def found(x: float) -> float:
        # Every partial prefix needs z_extend, or z_reserve in one slot whose parent was
        # not a reserve (the search's rule): a two-state chain over the prefix slots, one
        # per credit row (the prefix's share is the value's plus the others sharing it).
        z = (x + credit) * roots[:-1]
        strong, weak_pass = special.ndtr(z - extend), special.ndtr(z - low)
        regular, weak = np.ones(len(credit)), np.zeros(len(credit))
        for s in range(steps - 1):
            regular, weak = (regular + weak) * strong[:, s], regular * (weak_pass[:, s] - strong[:, s])
        return float(np.mean(regular + weak) * _norm_cdf(x * roots[-1] - levels[-1][1])
                     * _norm_cdf(x * confirm - _Z_CONFIRM))

    if found(1.0) < pw:  # too few reports: not even a value every client holds
        return 1.0
    # found is increasing in x; Brent's method to a float's resolution of the share.
    return float(optimize.brentq(lambda x: found(x) - pw, 0.0, 1.0, xtol=1e-300, rtol=4 * np.finfo(float).eps))


def plan_slot_weights(spec: DiscoverySpec, n_reports: int, lengths: Mapping[int, float], *, total: int = 128,
                      shared: npt.ArrayLike | None = None, perplexity: float | None = DEFAULT_PERPLEXITY,
                      power: float = 0.9) -> tuple[int, ...]:
    """Slot weights that make values of the given lengths easiest to find (under the module's model).

    Each slot's weight sets its share of the reports.  A value of ``l`` bytes needs
    its prefix found in slots ``0 .. ceil(l / segment) - 2``, its end in slot
    ``ceil(l / segment) - 1`` and confirmation in the later ones: with 16 slots
    alike for values up to 30 bytes, most reports sit in slots past the end of
    6-12 byte values.  The weights (``total`` units, each slot at least 1) are improved
    one unit at a time, greedily, to lower the ``lengths``-weighted mean of
    :func:`discovery_frequency` (the share found with probability 1/2) with the
    search's learnt prior (``perplexity``) and the shared-prefix credit ``shared``.
    The credit matters: the first slots' prefixes are shared by many values (every
    measured run at 10 M has z 6-77 in slot 0 for the top 10), and a model without it
    would see slot 0, which has no prior yet, as the bottleneck and move a fifth of the
    reports there.

    Parameters
    ----------
    spec : DiscoverySpec
        The layout (its own weights are ignored).
    n_reports : int
        Discovery reports.
    lengths : mapping of int to float
        Value length (bytes, at most ``spec.max_length``) -> its weight: the lengths of
        the values to find (e.g. those found in an earlier collection).
    total : int, default=128
        Weight units to spread.
    shared : array-like of shape (v, spec.levels - 1), optional
        Shared-prefix credit (:func:`shared_prefix_credit` of a population or of an earlier
        ``found.csv``); None: :func:`typical_prefix_credit` at ``perplexity`` (no credit
        when ``perplexity`` is None).
    perplexity : float or None, default=26.0
        As :func:`discovery_frequency`; None: every tail at one level.

    Returns
    -------
    tuple of int
        One weight per slot, for :class:`DiscoverySpec` ``slot_weights``.
    """
    import dataclasses

    n = check_int(n_reports, "n_reports", "plan_slot_weights", low=1)
    units = check_int(total, "total", "plan_slot_weights", low=spec.levels)
    pw = check_probability(power, "power", "plan_slot_weights", open_low=True, open_high=True)
    prior = {int(k): float(v) for k, v in lengths.items() if 1 <= int(k) <= spec.max_length and v > 0}
    if not prior:
        raise InvalidParameterError("plan_slot_weights: 'lengths' needs a positive weight for some length in "
                                    f"[1, {spec.max_length}].")
    credit = (_credit_rows(shared, spec, "plan_slot_weights") if shared is not None
              else typical_prefix_credit(spec, perplexity) if perplexity is not None else None)

    def cost(weights: list[int]) -> float:
        trial = dataclasses.replace(spec, slot_weights=tuple(weights))
        return sum(w * discovery_frequency(trial, n, value_length=k, perplexity=perplexity, shared=credit,
                                           power=pw) for k, w in prior.items())

    base, extra = divmod(units, spec.levels)
    weights = [base + int(i < extra) for i in range(spec.levels)]
    best = cost(weights)
    improved = True
    while improved:
        improved = False
        for i in range(spec.levels):
            for j in range(spec.levels):
                if i == j or weights[j] <= 1:
                    continue
                trial = list(weights)
                trial[i] += 1
                trial[j] -= 1
                value = cost(trial)
                if value < best * (1.0 - 1e-9):
                    best, weights, improved = value, trial, True
    return tuple(weights)


@dataclass(frozen=True, slots=True, kw_only=True)
class DiscoveryPlan:
    """Discovery beside a full-string design (the result of :func:`plan_discovery`).

    Attributes
    ----------
    spec : DiscoverySpec
        The discovery layout and parameters (one slot).
    discovery_share : float
        Share of the clients sending a discovery report instead of a full-string one.
    n_clients, n_full_reports, n_discovery_reports : int
    privacy : DiscoveryPrivacy
        Per-client privacy of the two collections together.
    found_frequency : dict of int to float
        For a value of that many bytes: the smallest share of the clients found with
        probability 1/2 (:func:`discovery_frequency`; a client's role does not depend on
        its value, so its share of the discovery reports is its share of the clients).
    found_frequency_other : dict of int to float
        The same with the other choice of instantaneous noise (with the full-string
        design's ``epsilon_one`` when the plan has none, none when it has it); empty
        when the full-string design has no instantaneous noise either.
    irr : bool
        Whether the discovery reports carry instantaneous noise.
    """

    spec: DiscoverySpec
    discovery_share: float
    n_clients: int
    n_full_reports: int
    n_discovery_reports: int
    privacy: DiscoveryPrivacy
    found_frequency: dict[int, float]
    found_frequency_other: dict[int, float]
    irr: bool

    @property
    def thresholds(self) -> dict[str, float]:
        """The z-scores :func:`discovery_frequency` models: the search's defaults and the confirmation's."""
        th = _thresholds(self.spec, DEFAULT_FALSE_CHILDREN, DEFAULT_RESERVE, DEFAULT_PENDING, None)
        seg = self.spec.segment
        prior = _levels(self.spec, th, 3, seg, DEFAULT_FALSE_CHILDREN, DEFAULT_RESERVE, DEFAULT_PENDING,
                        DEFAULT_PERPLEXITY, DEFAULT_PRIOR_MIX)
        return {"z_extend": th.extend, "z_reserve": th.reserve, "z_pending": th.pending, "z_confirm": _Z_CONFIRM,
                "perplexity": DEFAULT_PERPLEXITY, "z_extend_prior": prior[1][0], "z_reserve_prior": prior[1][1],
                "z_pending_prior": prior[2][1]}

    def as_dict(self) -> dict[str, Any]:
        """Plain values (for JSON)."""
        return {"discovery": self.spec.as_dict(), "discovery_share": self.discovery_share,
                "thresholds": self.thresholds,
                "n_clients": self.n_clients, "n_full_reports": self.n_full_reports,
                "n_discovery_reports": self.n_discovery_reports, "privacy": asdict(self.privacy),
                "found_frequency": {str(k): v for k, v in self.found_frequency.items()}, "irr": self.irr,
                "found_frequency_other": {str(k): v for k, v in self.found_frequency_other.items()}}


def plan_discovery(params: Params, n_clients: int, *, discovery_share: float = 0.75, max_length: int = 30,
                   segment: int = 2, alphabet: str | bytes = "bytes", lengths: tuple[int, ...] = (8, 16, 30),
                   split: Literal["clients"] = "clients", irr: bool = False,
                   slot_weights: tuple[int, ...] | None = None, shared: npt.ArrayLike | None = None,
                   ) -> DiscoveryPlan:
    """Discovery parameters meeting the privacy of ``params``, and what they find among ``n_clients``.

    The discovery reports use one hash, 256 bits and 32 cohorts per slot (the design
    measured in ``docs/discovery.md``), the ``f`` giving ``params.epsilon_inf`` and, by
    default, **no instantaneous noise** (``p = 0``, ``q = 1``): what the measurements
    need.  Its cost: a discovery report reveals its permanent response (its
    ``epsilon_one`` is ``epsilon_inf``), and one client's discovery reports of the same
    value in several collections are identical, so they can be linked over time; what
    they reveal of the value stays bounded by ``epsilon_inf`` (the permanent response is
    memoized).  ``irr=True`` gives them the symmetric instantaneous noise of
    ``params.epsilon_one`` instead; :attr:`DiscoveryPlan.found_frequency_other` says what
    the other choice finds.  With the client split each client sends one report.

    Parameters
    ----------
    params : Params
        The full-string parameters (e.g. :attr:`rappor.privacy.PlanResult.best`).
    n_clients : int
    discovery_share : float, default=0.75
        The measured default (``docs/discovery.md``, share sweep).
    max_length, segment, alphabet, slot_weights :
        The discovery layout (:class:`DiscoverySpec`).
    lengths : tuple of int, default=(8, 16, 30)
        Value lengths (bytes) for :attr:`DiscoveryPlan.found_frequency`.
    split : {"clients"}
        Only the client split is planned (the budget split halves each report's epsilon,
        which costs more than it brings at epsilon around 4: ``docs/discovery.md``).
    irr : bool, default=False
        Instantaneous noise on the discovery reports (at ``params.epsilon_one``).
    shared : array-like of shape (v, levels - 1), optional
        Shared-prefix credit for :attr:`DiscoveryPlan.found_frequency`
        (:func:`shared_prefix_credit`); None: :func:`typical_prefix_credit`.
    """
    from ...privacy._planner import _flip_for_epsilon_inf, _irr_for_epsilon_one

    if not isinstance(params, Params):
        raise InvalidParameterError(f"The 'params' parameter of plan_discovery must be a Params. Got {params!r}.")
    n = check_int(n_clients, "n_clients", "plan_discovery", low=1)
    share = check_probability(discovery_share, "discovery_share", "plan_discovery", open_low=True, open_high=True)
    check_options(split, "split", "plan_discovery", ("clients",))
    if not isinstance(irr, bool):
        raise InvalidParameterError(f"The 'irr' parameter of plan_discovery must be a bool. Got {irr!r} instead.")
    f = _flip_for_epsilon_inf(params.epsilon_inf, 1)
    full_has_irr = not (params.prob_p == 0.0 and params.prob_q == 1.0)
    n_disc = round(n * share)

    def layout(noisy: bool) -> tuple[DiscoverySpec, dict[int, float]]:
        p = _irr_for_epsilon_one(params.epsilon_one, 1, f) if noisy and full_has_irr else 0.0
        disc = Params(num_bloombits=DEFAULT_DISCOVERY_BITS, num_hashes=1, num_cohorts=DEFAULT_DISCOVERY_COHORTS,
                      prob_p=p, prob_q=1.0 - p, prob_f=f)
        spec = DiscoverySpec(params=disc, max_length=max_length, segment=segment, alphabet=alphabet,
                             slot_weights=slot_weights)
        credit = typical_prefix_credit(spec) if shared is None else shared
        found = {length: discovery_frequency(spec, max(n_disc, 1), value_length=length, shared=credit)
                 for length in lengths if 1 <= length <= spec.max_length}
        return spec, found

    spec, found = layout(irr)
    other = layout(not irr)[1] if full_has_irr else {}
    return DiscoveryPlan(spec=spec, discovery_share=share, n_clients=n, n_full_reports=n - n_disc,
                         n_discovery_reports=n_disc, privacy=discovery_privacy(params, spec.params),
                         found_frequency=found, found_frequency_other=other, irr=irr and full_has_irr)


def plan_with_discovery(n_clients: int, n_candidates: int, *, discovery_share: float = 0.75,
                        discovery_irr: bool = False, discovery_max_length: int = 30,
                        discovery_lengths: Mapping[int, float] | None = None,
                        discovery_values: Mapping[str, float] | None = None,
                        **options: Any) -> tuple[PlanResult, DiscoveryPlan]:
    """Plan a collection in which a share of the clients sends a discovery report instead of a full-string one.

    The full-string design is planned (:func:`rappor.privacy.plan`) for the
    ``(1 - discovery_share) n_clients`` clients that send one, then the discovery beside
    its best parameters (:func:`plan_discovery`).  This is what ``rappor plan
    --discovery-share`` runs.

    Parameters
    ----------
    n_clients : int
        Every client, whichever report it sends.
    n_candidates : int
        Length of the candidate list of the full-string decode.
    discovery_share : float, default=0.75
    discovery_irr : bool, default=False
        Instantaneous noise on the discovery reports (:func:`plan_discovery` ``irr``).
    discovery_max_length : int, default=30
        Longest value the discovery can find.
    discovery_lengths : mapping of int to float, optional
        Lengths of the values to find (bytes -> weight): the discovery's slots are then
        weighted for them (:func:`plan_slot_weights`).
    discovery_values : mapping of str to float, optional
        Values and their shares (an earlier collection's significant values): the slot
        weights then credit each prefix with the values that share it
        (:func:`shared_prefix_credit`); without them, :func:`typical_prefix_credit`.
    **options
        Passed to :func:`rappor.privacy.plan` (``epsilon_inf``, ``epsilon_one``,
        ``significance_level``, ``rng``, ...).

    Returns
    -------
    (PlanResult, DiscoveryPlan)
    """
    n = check_int(n_clients, "n_clients", "plan_with_discovery", low=1)
    share = check_probability(discovery_share, "discovery_share", "plan_with_discovery", open_low=True,
                              open_high=True)
    result = plan(max(1, round(n * (1.0 - share))), n_candidates, **options)
    disc = plan_discovery(result.best.params, n, discovery_share=share, irr=discovery_irr,
                          max_length=discovery_max_length)
    if discovery_lengths is not None:
        shared = (shared_prefix_credit(disc.spec, discovery_values) if discovery_values
                  else typical_prefix_credit(disc.spec))
        weights = plan_slot_weights(disc.spec, disc.n_discovery_reports, discovery_lengths, shared=shared)
        disc = plan_discovery(result.best.params, n, discovery_share=share, irr=discovery_irr,
                              max_length=discovery_max_length, slot_weights=weights, shared=shared)
    return result, disc
