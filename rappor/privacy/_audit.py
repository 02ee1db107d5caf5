"""Empirical privacy audit: does an encoder keep the epsilon its parameters claim?

The audit treats the encoder as a black box that can be sampled.  For pairs of
*neighbouring* values ``a`` and ``b`` (one client's value changed, the unit of privacy
of :mod:`rappor.privacy._accounting`) it encodes each value many times, each time as a new client,
and estimates the probability of every bit pattern on the bits where the Bloom filters
of ``a`` and ``b`` differ (the other bits have the same law under both values, so they
cancel from every likelihood ratio).  Two mechanisms are audited:

``report``
    one instantaneous response (PRR and IRR randomness together), against
    ``params.epsilon_one``;
``permanent``
    the permanent randomized response, what an observer of unboundedly many reports
    of one client learns, against ``params.epsilon_inf``.

A likelihood ratio is flagged only when a *lower* confidence bound on it exceeds
``e**epsilon``: the lower Clopper-Pearson bound of one probability divided by the upper
bound of the other, each one-sided at level ``significance_level / (2 T)`` where ``T`` is
the number of ratios tested.  By the union bound, a correct encoder fails the audit
with probability at most ``significance_level`` (the false-alarm probability), whatever
the sample sizes.  Pairs whose Bloom bits are disjoint are used, where the bound is
tight (the worst case of RAPPOR, arXiv:1407.6981, Theorems 1-2).

A third check follows one client: many reports of one value must converge to the
client's PRR (bit frequencies ``q`` where the PRR is 1 and ``p`` where it is 0) and not
to its Bloom filter; a client whose PRR differs from its Bloom filter is used, so the
two are distinguishable.

The audit is meant to *fail* on broken encoders: :func:`never_clearing_sampler`
reproduces a bug of a widely installed Python RAPPOR package (a true Bloom bit is never
cleared by the permanent response), which the audit rejects.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from .._util.lazy import lazy_module
from .._util.results import record_table
from .._util.validation import RngLike, check_int, check_real, check_rng
from ..client import Encoder, client_secret, encode_clients, prr_uniforms
from ..exceptions import InvalidParameterError
from ..client._hashing import bloom_bits, bloom_filter
from ..params import Params
from ..client._randomizer import instantaneous_response, permanent_response_from_words
from ..simulation._reports import simulate_reports

if TYPE_CHECKING:
    from scipy import stats
else:  # imported on first use: keeps `import rappor` light
    stats = lazy_module("scipy.stats")

__all__ = [
    "AuditResult",
    "AuditRow",
    "AuditSample",
    "ConvergenceCheck",
    "audit_encoder",
    "batch_sampler",
    "client_sampler",
    "never_clearing_sampler",
]

Array = npt.NDArray[Any]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class AuditSample:
    """Encodings of one value in cohort 0.

    Attributes
    ----------
    bloom : ndarray of shape (k,)
        The value's Bloom filter.
    prr : ndarray of shape (n, k) or None
        Permanent responses (``None`` when the encoder does not expose them).
    irr : ndarray of shape (n, k)
        Reports.
    """

    bloom: Array
    prr: Array | None
    irr: Array


#: ``sampler(value, n, rng, one_client)``: ``n`` encodings of ``value`` in cohort 0, each by a
#: new client, or all by one client when ``one_client`` is true.
Sampler = Callable[[str, int, np.random.Generator, bool], AuditSample]


def client_sampler(params: Params) -> Sampler:
    """AuditSample the real client code of :mod:`rappor.client` (keyed PRR, IRR from a seeded generator).

    Reports of new clients come from :func:`rappor.encode_clients` (the path of
    ``rappor encode``) with a fresh key drawn from ``rng`` and one client id per
    report; their PRRs from :func:`rappor.prr_uniforms` of each client's secret and
    the client's rule (:func:`rappor.client.permanent_response_from_words`).  One client's reports come from
    :meth:`rappor.Encoder.encode_batch`.  The law of the reports is the same as with the
    OS CSPRNG; seeding only makes the audit reproducible.
    """
    one_cohort = replace(params, num_cohorts=1)  # every client in cohort 0; hashing depends on the cohort only

    def sample(value: str, n: int, rng: np.random.Generator, one_client: bool) -> AuditSample:
        k = params.num_bloombits
        bloom = bloom_filter(value, 0, params)
        if one_client:
            enc = Encoder(params, rng.bytes(32), cohort=0, rng=rng)
            prr_one = enc.trace(value).prr
            return AuditSample(bloom=bloom, prr=np.broadcast_to(prr_one, (n, k)), irr=enc.encode_batch([value] * n).bits())
        key = rng.bytes(32)
        ids = [f"client{i}" for i in range(n)]
        irr = encode_clients(one_cohort, key, ids, [value] * n, rng=rng).bits()
        u = np.stack([prr_uniforms(client_secret(key, cid), 0, value, one_cohort) for cid in ids]) if n else \
            np.zeros((0, k), dtype=np.uint32)
        prr = permanent_response_from_words(np.broadcast_to(bloom, (n, k)), u, params.prob_f)
        return AuditSample(bloom=bloom, prr=prr, irr=irr)

    return sample


def batch_sampler(params: Params) -> Sampler:
    """AuditSample the simulation's packed encoder, :func:`rappor.simulation.simulate_reports` (reports only)."""

    def sample(value: str, n: int, rng: np.random.Generator, one_client: bool) -> AuditSample:
        zeros = np.zeros(n, dtype=np.int64)
        batch = simulate_reports(params, [value], zeros, zeros, prr_units=zeros if one_client else None, rng=rng)
        return AuditSample(bloom=bloom_filter(value, 0, params), prr=None, irr=batch.bits())

    return sample


