"""Simulated collections: populations, simulated reports and counts, and the truth.

A simulation draws a population of clients, each with a cohort and one or several
values, encodes their reports, and aggregates them, keeping the truth so that a
decoder's output can be scored (:mod:`rappor.analysis`).  It follows google/rappor's
regression suite (``tests/gen_sim_input.py``, ``tests/rappor_sim.py``):

* :class:`Population`: a distribution over ``U`` strings ``"v1" .. "vU"`` (Zipf,
  exponential, Gaussian, uniform) or read from a ``string,count`` file;
* :func:`candidate_strings`: the analyst's candidate list, with decoys added and
  every R-th true string removed (to exercise unexplained mass);
* :func:`simulate`: clients, reports and the aggregate, as a :class:`Simulation`;
* :func:`simulate_reports`: vectorized encoding with a :class:`numpy.random.Generator`;
* :func:`simulate_counts`, :func:`zipf_scenario`: the aggregated counts drawn exactly
  from their binomial law, without encoding any report (:class:`Scenario`).

Simulated reports and the real client
-------------------------------------
:func:`simulate_reports` draws exactly the distribution of :class:`rappor.Encoder`:
both apply the rules of :mod:`rappor.client`, with its 32-bit integer
thresholds: the permanent response replaces each Bloom bit with probability
``2t / 2**32`` (``t`` of :func:`~rappor.client.prr_threshold`) by a fair coin;
the instantaneous response is 1 with probability ``round(q 2**32) / 2**32`` where
the PRR bit is 1 and ``round(p 2**32) / 2**32`` where it is 0 (``docs/client.md``).
What differs is only
where the PRR's randomness comes from: the real client derives it from
a SHAKE-256 stream keyed by the client secret so that it is memoized without storage;
the simulation draws it from the generator once per (client, value) and reuses it for
every report of that value.  Use ``method="client"`` in :func:`simulate` to run the
real client (keyed PRR, one secret per client) instead; it is about 100 times slower
(measured at k = 32: 84,000 against 9 million reports per second).

Bits are generated packed, 64 at a time: a Bernoulli(``T / 2**b``) word is the
bit-sliced comparison ``U < T`` of uniform random words, one word per binary digit of
``T`` (so ``p = 0.5`` costs one random word per 64 bits); for thresholds with many
digits the comparison stops after 8 digits and resolves the rare ties (probability
``2**-8`` per bit) recursively on the remaining digits, exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from .._util.io import csv_field
from .._util.lazy import lazy_module
from .._util.memory import check_memory
from .._util.validation import RngLike, check_cohorts, check_int, check_options, check_real, check_rng
from ..collect._aggregate import Aggregate
from ..collect._design import CandidateMap, hash_candidates
from ..client._encoder import client_secret, derive_cohort, encode_clients
from ..exceptions import InvalidParameterError
from ..client._hashing import bloom_bit_indices, bloom_bits_table
from ..params import Params
from ..client._randomizer import (
    instantaneous_response,
    irr_thresholds,
    permanent_response,
    prr_threshold,
)
from ..client._reports import ReportBatch

if TYPE_CHECKING:
    from scipy import special
else:  # imported on first use: keeps `import rappor` light
    special = lazy_module("scipy.special")

__all__ = [
    "DISTRIBUTIONS",
    "Population",
    "Scenario",
    "Simulation",
    "candidate_strings",
    "simulate",
    "simulate_counts",
    "simulate_reports",
    "true_ones",
    "zipf_scenario",
]

#: Names accepted by :meth:`Population.make` (and ``rappor simulate --dist``).
DISTRIBUTIONS = ("zipf", "exponential", "gaussian", "uniform")

Distribution = Literal["zipf", "exponential", "gaussian", "uniform"]

_TIE_DIGITS = 8  # digits compared before ties are resolved recursively
_ALL_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)


# --------------------------------------------------------------------------- populations


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Population:
    """A distribution of client values over a finite set of strings.

    Parameters
    ----------
    strings : sequence of str
        The distinct values, most frequent first for the built-in distributions.
    probabilities : array-like of float, shape (len(strings),)
        Non-negative weights; normalized to sum to 1 and stored read-only.
    name : str, default="custom"
        A short description, e.g. ``"zipf(s=1)"``, shown in reports.

    Examples
    --------
    >>> pop = Population.zipf(4, exponent=1.0)
    >>> pop.strings
    ('v1', 'v2', 'v3', 'v4')
    >>> [round(float(p), 3) for p in pop.probabilities]
    [0.48, 0.24, 0.16, 0.12]
    """

    strings: tuple[str, ...]
    probabilities: npt.NDArray[np.float64]
    name: str = "custom"

    def __post_init__(self) -> None:
        strings = tuple(self.strings)
        if not strings:
            raise InvalidParameterError("The 'strings' parameter of Population must not be empty.")
        if not all(isinstance(s, str) for s in strings):
            raise InvalidParameterError("The 'strings' parameter of Population must hold str values.")
        if len(set(strings)) != len(strings):
            raise InvalidParameterError("The 'strings' parameter of Population must hold distinct values.")
        probs = np.asarray(self.probabilities, dtype=np.float64)
        if probs.shape != (len(strings),):
            msg = (f"The 'probabilities' parameter of Population must have shape ({len(strings)},). "
                   f"Got {probs.shape} instead.")
            raise InvalidParameterError(msg)
        if not np.all(np.isfinite(probs)) or (probs < 0).any() or probs.sum() <= 0:
            raise InvalidParameterError("The 'probabilities' parameter of Population must be finite, "
                                        "non-negative and not all zero.")
        probs = probs / probs.sum()
        probs.flags.writeable = False
        object.__setattr__(self, "strings", strings)
        object.__setattr__(self, "probabilities", probs)

    def __len__(self) -> int:
        return len(self.strings)

    def __repr__(self) -> str:
        return f"Population(name={self.name!r}, num_unique={len(self)})"

    # -- the reference's regression distributions (google/rappor tests/gen_sim_input.py)

    @staticmethod
    def _names(num_unique: int) -> tuple[str, ...]:
        return tuple(f"v{i}" for i in range(1, num_unique + 1))

    @classmethod
    def zipf(cls, num_unique: int, *, exponent: float = 1.0) -> Population:
        """Zipf's law: P(``v_i``) proportional to ``i ** -exponent``, ``i = 1 .. num_unique``."""
        u = check_int(num_unique, "num_unique", "Population.zipf", low=1)
        _check_population_size(u)
        s = check_real(exponent, "exponent", "Population.zipf", low=0.0)
        ranks = np.arange(1, u + 1, dtype=np.float64)
        return cls(strings=cls._names(u), probabilities=ranks**-s, name=f"zipf(s={s:g})")

    @classmethod
    def exponential(cls, num_unique: int, *, rate: float | None = None) -> Population:
        """An exponential on ``[0, 1]`` with rate ``rate``, cut into ``num_unique`` equal bins.

        Notes
        -----
        google/rappor ``gen_sim_input.py`` draws ``x`` from the exponential with rate
        ``lambda`` truncated to ``[0, 1]`` and reports ``v{floor(x U) + 1}``; its default
        is ``lambda = U / 5``.  Here the bin probabilities are computed exactly:
        ``P(v_i) = (exp(-lambda (i-1)/U) - exp(-lambda i/U)) / (1 - exp(-lambda))``, a
        geometric law with ratio ``exp(-lambda / U)``.
        """
        u = check_int(num_unique, "num_unique", "Population.exponential", low=1)
        _check_population_size(u)
        lam = u / 5.0 if rate is None else check_real(rate, "rate", "Population.exponential", low=0.0, low_open=True)
        edges = -np.expm1(-lam * np.arange(u + 1, dtype=np.float64) / u)  # 1 - exp(-lam x), increasing
        return cls(strings=cls._names(u), probabilities=np.diff(edges), name=f"exponential(rate={lam:g})")

    @classmethod
    def gaussian(cls, num_unique: int, *, std: float | None = None) -> Population:
        """A normal with mean ``(U + 1) / 2`` rounded to ``1 .. U`` (values outside are redrawn).

        Notes
        -----
        As google/rappor ``gen_sim_input.py`` (default ``std = U / 6``):
        ``P(v_i)`` is proportional to ``Phi((i + 1/2 - mu) / std) - Phi((i - 1/2 - mu) / std)``.
        """
        u = check_int(num_unique, "num_unique", "Population.gaussian", low=1)
        _check_population_size(u)
        sd = u / 6.0 if std is None else check_real(std, "std", "Population.gaussian", low=0.0, low_open=True)
        mu = (u + 1) / 2.0
        edges = special.ndtr((np.arange(u + 1, dtype=np.float64) + 0.5 - mu) / sd)
        probs = np.diff(edges)
        if probs.sum() <= 0:
            probs = np.ones(u)
        return cls(strings=cls._names(u), probabilities=probs, name=f"gaussian(std={sd:g})")

    @classmethod
    def uniform(cls, num_unique: int) -> Population:
        """Every one of ``v1 .. vU`` equally likely."""
        u = check_int(num_unique, "num_unique", "Population.uniform", low=1)
        _check_population_size(u)
        return cls(strings=cls._names(u), probabilities=np.ones(u), name="uniform")

    @classmethod
    def make(cls, distribution: str, num_unique: int, parameter: float | None = None) -> Population:
        """Build one of :data:`DISTRIBUTIONS` by name.

        ``parameter`` is the Zipf exponent (default 1), the exponential rate (default
        ``U / 5``) or the Gaussian standard deviation (default ``U / 6``); the uniform
        distribution takes none.
        """
        dist = check_options(distribution, "distribution", "Population.make", DISTRIBUTIONS)
        if dist == "zipf":
            return cls.zipf(num_unique, exponent=1.0 if parameter is None else parameter)
        if dist == "exponential":
            return cls.exponential(num_unique, rate=parameter)
        if dist == "gaussian":
            return cls.gaussian(num_unique, std=parameter)
        return cls.uniform(num_unique)

    @classmethod
    def from_counts(cls, counts: Mapping[str, float], *, name: str = "counts") -> Population:
        """A population proportional to ``counts`` (e.g. observed frequencies)."""
        strings = tuple(counts)
        return cls(strings=strings, probabilities=np.array([counts[s] for s in strings], dtype=np.float64),
                   name=name)

    def sample(self, size: int, *, rng: RngLike = None) -> npt.NDArray[np.int64]:
        """Draw ``size`` values independently; returns indices into :attr:`strings`."""
        n = check_int(size, "size", "Population.sample", low=0)
        gen = check_rng(rng)
        cdf = np.cumsum(self.probabilities)
        cdf[-1] = 1.0
        codes = np.searchsorted(cdf, gen.random(n), side="right")
        return np.minimum(codes, len(self.strings) - 1).astype(np.int64)


