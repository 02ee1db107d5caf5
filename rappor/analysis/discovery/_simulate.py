"""Simulate a collection with discovery: full-string reports, discovery reports, and the truth.

Two methods draw the same law:

``"aggregate"`` (default)
    Each client sends one report per collection, so every (cohort, bit) count is a
    sum of independent Bernoulli bits: with ``B`` clients of the cohort whose Bloom
    filter sets the bit, among ``n``, the count is ``Binomial(B, p11) + Binomial(n - B,
    p01)`` exactly (RAPPOR Sec. 4; bits of one report are independent given the Bloom
    filter because the PRR and IRR flip each bit on its own;
    :func:`rappor.simulation.simulate_counts`).  The clients' values,
    roles, slots and cohorts are drawn as multinomial counts, so time and memory
    depend on the number of distinct values and cells, not on the number of clients:
    10 million clients cost what 1 million do.
``"reports"``
    Every report is encoded, in chunks, with the batch encoder of
    :mod:`rappor.simulation` (same 32-bit thresholds as the real client), and counted;
    memory is that of one chunk, time linear in the number of clients.  For
    cross-checks (``tests/test_discovery_simulate.py`` compares the two).

Clients are split between the collections with ``split``:

``"clients"`` (default)
    each client sends **one** report: a discovery report with probability
    ``discovery_share`` (slot drawn with the spec's slot shares), otherwise a full-string
    report.  A client's privacy loss is that of the one report it sends.
``"budget"``
    every client sends both reports; the losses add up (basic composition).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from ..._util.memory import check_memory
from ..._util.validation import RngLike, check_int, check_options, check_probability, check_rng
from ...collect._aggregate import Aggregate
from ...exceptions import InvalidParameterError
from ...client._hashing import bloom_bits_table
from ...params import Params
from ...client._reports import ReportBatch
from ...simulation._populations import Population
from ...simulation._reports import _bloom_bytes, _draw_counts, _encode_rows, _set_bit_counts, simulate_counts
from ._spec import DiscoverySpec

__all__ = ["DiscoverySimulation", "simulate_discovery"]

Split = Literal["clients", "budget"]
Method = Literal["aggregate", "reports"]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class DiscoverySimulation:
    """A simulated collection with discovery (the result of :func:`simulate_discovery`).

    Attributes
    ----------
    params : Params
        Parameters of the full-string reports.
    spec : DiscoverySpec
    population : Population
    n_clients : int
    holders : ndarray of shape (len(population),), dtype int64
        Clients holding each string (all clients).
    full_holders : ndarray of shape (len(population),), dtype int64
        Clients holding each string among those that sent a full-string report.
    full : Aggregate
        Per-cohort bit counts of the full-string reports.
    discovery : Aggregate
        Per-(slot, cohort) bit counts of the discovery reports, under ``spec.wire_params``.
    split, discovery_share, method :
        As passed to :func:`simulate_discovery`.
    """

    params: Params
    spec: DiscoverySpec
    population: Population
    n_clients: int
    holders: npt.NDArray[np.int64]
    full_holders: npt.NDArray[np.int64]
    full: Aggregate
    discovery: Aggregate
    split: str
    discovery_share: float
    method: str

    @property
    def truth(self) -> dict[str, int]:
        """Clients holding each string (strings nobody holds left out)."""
        return {s: int(c) for s, c in zip(self.population.strings, self.holders) if c > 0}

    @property
    def full_truth(self) -> dict[str, int]:
        """Holders among the full-string reporters: the truth the full-string decode estimates."""
        return {s: int(c) for s, c in zip(self.population.strings, self.full_holders) if c > 0}

    def top(self, count: int) -> list[str]:
        """The ``count`` most held strings (ties broken by population order)."""
        order = np.argsort(-self.holders, kind="stable")[:count]
        return [self.population.strings[i] for i in order]

    def __repr__(self) -> str:
        return (f"DiscoverySimulation(n_clients={self.n_clients}, full_reports={self.full.total_reports}, "
                f"discovery_reports={self.discovery.total_reports}, split={self.split!r}, method={self.method!r})")


Progress = Callable[[int], None] | None


def _aggregate_method(params: Params, spec: DiscoverySpec, encoded: list[bytes], strings: tuple[str, ...],
                      full_clients: npt.NDArray[np.int64], disc_clients: npt.NDArray[np.int64],
                      gen: np.random.Generator, progress: Progress) -> tuple[Aggregate, Aggregate]:
    m = params.num_cohorts
    cells = gen.multinomial(full_clients, np.full(m, 1.0 / m))  # (U, m)
    full = simulate_counts(params, strings, cells, gen)

    wire = spec.wire_params
    md, levels = spec.params.num_cohorts, spec.levels
    per_slot = gen.multinomial(disc_clients, spec.slot_shares)  # (U, L)
    counts = np.zeros((levels * md, wire.num_bloombits + 1), dtype=np.int64)
    for slot in range(levels):
        fcells = gen.multinomial(per_slot[:, slot], np.full(md, 1.0 / md))  # (U, md)
        slot_ones = _set_bit_counts(spec.bloom_bits(encoded, slot), fcells, wire.num_bloombits)
        counts[slot * md:(slot + 1) * md] = _draw_counts(wire, fcells.sum(axis=0), slot_ones, gen)
        if progress is not None:
            progress(1)
    return full, Aggregate(params=wire, counts=counts)


def _reports_method(params: Params, spec: DiscoverySpec, encoded: list[bytes], strings: tuple[str, ...],
                    full_values: npt.NDArray[np.int64], disc_values: npt.NDArray[np.int64],
                    gen: np.random.Generator, chunk_size: int, progress: Progress) -> tuple[Aggregate, Aggregate]:
    m = params.num_cohorts
    table = _bloom_bytes(bloom_bits_table(list(strings), params).reshape(len(strings) * m, params.num_hashes),
                         params.num_bloombits)
    full = Aggregate.empty(params)
    for start in range(0, full_values.size, chunk_size):
        vals = full_values[start:start + chunk_size]
        coh = gen.integers(0, m, size=vals.size, dtype=np.int64)
        words = _encode_rows(params, table, vals * m + coh, None, gen)
        full = full.merge(Aggregate.from_reports(ReportBatch(params=params, cohorts=coh, words=words)))

    wire = spec.wire_params
    md, levels = spec.params.num_cohorts, spec.levels
    if spec.slot_weights is None:
        slots = gen.integers(0, levels, size=disc_values.size, dtype=np.int64)
    else:
        slots = gen.choice(levels, size=disc_values.size, p=spec.slot_shares).astype(np.int64)
    disc = Aggregate.empty(wire)
    for slot in range(levels):
        bits = spec.bloom_bits(encoded, slot)
        ftable = _bloom_bytes(bits.reshape(len(encoded) * md, wire.num_hashes), wire.num_bloombits)
        vals = disc_values[slots == slot]
        for start in range(0, vals.size, chunk_size):
            frag = vals[start:start + chunk_size]
            coh = gen.integers(0, md, size=frag.size, dtype=np.int64)
            words = _encode_rows(wire, ftable, frag * md + coh, None, gen)
            disc = disc.merge(Aggregate.from_reports(ReportBatch(params=wire, cohorts=coh + slot * md, words=words)))
        if progress is not None:
            progress(1)
    return full, disc


def simulate_discovery(params: Params, spec: DiscoverySpec, population: Population, n_clients: int, *,
                       discovery_share: float = 0.75, split: Split = "clients", method: Method = "aggregate",
                       chunk_size: int = 1 << 20, rng: RngLike = None,
                       progress: Callable[[int], None] | None = None) -> DiscoverySimulation:
    """Simulate ``n_clients`` clients sending full-string and discovery reports.

    Parameters
    ----------
    params : Params
        Parameters of the full-string reports.
    spec : DiscoverySpec
        Layout and parameters of the discovery reports.
    population : Population
        The law of the clients' values (one value per client).
    n_clients : int
    discovery_share : float, default=0.75
        With ``split="clients"``, the probability that a client sends a discovery report
        instead of a full-string report.  Ignored with ``split="budget"``.
    split : {"clients", "budget"}, default="clients"
        See the module docstring.
    method : {"aggregate", "reports"}, default="aggregate"
        See the module docstring.
    chunk_size : int, default=2**20
        Reports encoded at once by ``method="reports"``.
    rng : numpy.random.Generator, int or None
    progress : callable, optional
        Called with 1 after each of the ``spec.levels`` slots' counts are drawn (a progress bar).

    Returns
    -------
    DiscoverySimulation

    Examples
    --------
    >>> from rappor import Params
    >>> from rappor.analysis.discovery import DiscoverySpec, realistic_population
    >>> params = Params(num_bloombits=32, num_hashes=1, num_cohorts=8, prob_p=0.0, prob_q=1.0, prob_f=0.25)
    >>> spec = DiscoverySpec(params=params, max_length=30)
    >>> sim = simulate_discovery(params, spec, realistic_population(100, rng=0), 10_000, rng=0)
    >>> sim.full.total_reports + sim.discovery.total_reports
    10000
    """
    if not isinstance(params, Params):
        raise InvalidParameterError(f"The 'params' parameter of simulate_discovery must be a Params. Got {params!r}.")
    if not isinstance(spec, DiscoverySpec):
        raise InvalidParameterError(f"The 'spec' parameter of simulate_discovery must be a DiscoverySpec. Got {spec!r}.")
    if not isinstance(population, Population):
        raise InvalidParameterError("The 'population' parameter of simulate_discovery must be a Population.")
    n = check_int(n_clients, "n_clients", "simulate_discovery", low=1)
    # Checked before drawing: 256 bytes a client (measured peak: 190, k = 16, the default split).
    check_memory(256 * n, f"simulating {n:,} clients with discovery reports", remedy="simulate fewer clients")
    share = check_probability(discovery_share, "discovery_share", "simulate_discovery")
    how = check_options(split, "split", "simulate_discovery", ("clients", "budget"))
    meth = check_options(method, "method", "simulate_discovery", ("aggregate", "reports"))
    chunk = check_int(chunk_size, "chunk_size", "simulate_discovery", low=1)
    gen = check_rng(rng)
    strings = population.strings
    encoded = [s.encode("utf-8") for s in strings]
    if meth == "aggregate":
        holders = gen.multinomial(n, population.probabilities).astype(np.int64)
        if how == "clients":
            disc = gen.binomial(holders, share).astype(np.int64)
            full_h = holders - disc
        else:
            disc, full_h = holders, holders
        full, discovery = _aggregate_method(params, spec, encoded, strings, full_h, disc, gen, progress)
    else:
        values = population.sample(n, rng=gen)
        holders = np.bincount(values, minlength=len(strings)).astype(np.int64)
        if how == "clients":
            is_disc = gen.random(n) < share
            full_values, disc_values = values[~is_disc], values[is_disc]
        else:
            full_values, disc_values = values, values
        full_h = np.bincount(full_values, minlength=len(strings)).astype(np.int64)
        full, discovery = _reports_method(params, spec, encoded, strings, full_values, disc_values, gen, chunk,
                                          progress)
    return DiscoverySimulation(params=params, spec=spec, population=population, n_clients=n, holders=holders,
                               full_holders=full_h, full=full, discovery=discovery, split=how,
                               discovery_share=share if how == "clients" else 1.0, method=meth)
