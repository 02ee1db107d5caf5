"""Simulated collections: clients, their reports and the aggregate, with the truth (:func:`simulate`).

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

The populations are in :mod:`._populations`, the fast reports in :mod:`._reports` and the
count-only scenarios in :mod:`._scenarios`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from .._util.csv_text import csv_text_field
from .._util.memory import check_memory
from .._util.validation import RngLike, check_int, check_options, check_rng
from ..client import client_secret, derive_cohort, encode_clients
from ..client._reports import ReportBatch
from ..collect._aggregate import Aggregate
from ..collect._design import CandidateMap, hash_candidates
from ..exceptions import InvalidParameterError
from ..params import Params
from ._populations import Population, candidate_strings
from ._reports import _bloom_table, _encode_rows, simulate_reports

__all__ = ["Simulation", "simulate"]

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
                lines.append(f"{csv_text_field(self.population.strings[i])},{c},{c / total!r}")
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