def candidate_strings(population: Population | Sequence[str], *, decoys: int = 0, remove_every: int = 0,
                      ) -> list[str]:
    """The analyst's candidate list: the true strings, minus some, plus decoys.

    Parameters
    ----------
    population : Population or sequence of str
        The true strings, in order.
    decoys : int, default=0
        Number of strings that no client holds, added at the end (``"decoy1"``,
        ``"decoy2"``, ...; names already in the population are skipped).
    remove_every : int, default=0
        Drop strings ``R, 2R, 3R, ...`` (1-based, so ``R = 1`` drops them all) to leave
        part of the mass unexplained; 0 keeps every string.

    Returns
    -------
    list of str
    """
    strings = list(population.strings if isinstance(population, Population) else population)
    d = check_int(decoys, "decoys", "candidate_strings", low=0)
    r = check_int(remove_every, "remove_every", "candidate_strings", low=0)
    check_memory(_BYTES_PER_VALUE * (len(strings) + d), f"a candidate list of {len(strings) + d:,} strings",
                 remedy="use fewer decoys")
    kept = [s for i, s in enumerate(strings, start=1) if not (r and i % r == 0)]
    taken = set(strings)
    extra: list[str] = []
    i = 0
    while len(extra) < d:
        i += 1
        name = f"decoy{i}"
        if name not in taken:
            extra.append(name)
    return kept + extra