def never_clearing_sampler(params: Params) -> Sampler:
    """A deliberately broken encoder, to show that the audit catches it.

    Its permanent response is ``B | C`` with ``C`` set with probability ``f/2``: a true
    Bloom bit is never cleared, as in a widely installed Python RAPPOR package.  Its
    reports then satisfy neither ``epsilon_one`` nor ``epsilon_inf``.
    """

    def sample(value: str, n: int, rng: np.random.Generator, one_client: bool) -> AuditSample:
        k, f = params.num_bloombits, params.prob_f
        bloom = bloom_filter(value, 0, params)
        rows = 1 if one_client else n
        prr = bloom | (rng.random((rows, k)) < f / 2).astype(np.uint8)
        prr = np.broadcast_to(prr, (n, k))
        u = rng.random((n, k))
        irr = instantaneous_response(prr == 1, u < params.prob_p, u < params.prob_q).astype(np.uint8)
        return AuditSample(bloom=bloom, prr=prr, irr=irr)

    return sample


_SAMPLERS: dict[str, Callable[[Params], Sampler]] = {
    "client": client_sampler,
    "batch": batch_sampler,
    "never-clearing": never_clearing_sampler,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditRow:
    """The audit of one mechanism on one pair of neighbouring values.

    Attributes
    ----------
    mechanism : {"report", "permanent"}
    values : tuple of str
        The neighbouring values ``(a, b)``.
    differing_bits : int
        Bits where their Bloom filters differ (``2 h`` for disjoint filters).
    n_samples : int
        Encodings of each value.
    epsilon : float
        The claimed bound (``epsilon_one`` or ``epsilon_inf``).
    epsilon_estimate : float
        ``ln`` of the largest estimated likelihood ratio (``inf`` if a pattern was seen under
        one value only).
    epsilon_lower_bound : float
        ``ln`` of the largest lower confidence bound of a ratio: with confidence
        ``1 - significance_level`` (jointly), the encoder's epsilon is at least this.
    passed : bool
        ``epsilon_lower_bound <= epsilon``.
    """

    mechanism: str
    values: tuple[str, str]
    differing_bits: int
    n_samples: int
    epsilon: float
    epsilon_estimate: float
    epsilon_lower_bound: float
    passed: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class ConvergenceCheck:
    """Many reports of one client: do they reveal its PRR and never its Bloom filter?

    Attributes
    ----------
    value : str
    n_reports : int
    prr_differs_at : int
        Bits where the client's PRR differs from its Bloom filter (>= 1 by choice of client).
    consistent_with_prr : bool
        Every bit frequency is within its confidence interval around ``q`` (PRR bit 1)
        or ``p`` (PRR bit 0).
    consistent_with_bloom : bool
        The same test against the Bloom filter.
    passed : bool
        ``consistent_with_prr and not consistent_with_bloom``.
    """

    value: str
    n_reports: int
    prr_differs_at: int
    consistent_with_prr: bool
    consistent_with_bloom: bool
    passed: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditResult:
    """Result of :func:`audit_encoder`.

    Attributes
    ----------
    encoder : str
    params : Params
    significance_level : float
        Bound on the probability that a correct encoder fails (false alarm).
    rows : tuple of AuditRow
    convergence : ConvergenceCheck or None
        ``None`` when the encoder does not expose its PRR.
    """

    encoder: str
    params: Params
    significance_level: float
    rows: tuple[AuditRow, ...]
    convergence: ConvergenceCheck | None

    @property
    def passed(self) -> bool:
        """Every row passed, and the convergence check (if any) passed."""
        return all(r.passed for r in self.rows) and (self.convergence is None or self.convergence.passed)

    def table(self) -> np.ndarray:
        """The rows as a numpy structured array (``values`` joined by ``/``), one row per :class:`AuditRow`."""
        columns = (("mechanism", "U"), ("values", "U"), ("differing_bits", "i8"), ("n_samples", "i8"),
                   ("epsilon", "f8"), ("epsilon_estimate", "f8"), ("epsilon_lower_bound", "f8"), ("passed", "?"))
        return record_table(columns, [(r.mechanism, "/".join(r.values), r.differing_bits, r.n_samples, r.epsilon,
                                       r.epsilon_estimate, r.epsilon_lower_bound, r.passed) for r in self.rows])

    def to_text(self) -> str:
        """The audit as a plain-text table, ending with ``PASSED`` or ``FAILED``."""
        lines = [f"privacy audit of the {self.encoder!r} encoder, {self.params!r}",
                 f"false-alarm probability <= {self.significance_level:g} (Clopper-Pearson, union bound)",
                 f"{'mechanism':<10} {'values':<14} {'bits':>4} {'samples':>8} {'claimed':>8} "
                 f"{'estimate':>9} {'lower bd':>9}  result"]
        for r in self.rows:
            lines.append(f"{r.mechanism:<10} {'/'.join(r.values):<14} {r.differing_bits:>4} {r.n_samples:>8} "
                         f"{r.epsilon:>8.4f} {r.epsilon_estimate:>9.4f} {r.epsilon_lower_bound:>9.4f}  "
                         f"{'ok' if r.passed else 'VIOLATED'}")
        c = self.convergence
        if c is not None:
            lines.append(f"one client, {c.n_reports} reports of {c.value!r} (PRR != Bloom at {c.prr_differs_at} "
                         f"bits): consistent with PRR {c.consistent_with_prr}, with Bloom filter "
                         f"{c.consistent_with_bloom}  {'ok' if c.passed else 'FAILED'}")
        lines.append("PASSED" if self.passed else "FAILED")
        return "\n".join(lines)


def _cp_lower(x: Array, n: int, a: float) -> Array:
    """One-sided Clopper-Pearson lower bounds at level ``a`` (Clopper and Pearson 1934)."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        low = stats.beta.ppf(a, x, n - x + 1)
    return np.where(x > 0, low, 0.0)


def _cp_upper(x: Array, n: int, a: float) -> Array:
    """One-sided Clopper-Pearson upper bounds at level ``a``."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        high = stats.beta.ppf(1 - a, x + 1, n - x)
    return np.where(x < n, high, 1.0)


def _disjoint_pairs(params: Params, n_pairs: int) -> list[tuple[str, str]]:
    """Pairs of values ``v0, v1, ...`` whose cohort-0 Bloom filters have ``h`` bits each, disjoint."""
    h = params.num_hashes
    if 4 * h > 2 * params.num_bloombits + 2 * h:  # pragma: no cover - checked by the caller
        raise InvalidParameterError("No disjoint pairs exist for these parameters.")
    pairs: list[tuple[str, str]] = []
    pool: list[tuple[str, set[int]]] = []
    i = 0
    while len(pairs) < n_pairs and i < 100_000:
        name = f"v{i}"
        i += 1
        bits = set(bloom_bits(name, 0, params).tolist())
        if len(bits) != h:
            continue
        partner = next((p for p in pool if not p[1] & bits), None)
        if partner is None:
            pool.append((name, bits))
        else:
            pool.remove(partner)
            pairs.append((partner[0], name))
    return pairs


def _patterns(bits: Array, positions: Array) -> Array:
    """Pattern index of each row on ``positions``: ``sum_i bits[:, positions[i]] << i``."""
    weights = np.left_shift(1, np.arange(positions.size, dtype=np.int64))
    return bits[:, positions].astype(np.int64) @ weights


def _ratio_row(mechanism: str, values: tuple[str, str], positions: Array, a: Array, b: Array, epsilon: float,
               level: float) -> AuditRow:
    """Test every pattern's likelihood ratio, both directions, against ``e**epsilon``."""
    n_a, n_b = a.shape[0], b.shape[0]
    size = 1 << positions.size
    ca = np.bincount(_patterns(a, positions), minlength=size)
    cb = np.bincount(_patterns(b, positions), minlength=size)
    lower = 0.0
    estimate = 0.0
    for (cx, nx), (cy, ny) in (((ca, n_a), (cb, n_b)), ((cb, n_b), (ca, n_a))):
        low = _cp_lower(cx, nx, level)
        high = _cp_upper(cy, ny, level)
        lower = max(lower, float(np.max(low / high)))
        seen = cx > 0
        if seen.any():  # a pattern seen under one value only has an infinite estimated ratio
            with np.errstate(divide="ignore"):
                estimate = max(estimate, float(np.max((cx[seen] / nx) / (cy[seen] / ny))))
    eps_low = math.log(lower) if lower > 0 else -math.inf
    eps_est = math.log(estimate) if estimate > 0 else -math.inf
    passed = eps_low <= epsilon * (1 + 1e-12) + 1e-12
    return AuditRow(mechanism=mechanism, values=values, differing_bits=int(positions.size), n_samples=int(n_a),
                    epsilon=epsilon, epsilon_estimate=eps_est, epsilon_lower_bound=eps_low, passed=passed)


def _consistent(counts: Array, n: int, rates: Array, level: float) -> bool:
    """Every ``counts[j] ~ Bin(n, rates[j])`` lies within its two-sided CP interval at ``level``."""
    return bool(np.all((_cp_lower(counts, n, level) <= rates) & (rates <= _cp_upper(counts, n, level))))


def _convergence(params: Params, sampler: Sampler, value: str, n_reports: int, rng: np.random.Generator,
                 level: float) -> ConvergenceCheck | None:
    for _ in range(50):  # a client whose PRR differs from its Bloom filter (P >= 1 - (1 - f/2)**k each try)
        s = sampler(value, n_reports, rng, True)
        if s.prr is None:
            return None
        if (s.prr[0] != s.bloom).any():
            break
    else:  # pragma: no cover - probability (1 - f/2)**(50 k)
        return None
    p, q = params.prob_p, params.prob_q
    counts = s.irr.sum(axis=0)
    per_bit = level / (2 * params.num_bloombits)
    with_prr = _consistent(counts, n_reports, np.where(s.prr[0] == 1, q, p), per_bit)
    with_bloom = _consistent(counts, n_reports, np.where(s.bloom == 1, q, p), per_bit)
    return ConvergenceCheck(value=value, n_reports=n_reports, prr_differs_at=int((s.prr[0] != s.bloom).sum()),
                            consistent_with_prr=with_prr, consistent_with_bloom=with_bloom,
                            passed=with_prr and not with_bloom)


def audit_encoder(params: Params, *, encoder: Literal["client", "batch", "never-clearing"] | Sampler = "client",
                  n_pairs: int = 2, n_samples: int = 20_000, n_reports: int = 20_000,
                  significance_level: float = 1e-6, rng: RngLike = None) -> AuditResult:
    """Audit an encoder's likelihood ratios against ``epsilon_one`` and ``epsilon_inf``.

    Parameters
    ----------
    params : Params
        The parameters; only cohort 0 is used (epsilon does not depend on the cohort).
    encoder : {"client", "batch", "never-clearing"} or callable, default="client"
        ``"client"`` is :class:`rappor.Encoder`, ``"batch"`` the simulation's packed
        encoder (reports only: its PRR is internal), ``"never-clearing"`` the broken
        encoder of :func:`never_clearing_sampler`; or a sampler
        ``sampler(value, n, rng, one_client) -> AuditSample``.
    n_pairs : int, default=2
        Pairs of neighbouring values (with disjoint Bloom bits).
    n_samples : int, default=20000
        Encodings of each value, each by a new client.
    n_reports : int, default=20000
        Reports of the single client in the convergence check.
    significance_level : float, default=1e-6
        Bound on the probability that a correct encoder fails the audit.
    rng : numpy.random.Generator, int or None, default=None
        Randomness of the samples (pass a seed for a reproducible audit).

    Returns
    -------
    AuditResult

    Notes
    -----
    For a pattern ``x`` on the differing bits, the test is
    ``CP_low(x | a) / CP_up(x | b) > exp(epsilon)``, with one-sided Clopper-Pearson
    bounds (Clopper and Pearson 1934, Biometrika 26(4)) at level ``alpha / (2 T)``,
    ``T`` = pairs x 2 mechanisms x 2 directions x ``2**d`` patterns, using half of
    ``alpha``; the convergence check's ``k`` two-sided per-bit intervals around the PRR
    rates use the other half.  By the union bound a correct encoder fails with
    probability at most ``alpha`` (plus the chance that the Bloom filter is *not*
    rejected, about ``exp(-n (q - p)**2 / 2)``, negligible for the defaults).  The claimed
    bounds are ``Params.epsilon_one`` and ``Params.epsilon_inf`` (Erlingsson, Pihur
    and Korolova 2014, arXiv:1407.6981, Theorems 1-2).

    Examples
    --------
    >>> from rappor import Params
    >>> params = Params(num_bloombits=8, num_hashes=1, num_cohorts=1,
    ...                 prob_p=0.5, prob_q=0.75, prob_f=0.5)
    >>> audit_encoder(params, encoder="batch", n_pairs=1, n_samples=2000, rng=0).passed
    True
    """
    n_pairs = check_int(n_pairs, "n_pairs", "audit_encoder", low=1)
    n_samples = check_int(n_samples, "n_samples", "audit_encoder", low=1)
    n_reports = check_int(n_reports, "n_reports", "audit_encoder", low=1)
    alpha = check_real(significance_level, "significance_level", "audit_encoder", low=0.0, high=1.0)
    if 2 * params.num_hashes > params.num_bloombits:
        msg = (f"The 'params' parameter of audit_encoder must allow two disjoint Bloom filters (2 h <= k). "
               f"Got h = {params.num_hashes}, k = {params.num_bloombits} instead.")
        raise InvalidParameterError(msg)
    gen = check_rng(rng)
    name: str
    if isinstance(encoder, str):
        if encoder not in _SAMPLERS:
            msg = f"The 'encoder' parameter of audit_encoder must be one of {sorted(_SAMPLERS)} or a callable. Got {encoder!r} instead."
            raise InvalidParameterError(msg)
        name, sampler = encoder, _SAMPLERS[encoder](params)
    else:
        name, sampler = str(getattr(encoder, "__name__", "custom")), encoder
    pairs = _disjoint_pairs(params, n_pairs)
    d = 2 * params.num_hashes
    n_tests = len(pairs) * 2 * 2 * (1 << d)
    level = alpha / 2 / (2 * n_tests)  # half of alpha for the ratios, two bounds per ratio
    rows: list[AuditRow] = []
    for a, b in pairs:
        sa, sb = sampler(a, n_samples, gen, False), sampler(b, n_samples, gen, False)
        positions = np.flatnonzero(sa.bloom != sb.bloom)
        rows.append(_ratio_row("report", (a, b), positions, sa.irr, sb.irr, params.epsilon_one, level))
        if sa.prr is not None and sb.prr is not None:
            rows.append(_ratio_row("permanent", (a, b), positions, np.asarray(sa.prr), np.asarray(sb.prr),
                                   params.epsilon_inf, level))
    convergence = _convergence(params, sampler, pairs[0][0], n_reports, gen, alpha / 2)
    return AuditResult(encoder=name, params=params, significance_level=alpha, rows=tuple(rows),
                       convergence=convergence)
