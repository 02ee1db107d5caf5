"""Exact simulation of aggregated RAPPOR counts for benchmarks and tests (private).

For one report per client the reports of different clients are independent and, given
a client's Bloom filter, its report bits are independent: a set Bloom bit is reported
as 1 with probability ``p11`` and a clear one with probability ``p01``
(Erlingsson, Pihur and Korolova 2014, arXiv:1407.6981, Section 3; google/rappor
``decode.R``).  Hence, given the true value and cohort of every client, the number of
ones of bit ``b`` in cohort ``c`` is exactly

    Binomial(n1_cb, p11) + Binomial(N_c - n1_cb, p01),

where ``n1_cb`` is the number of clients of cohort ``c`` whose Bloom filter sets bit
``b``, and counts of different (cohort, bit) pairs are independent.  Sampling that
directly gives the same distribution of :class:`rappor.Aggregate` as encoding every
client, at a tiny fraction of the cost.  (When :mod:`rappor.simulation` lands, the
encoder path can replace :func:`simulate_counts`; the truth side stays the same.)

Tests load this file by path (``importlib``), the benchmark imports it directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from rappor import Aggregate, Params, hash_candidates

__all__ = ["Scenario", "simulate_counts", "true_ones", "zipf_scenario"]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Scenario:
    """A simulated collection and its ground truth.

    Attributes
    ----------
    params : Params
    values : tuple of str
        The true values ``v1 .. vU``.
    counts_by_cohort : ndarray of shape (U, num_cohorts)
        Clients holding each value in each cohort.
    aggregate : Aggregate
        The simulated bit counts.
    """

    params: Params
    values: tuple[str, ...]
    counts_by_cohort: npt.NDArray[np.int64]
    aggregate: Aggregate

    @property
    def true_counts(self) -> npt.NDArray[np.int64]:
        """Clients holding each value, shape ``(U,)``."""
        return self.counts_by_cohort.sum(axis=1)

    @property
    def true_proportions(self) -> npt.NDArray[np.float64]:
        """True share of each value among all reports."""
        return self.true_counts / max(int(self.counts_by_cohort.sum()), 1)

    def truth(self) -> dict[str, int]:
        """``{value: reports}`` for the values present (the form :func:`rappor.metrics.evaluate` takes)."""
        return {v: int(c) for v, c in zip(self.values, self.true_counts) if c > 0}


def true_ones(params: Params, values: Sequence[str], counts_by_cohort: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """``n1[c, b]``: clients of cohort ``c`` whose Bloom filter sets bit ``b``, shape (m, k)."""
    m, k = params.num_cohorts, params.num_bloombits
    design = hash_candidates(list(values), params).matrix.tocsr()  # (m*k, U), 0/1
    per_row = counts_by_cohort.T[np.repeat(np.arange(m), k)]  # (m*k, U): n[s, c] on row c*k+b
    n1 = np.asarray(design.multiply(per_row).sum(axis=1)).ravel()
    return np.rint(n1).astype(np.int64).reshape(m, k)


def simulate_counts(params: Params, values: Sequence[str], counts_by_cohort: npt.NDArray[np.int64],
                    rng: np.random.Generator) -> Aggregate:
    """Exact draw of the aggregated counts of one report per client (see module docstring)."""
    counts_by_cohort = np.asarray(counts_by_cohort, dtype=np.int64)
    n1 = true_ones(params, values, counts_by_cohort)
    n_c = counts_by_cohort.sum(axis=0)  # (m,)
    ones = rng.binomial(n1, params.p11) + rng.binomial(n_c[:, None] - n1, params.p01)
    return Aggregate(params=params, counts=np.column_stack([n_c, ones]).astype(np.int64))


def zipf_scenario(params: Params, *, n_reports: int, n_values: int, rng: np.random.Generator | int | None = None,
                  exponent: float = 1.0, prefix: str = "v") -> Scenario:
    """Clients with values ``v1..vU`` drawn from Zipf(``exponent``), spread uniformly over cohorts.

    Frequencies: ``P(v_i) ∝ i ** -exponent`` (issue 4's scenario uses exponent 1); the
    value counts are multinomial, and each value's clients are split over the cohorts
    by a uniform multinomial.
    """
    rng = np.random.default_rng(rng)
    values = tuple(f"{prefix}{i}" for i in range(1, n_values + 1))
    weights = np.arange(1, n_values + 1, dtype=np.float64) ** -exponent
    counts = rng.multinomial(n_reports, weights / weights.sum())
    by_cohort = np.stack([rng.multinomial(n, np.full(params.num_cohorts, 1.0 / params.num_cohorts))
                          for n in counts]).astype(np.int64)
    return Scenario(params=params, values=values, counts_by_cohort=by_cohort,
                    aggregate=simulate_counts(params, values, by_cohort, rng))