# --------------------------------------------------------------------------- packed randomness


def _random_words(rng: np.random.Generator, n: int) -> npt.NDArray[np.uint64]:
    return rng.integers(0, _ALL_ONES, size=n, dtype=np.uint64, endpoint=True)


def _bernoulli_words(rng: np.random.Generator, threshold: int, digits: int, n: int) -> npt.NDArray[np.uint64]:
    """``n`` words of independent bits, each 1 with probability ``threshold / 2**digits`` exactly.

    Bit-sliced comparison ``U < T`` of a uniform ``digits``-bit ``U`` with ``T``, from the
    least significant digit up: where ``T``'s digit is 1, ``less = R | less``, where it is
    0, ``less = R & less``, with ``R`` (playing ``~U``'s digit) a fresh random word.  Long
    thresholds compare their top :data:`_TIE_DIGITS` digits and resolve ties recursively.
    """
    if threshold <= 0 or n == 0:
        return np.zeros(n, dtype=np.uint64)
    if threshold >= 1 << digits:
        return np.full(n, _ALL_ONES, dtype=np.uint64)
    while not threshold & 1:  # strip trailing zero digits: same probability
        threshold >>= 1
        digits -= 1
    if digits <= _TIE_DIGITS:
        less = np.zeros(n, dtype=np.uint64)
        for i in range(digits):  # least significant digit first
            r = _random_words(rng, n)
            if (threshold >> i) & 1:
                less |= r
            else:
                less &= r
        return less
    low_digits = digits - _TIE_DIGITS
    high, low = threshold >> low_digits, threshold & ((1 << low_digits) - 1)
    less = np.zeros(n, dtype=np.uint64)
    tie = np.full(n, _ALL_ONES, dtype=np.uint64)
    for i in range(_TIE_DIGITS):
        r = _random_words(rng, n)
        if (high >> i) & 1:
            less |= r
            tie &= ~r  # U's digit (= ~r) equals T's digit 1
        else:
            less &= r
            tie &= r
    where = np.flatnonzero(tie)
    if where.size:
        less[where] |= tie[where] & _bernoulli_words(rng, low, low_digits, where.size)
    return less


