"""Do the counts fit the parameters?  A check any command can run on an aggregate (private).

Whatever strings the clients hold, each report's Bloom filter sets ``B`` distinct bits,
where ``B`` is the number of distinct positions the ``h`` hashes of its value give in its
cohort.  Hashes are keyed by the cohort, so over the ``m`` cohorts a value's ``B`` averages
to the value for uniform random positions,

    E[B] = k (1 - (1 - 1/k)^h),

give or take ``sqrt(Var(B) / m)`` for a single value holding every report, less for any
other population (``Var(B)`` of ``h`` uniform draws into ``k`` bins).  The randomized
responses set each bit with probability ``p11`` (set in the Bloom filter) or ``p01``
(not set), so the counts give the unbiased estimate

    B_hat = (ones / N - k p01) / (p11 - p01)

(:func:`rappor.client._randomizer.debias` summed over the ``k`` bits).  When the parameters are
the ones the clients used, ``B_hat`` is within a few standard errors of ``E[B]``; when
``p``, ``q``, ``f`` or ``h`` are not, it is far off: ``p = 0.25`` assumed on ``p = 0.5``
reports makes the clients appear to set 6 bits of 8 with ``h = 2``; ``h = 2`` assumed on
``h = 1`` reports finds 1.0 set bits where 1.996 are due.  The check needs no fit and no
candidate, so it is one function others can call (:func:`check_bit_count`).

Assumptions: reports are independent given the clients' values (one report per client;
several reports of one client share its permanent response and widen the spread, which
the threshold of 5 standard errors leaves room for) and the hash positions behave as
uniform draws across cohorts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..params import report_probabilities
from ..collect._aggregate import Aggregate

__all__ = ["BitCountCheck", "check_bit_count"]

#: Standard errors beyond which the counts are said not to fit: a one-sided normal tail of
#: 3e-7 per check (two-sided 6e-7), so a correct configuration is almost never flagged.
Z_MISFIT = 5.0


@dataclass(frozen=True, slots=True)
class BitCountCheck:
    """Set bits per report: estimated from the counts, and due under the parameters.

    Attributes
    ----------
    estimate, std_error : float
        ``B_hat`` and its standard error (sampling and the spread of ``B`` across cohorts).
    expected : float
        ``E[B] = k (1 - (1 - 1/k)^h)``.
    z : float
        ``(estimate - expected) / std_error``.
    fits : bool
        ``|z| <= Z_MISFIT``.
    reports : int
    """

    estimate: float
    std_error: float
    expected: float
    z: float
    fits: bool
    reports: int

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields (the summaries' ``parameter_check``)."""
        return {"set_bits_per_report": self.estimate, "std_error": self.std_error, "expected": self.expected,
                "z": self.z, "fits": self.fits, "reports": self.reports}

    def warning(self, what: str) -> str:
        """One line saying the counts do not fit the parameters ("" when they fit).

        ``what`` names the counts and their parameters (e.g. ``"the discovery counts (--params
        disc.csv)"``).
        """
        if self.fits:
            return ""
        return (f"{what} do not fit their parameters: the reports set {self.estimate:.3f} Bloom bits each on "
                f"average (SE {self.std_error:.3f}) where the parameters' k and h give {self.expected:.3f} "
                f"({self.z:+.1f} SE); check that p, q, f and h are the clients' (results decoded with other "
                f"parameters are wrong)")


def check_bit_count(aggregate: Aggregate, *, cohorts_per_value: int | None = None) -> BitCountCheck | None:
    """Compare the set bits per report that ``aggregate`` shows with what its parameters give.

    Parameters
    ----------
    aggregate : Aggregate
    cohorts_per_value : int or None, default=None
        Cohorts over which one value's reports spread (``num_cohorts``; for discovery
        counts, the cohorts of one slot).

    Returns
    -------
    BitCountCheck or None
        None without reports, or when the parameters make every bit equally likely to be
        reported (``p11 == p01``).

    Notes
    -----
    ``Var(ones)`` is the sum of the cells' binomial variances (bits are independent given
    the Bloom filters) plus ``N (p11 - p01)^2 Var(B)``; the spread of ``B`` across cohorts
    adds ``Var(B) / cohorts_per_value``.  ``Var(B)`` of ``h`` uniform draws into ``k`` bins
    is ``k (k-1) (1 - 2/k)^h + k (1 - 1/k)^h - k^2 (1 - 1/k)^(2h)`` (occupancy moments).
    """
    params = aggregate.params
    k, h = params.num_bloombits, params.num_hashes
    p11, p01 = report_probabilities(params.prob_p, params.prob_q, params.prob_f)
    gap = p11 - p01
    counts = np.asarray(aggregate.counts, dtype=np.float64)
    n_c = counts[:, 0]
    total = float(n_c.sum())
    if total <= 0 or gap == 0.0:
        return None
    ones = counts[:, 1:]
    estimate = (float(ones.sum()) / total - k * p01) / gap
    expected = k * -math.expm1(h * math.log1p(-1.0 / k))
    var_b = max(0.0, k * (k - 1) * (1.0 - 2.0 / k) ** h + k * (1.0 - 1.0 / k) ** h
                - k * k * (1.0 - 1.0 / k) ** (2 * h))
    with np.errstate(invalid="ignore", divide="ignore"):
        rates = np.where(n_c[:, None] > 0, ones / np.maximum(n_c, 1.0)[:, None], 0.0)
    cell_var = float((n_c[:, None] * rates * (1.0 - rates)).sum()) + total * gap * gap * var_b
    m = cohorts_per_value if cohorts_per_value is not None else params.num_cohorts
    std_error = math.sqrt(cell_var / (total * gap) ** 2 + var_b / max(m, 1))
    z = (estimate - expected) / std_error if std_error > 0 else (0.0 if estimate == expected else math.inf)
    return BitCountCheck(estimate=estimate, std_error=std_error, expected=expected, z=z,
                         fits=abs(z) <= Z_MISFIT, reports=int(total))
