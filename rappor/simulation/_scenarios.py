"""Scenarios: aggregated counts drawn for a known distribution, without encoding a report.

:func:`zipf_scenario` draws the counts of ``n_reports`` reports of a Zipf population exactly
from their binomial law (:func:`~rappor.simulation.simulate_counts`) and keeps the truth as a
:class:`Scenario`: what the decoder's tests and benchmarks decode.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .._util.validation import RngLike, check_int, check_rng
from ..collect._aggregate import Aggregate
from ..params import Params
from ._populations import Population
from ._reports import simulate_counts

__all__ = ["Scenario", "zipf_scenario"]

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