def _bytes_to_words(data: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint64]:
    """A flat uint8 array (length a multiple of 8) seen as little-endian uint64 words."""
    return data.view("<u8").view(np.uint64)


def _padded(num_bytes: int) -> int:
    return -(-num_bytes // 8) * 8


def _permanent_bytes(params: Params, bloom: npt.NDArray[np.uint8], rng: np.random.Generator) -> npt.NDArray[np.uint8]:
    """PRR of ``(n, B)`` packed Bloom bytes: ``(B & ~F) | (C & F)`` (google/rappor ``get_prr_masks``)."""
    n, nb = bloom.shape
    flat = np.zeros(_padded(n * nb), dtype=np.uint8)
    flat[: n * nb] = bloom.reshape(-1)
    words = _bytes_to_words(flat)
    # A word u < 2t replaces the Bloom bit (t of prr_threshold), u < t with a 1: a replacement
    # mask of probability 2t / 2**32 and a fair coin, as the client's single-word rule.
    replace = _bernoulli_words(rng, 2 * prr_threshold(params.prob_f), 32, words.size)
    coin = _random_words(rng, words.size)
    prr = permanent_response(words, replace, coin)
    return prr.view(np.uint8)[: n * nb].reshape(n, nb)


def _instantaneous_words(params: Params, prr: npt.NDArray[np.uint8], rng: np.random.Generator,
                         ) -> npt.NDArray[np.uint64]:
    """IRR of ``(n, B)`` packed PRR bytes -> ``(n, W)`` report words (bits >= k cleared)."""
    n, nb = prr.shape
    k = params.num_bloombits
    flat = np.zeros(_padded(n * nb), dtype=np.uint8)
    flat[: n * nb] = prr.reshape(-1)
    words = _bytes_to_words(flat)
    tp, tq = irr_thresholds(params.prob_p, params.prob_q)
    p_bits = _bernoulli_words(rng, tp, 32, words.size)
    q_bits = _bernoulli_words(rng, tq, 32, words.size)
    irr = instantaneous_response(words, p_bits, q_bits).view(np.uint8)[: n * nb].reshape(n, nb)
    w = params.num_words
    if nb == 8 * w and k % 8 == 0:
        return np.ascontiguousarray(irr).view("<u8").view(np.uint64).reshape(n, w)
    out = np.zeros((n, 8 * w), dtype=np.uint8)
    out[:, :nb] = irr
    if k % 8:
        out[:, nb - 1] &= np.uint8((1 << (k % 8)) - 1)
    return out.view("<u8").view(np.uint64).reshape(n, w)


def _bloom_bytes(indices: npt.NDArray[np.integer[Any]], num_bloombits: int) -> npt.NDArray[np.uint8]:
    """``(R, h)`` Bloom bit indices -> ``(R, ceil(k/8))`` packed bytes (bit ``j`` in byte ``j // 8``)."""
    r = indices.shape[0]
    bits = np.zeros((r, num_bloombits), dtype=np.uint8)
    bits[np.arange(r)[:, None], indices] = 1
    return np.packbits(bits, axis=1, bitorder="little")


def _bloom_table(params: Params, strings: Sequence[str], values: npt.NDArray[np.int64],
                 cohorts: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    """Packed Bloom bytes for each (value, cohort) pair used, and each pair's row."""
    m = params.num_cohorts
    pair = values * m + cohorts
    if len(strings) * m <= max(4 * pair.size, 1 << 16):
        table = bloom_bits_table(list(strings), params).reshape(len(strings) * m, params.num_hashes)
        return _bloom_bytes(table, params.num_bloombits), pair
    used, rows = np.unique(pair, return_inverse=True)
    k, h = params.num_bloombits, params.num_hashes
    idx = np.array([bloom_bit_indices(strings[int(p // m)], int(p % m), num_bloombits=k, num_hashes=h)
                    for p in used], dtype=np.int64).reshape(used.size, h)
    return _bloom_bytes(idx, k), rows.reshape(-1).astype(np.int64)


def simulate_reports(params: Params, strings: Sequence[str], values: npt.ArrayLike, cohorts: npt.ArrayLike, *,
                     prr_units: npt.ArrayLike | None = None, rng: RngLike = None) -> ReportBatch:
    """Encode many reports at once with numpy's generator (simulation only).

    Parameters
    ----------
    params : Params
    strings : sequence of str
        The distinct values; ``values`` indexes into it.
    values : array-like of int, shape (n,)
        The value of each report, as an index into ``strings``.
    cohorts : array-like of int, shape (n,)
        The cohort of each report's client, in ``[0, num_cohorts)``.
    prr_units : array-like of int, shape (n,), optional
        Reports with the same unit share one permanent response (one unit per
        (client, value)); they must have the same value and cohort.  By default every
        report has its own.
    rng : numpy.random.Generator, int or None, default=None

    Returns
    -------
    ReportBatch
        The instantaneous responses, in input order.

    Notes
    -----
    Same distribution as :class:`rappor.Encoder` (RAPPOR Sec. 3; 32-bit thresholds of
    ``docs/client.md``): P(bit 1 | Bloom bit 1) = ``p11`` and P(bit 1 | Bloom bit 0) =
    ``p01`` up to 2**-32, with the PRR drawn once per unit.  numpy's generator is not a
    CSPRNG: never use this to protect real users.

    Examples
    --------
    >>> from rappor import Params
    >>> params = Params(num_bloombits=16, num_hashes=2, num_cohorts=4,
    ...                 prob_p=0.5, prob_q=0.75, prob_f=0.5)
    >>> batch = simulate_reports(params, ["a", "b"], [0, 1, 1], [0, 3, 3], rng=0)
    >>> len(batch), batch.cohorts.tolist()
    (3, [0, 3, 3])
    """
    gen = check_rng(rng)
    codes = np.asarray(values, dtype=np.int64).reshape(-1)
    coh = np.asarray(cohorts, dtype=np.int64).reshape(-1)
    if codes.shape != coh.shape:
        msg = f"The 'values' and 'cohorts' parameters of simulate_reports must have the same length. Got {codes.size} and {coh.size}."
        raise InvalidParameterError(msg)
    if codes.size and (codes.min() < 0 or codes.max() >= len(strings)):
        msg = f"The 'values' parameter of simulate_reports must hold indices in [0, {len(strings) - 1}]."
        raise InvalidParameterError(msg)
    check_cohorts(coh, params.num_cohorts, "simulate_reports")
    if prr_units is None:
        first, inverse = None, None
    else:
        units = np.asarray(prr_units).reshape(-1)
        if units.shape != codes.shape:
            raise InvalidParameterError("The 'prr_units' parameter of simulate_reports must have one entry per report.")
        _, first, inverse = np.unique(units, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        if not (np.array_equal(codes[first][inverse], codes) and np.array_equal(coh[first][inverse], coh)):
            raise InvalidParameterError("Reports sharing a PRR unit must have the same value and cohort.")
    unit_codes = codes if first is None else codes[first]
    unit_cohorts = coh if first is None else coh[first]
    table, rows = _bloom_table(params, strings, unit_codes, unit_cohorts)
    words = _encode_rows(params, table, rows, inverse, gen)
    return ReportBatch(params=params, cohorts=coh, words=words)


def _encode_rows(params: Params, table: npt.NDArray[np.uint8], rows: npt.NDArray[np.int64],
                 report_unit: npt.NDArray[np.int64] | None, rng: np.random.Generator) -> npt.NDArray[np.uint64]:
    """The fast core: Bloom bytes of each unit (``table[rows]``) -> PRR per unit -> IRR per report."""
    prr = _permanent_bytes(params, table[rows], rng)
    if report_unit is not None:
        prr = prr[report_unit]
    return _instantaneous_words(params, prr, rng)


# --------------------------------------------------------------------------- simulation


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Simulation:
    """A simulated collection and its truth (the result of :func:`simulate`).

    Attributes
    ----------
    params : Params
    population : Population
    client_cohorts : ndarray of shape (n_clients,), dtype int64
        Each client's cohort.
    report_clients : ndarray of shape (n_reports,), dtype int64
        The client of each report.
    report_values : ndarray of shape (n_reports,), dtype int64
        The true value of each report, as an index into ``population.strings``.
    reports : ReportBatch
        What the server receives.
    aggregate : Aggregate
        Per-cohort bit counts of ``reports`` (``counts.csv``).
    method : str
        ``"batch"`` or ``"client"`` (see :func:`simulate`).
    """

    params: Params
    population: Population
    client_cohorts: npt.NDArray[np.int64]
    report_clients: npt.NDArray[np.int64]
    report_values: npt.NDArray[np.int64]
    reports: ReportBatch
    aggregate: Aggregate
    method: str = "batch"
    _truth: npt.NDArray[np.int64] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("client_cohorts", "report_clients", "report_values"):
            arr = np.asarray(getattr(self, name), dtype=np.int64).copy()
            arr.flags.writeable = False
            object.__setattr__(self, name, arr)
        counts = np.bincount(self.report_values, minlength=len(self.population)).astype(np.int64)
        counts.flags.writeable = False
        object.__setattr__(self, "_truth", counts)

    @property
    def n_clients(self) -> int:
        """Number of clients."""
        return int(self.client_cohorts.shape[0])

    @property
    def n_reports(self) -> int:
        """Number of reports."""
        return int(self.report_values.shape[0])

    @property
    def truth_counts(self) -> npt.NDArray[np.int64]:
        """Reports of each population string, shape ``(len(population),)``."""
        return self._truth

    @property
    def truth(self) -> dict[str, int]:
        """True number of reports of each string that was reported at least once."""
        return {s: int(c) for s, c in zip(self.population.strings, self._truth) if c > 0}

    def truth_csv(self) -> str:
        """``string,count,proportion`` text, most frequent first (``truth.csv``)."""
        order = np.argsort(-self._truth, kind="stable")
        total = max(self.n_reports, 1)
        lines = ["string,count,proportion"]
        for i in order:
            c = int(self._truth[i])
            if c:
                lines.append(f"{csv_field(self.population.strings[i])},{c},{c / total!r}")
        return "\n".join(lines) + "\n"

    def candidate_map(self, candidates: Sequence[str] | None = None) -> CandidateMap:
        """Hash ``candidates`` (default: every population string) with :func:`rappor.hash_candidates`."""
        return hash_candidates(list(self.population.strings if candidates is None else candidates), self.params)

    def decode(self, candidates: Sequence[str] | CandidateMap | None = None, *, decoder: Any) -> Any:
        """Decode :attr:`aggregate` against ``candidates`` with ``decoder``.

        Parameters
        ----------
        candidates : sequence of str or CandidateMap, optional
            Default: every population string (see :func:`candidate_strings`).
        decoder : rappor.Decoder
            The decoder (configured); this stage does not choose one.

        Returns
        -------
        rappor.analysis.decoder.DecodeResult
        """
        cmap = candidates if isinstance(candidates, CandidateMap) else self.candidate_map(candidates)
        return decoder.decode(self.aggregate, cmap)

    def __repr__(self) -> str:
        return (f"Simulation(n_clients={self.n_clients}, n_reports={self.n_reports}, "
                f"population={self.population!r}, method={self.method!r})")


def simulate(params: Params, population: Population, n_clients: int, *, reports_per_client: int = 1,
             values_per_client: int = 1, method: Literal["batch", "client"] = "batch", rng: RngLike = None,
             ) -> Simulation:
    """Simulate a collection: clients, their values, their reports and the aggregate.

    Parameters
    ----------
    params : Params
    population : Population
        The distribution of client values.
    n_clients : int
        Number of clients, ``>= 1``.
    reports_per_client : int, default=1
        Reports each client sends.
    values_per_client : int, default=1
        Values each client holds, drawn independently from ``population`` (google/rappor
        ``gen_sim_input.py -c``); each report is of one of them, chosen uniformly.
        Reports of the same (client, value) share one permanent response.
    method : {"batch", "client"}, default="batch"
        ``"batch"``: cohorts uniform, PRRs drawn from ``rng`` (:func:`simulate_reports`).
        ``"client"``: the real client, :func:`rappor.client.encode_clients`, with
        a key drawn from ``rng``, secrets ``client_secret(key, "client<i>")`` and
        cohorts derived from them (much slower; for cross-checks).
    rng : numpy.random.Generator, int or None, default=None

    Returns
    -------
    Simulation

    Examples
    --------
    >>> from rappor import Params
    >>> params = Params(num_bloombits=16, num_hashes=2, num_cohorts=8,
    ...                 prob_p=0.5, prob_q=0.75, prob_f=0.5)
    >>> sim = simulate(params, Population.zipf(10), 1000, rng=0)
    >>> sim.n_reports, sim.aggregate.total_reports
    (1000, 1000)
    """
    if not isinstance(params, Params):
        raise InvalidParameterError(f"The 'params' parameter of simulate must be a Params. Got {params!r} instead.")
    if not isinstance(population, Population):
        msg = f"The 'population' parameter of simulate must be a Population. Got {type(population).__name__} instead."
        raise InvalidParameterError(msg)
    n = check_int(n_clients, "n_clients", "simulate", low=1)
    rpc = check_int(reports_per_client, "reports_per_client", "simulate", low=1)
    vpc = check_int(values_per_client, "values_per_client", "simulate", low=1)
    how = check_options(method, "method", "simulate", ("batch", "client"))
    # Checked before drawing: per report its client, value, cohort and words and the encoder's
    # temporaries (a Python id and value string per report with method="client"), per held value
    # 32 bytes.  Measured peaks (k = 16): 130 bytes a client batch, 700 client, 316 with 3 x 2.
    per_report = (96 if how == "batch" else 768) + 16 * params.num_words
    check_memory(per_report * n * rpc + 32 * n * vpc,
                 f"simulating {n:,} clients x {rpc} report(s) x {vpc} value(s) ({how} method)",
                 remedy="simulate fewer clients")
    gen = check_rng(rng)
    held = population.sample(n * vpc, rng=gen)  # unit u = client * vpc + slot
    report_clients = np.repeat(np.arange(n, dtype=np.int64), rpc)
    slots = gen.integers(0, vpc, size=n * rpc) if vpc > 1 else np.zeros(n * rpc, dtype=np.int64)
    report_units = report_clients * vpc + slots
    report_values = held[report_units]
    if how == "batch":
        cohorts = gen.integers(0, params.num_cohorts, size=n, dtype=np.int64)
        unit_cohorts = np.repeat(cohorts, vpc)
        table, rows = _bloom_table(params, population.strings, held, unit_cohorts)
        words = _encode_rows(params, table, rows, None if vpc == 1 and rpc == 1 else report_units, gen)
        reports = ReportBatch(params=params, cohorts=cohorts[report_clients], words=words)
    else:
        key = gen.bytes(32)
        ids = [f"client{i}" for i in range(n)]
        cohorts = np.array([derive_cohort(client_secret(key, cid), params.num_cohorts) for cid in ids],
                           dtype=np.int64)
        reports = encode_clients(params, key, [ids[c] for c in report_clients],
                                 [population.strings[v] for v in report_values], rng=gen)
    return Simulation(params=params, population=population, client_cohorts=cohorts, report_clients=report_clients,
                      report_values=report_values, reports=reports, aggregate=Aggregate.from_reports(reports),
                      method=how)


# --------------------------------------------------------------------------- aggregates drawn from their exact law


def _set_bit_counts(bits: npt.NDArray[np.integer[Any]], clients: npt.NDArray[np.int64],
                    num_bloombits: int) -> npt.NDArray[np.int64]:
    """Clients whose Bloom filter sets each bit, per cohort: ``(M, k)`` from ``(V, M, h)`` bits and ``(V, M)`` clients.

    ``bits[v, c]`` are the Bloom bit indices of value ``v`` in cohort ``c`` and
    ``clients[v, c]`` the clients holding it there; a bit two hashes of one value share
    is counted once.
    """
    k = num_bloombits
    v, mm, h = bits.shape
    # Checked before allocating: the (m, k) tables here and in _draw_counts (float64 bincount,
    # its rounding, the int64 counts, two binomial draws and the counts table: 48 bytes a cell).
    check_memory(_SIMULATED_BYTES_PER_CELL * mm * k, f"simulated counts of m = {mm} cohorts x k = {k} bits")
    flat_bits = bits.astype(np.int64)
    keep = np.ones(flat_bits.shape, dtype=bool)
    if h > 1:
        flat_bits = np.sort(flat_bits, axis=2)
        keep[:, :, 1:] = flat_bits[:, :, 1:] != flat_bits[:, :, :-1]
    rows = np.arange(mm)[None, :, None] * k + flat_bits
    weights = np.broadcast_to(np.asarray(clients)[:, :, None], flat_bits.shape)
    out = np.bincount(rows[keep], weights=weights[keep], minlength=mm * k)
    return np.rint(out).astype(np.int64).reshape(mm, k)


#: Bytes a distinct simulated value or candidate string costs (str object, slots, sets).
_BYTES_PER_VALUE = 256


def _check_population_size(num_unique: int) -> None:
    """Refuse, before building, a population whose values would not fit in memory (``--unique 10**9``:
    its arrays and strings grew without bound)."""
    check_memory(_BYTES_PER_VALUE * num_unique, f"a population of {num_unique:,} distinct values",
                 remedy="use fewer distinct values")


#: Peak bytes per (cohort, bit) cell of :func:`_set_bit_counts` and :func:`_draw_counts` together.
_SIMULATED_BYTES_PER_CELL = 48


def _draw_counts(params: Params, clients_per_cohort: npt.NDArray[np.int64], set_bits: npt.NDArray[np.int64],
                 rng: np.random.Generator) -> npt.NDArray[np.int64]:
    """A counts table ``(m, k + 1)`` drawn from its exact law given the Bloom filters.

    With one report per client, reports of different clients are independent and,
    given a client's Bloom filter, its report bits are independent: a set Bloom bit is
    reported as 1 with probability ``p11`` and a clear one with ``p01`` (Erlingsson,
    Pihur and Korolova 2014, Sec. 3-4; google/rappor ``decode.R``).  So the ones of bit
    ``b`` in cohort ``c`` are exactly ``Binomial(B_cb, p11) + Binomial(N_c - B_cb, p01)``,
    independent over (cohort, bit), where ``B_cb`` (``set_bits``) of the ``N_c`` clients
    (``clients_per_cohort``) set the bit.
    """
    ones = rng.binomial(set_bits, params.p11) + rng.binomial(clients_per_cohort[:, None] - set_bits, params.p01)
    counts = np.empty((clients_per_cohort.size, params.num_bloombits + 1), dtype=np.int64)
    counts[:, 0] = clients_per_cohort
    counts[:, 1:] = ones
    return counts


def true_ones(params: Params, values: Sequence[str], counts_by_cohort: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """``n1[c, b]``: clients of cohort ``c`` whose Bloom filter sets bit ``b``, shape ``(m, k)``.

    Parameters
    ----------
    params : Params
    values : sequence of str
        The true values (``U`` of them).
    counts_by_cohort : array-like of int, shape (U, num_cohorts)
        Clients holding each value in each cohort.
    """
    by_cohort = np.asarray(counts_by_cohort, dtype=np.int64)
    return _set_bit_counts(bloom_bits_table(list(values), params), by_cohort, params.num_bloombits)


def simulate_counts(params: Params, values: Sequence[str], counts_by_cohort: npt.ArrayLike,
                    rng: RngLike = None) -> Aggregate:
    """The aggregated counts of one report per client, drawn exactly from their law (no report is encoded).

    Parameters
    ----------
    params, values, counts_by_cohort :
        As in :func:`true_ones`: who holds which value in which cohort.
    rng : numpy.random.Generator, int or None, default=None

    Returns
    -------
    Aggregate
        Distributed as :meth:`Aggregate.from_reports` of encoding every client
        (:func:`_draw_counts` gives the law), at a cost independent of the number of
        clients.
    """
    by_cohort = np.asarray(counts_by_cohort, dtype=np.int64)
    counts = _draw_counts(params, by_cohort.sum(axis=0), true_ones(params, values, by_cohort), check_rng(rng))
    return Aggregate(params=params, counts=counts)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Scenario:
    """A collection simulated at the level of its counts, and its truth (the result of :func:`zipf_scenario`).

    Attributes
    ----------
    params : Params
    values : tuple of str
        The true values.
    counts_by_cohort : ndarray of shape (U, num_cohorts)
        Clients holding each value in each cohort.
    aggregate : Aggregate
        The simulated bit counts (:func:`simulate_counts`).
    """

    params: Params
    values: tuple[str, ...]
    counts_by_cohort: npt.NDArray[np.int64]
    aggregate: Aggregate

    @property
    def true_counts(self) -> npt.NDArray[np.int64]:
        """Clients holding each value, shape ``(U,)``."""
        counts: npt.NDArray[np.int64] = self.counts_by_cohort.sum(axis=1)
        return counts

    @property
    def true_proportions(self) -> npt.NDArray[np.float64]:
        """True share of each value among all reports."""
        return self.true_counts / max(int(self.counts_by_cohort.sum()), 1)

    def truth(self) -> dict[str, int]:
        """``{value: reports}`` for the values present (the form :func:`rappor.analysis.evaluate` takes)."""
        return {v: int(c) for v, c in zip(self.values, self.true_counts) if c > 0}


def zipf_scenario(params: Params, *, n_reports: int, n_values: int, rng: RngLike = None, exponent: float = 1.0,
                  prefix: str = "v") -> Scenario:
    """Clients with values ``v1 .. vU`` drawn from Zipf(``exponent``), spread uniformly over cohorts.

    The value counts are multinomial with the probabilities of
    :meth:`Population.zipf`, and each value's clients are split over the cohorts by a
    uniform multinomial; the counts are then drawn by :func:`simulate_counts`.

    Examples
    --------
    >>> from rappor import Params
    >>> params = Params(num_bloombits=16, num_hashes=2, num_cohorts=8,
    ...                 prob_p=0.5, prob_q=0.75, prob_f=0.5)
    >>> sc = zipf_scenario(params, n_reports=1000, n_values=10, rng=0)
    >>> sc.aggregate.total_reports, sum(sc.truth().values())
    (1000, 1000)
    """
    gen = check_rng(rng)
    n = check_int(n_reports, "n_reports", "zipf_scenario", low=0)
    population = Population.zipf(check_int(n_values, "n_values", "zipf_scenario", low=1), exponent=exponent)
    values = tuple(f"{prefix}{i}" for i in range(1, len(population) + 1))
    counts = gen.multinomial(n, population.probabilities)
    m = params.num_cohorts
    by_cohort = np.stack([gen.multinomial(c, np.full(m, 1.0 / m)) for c in counts]).astype(np.int64)
    return Scenario(params=params, values=values, counts_by_cohort=by_cohort,
                    aggregate=simulate_counts(params, values, by_cohort, gen))
