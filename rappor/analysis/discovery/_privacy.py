"""What a client pays for taking part in a collection with discovery.

The unit of privacy is one client's value, as in :mod:`rappor.privacy`.  A client
sends a full-string report of its value (parameters ``params``) and/or one discovery
report of a prefix of it (``spec.params``).  The two reports' permanent responses use
independent randomness (different PRR labels, :mod:`rappor.analysis.discovery`), and
the discovery report's Bloom filter differs between two values in at most ``2h`` bits
like the full-string one, so ``spec.params.epsilon_inf`` bounds it (RAPPOR Theorem 1;
tight when the two fragments hash to disjoint bits).

``split="clients"``
    each client sends **one** of the two reports (which one is fixed by its secret,
    independently of its value), so its loss is that of the report it sends: the
    worst case over clients is ``max`` of the two epsilons.  The slot and the role
    reveal nothing about the value.
``split="budget"``
    each client sends both, so the losses add up (basic composition of pure DP,
    Dwork and Roth 2014, Theorem 3.16): ``epsilon = epsilon_full + epsilon_discovery``.

For reports of *changing* values and (epsilon, delta) accounting, apply
:func:`rappor.privacy.loss` to each report's parameters and compose.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from ..._util.results import record_table
from ..._util.validation import check_options, check_real
from ...exceptions import InvalidParameterError
from ...params import Params
from ...privacy._accounting import MEASURE_COLUMNS

__all__ = ["DiscoveryPrivacy", "discovery_params", "discovery_privacy"]


@dataclass(frozen=True, slots=True, kw_only=True)
class DiscoveryPrivacy:
    """Per-client privacy loss of a collection with discovery (see the module docstring).

    Attributes
    ----------
    split : str
    epsilon_inf_full, epsilon_one_full : float
        Of a full-string report.
    epsilon_inf_discovery, epsilon_one_discovery : float
        Of a discovery report.
    epsilon_inf, epsilon_one : float
        Of a client, worst case over clients (``max`` with a client split, sum with a
        budget split).
    """

    split: str
    epsilon_inf_full: float
    epsilon_one_full: float
    epsilon_inf_discovery: float
    epsilon_one_discovery: float
    epsilon_inf: float
    epsilon_one: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def table(self) -> np.ndarray:
        """Every measure as a row ``(name, description, value)`` of a numpy structured array
        (the columns of :meth:`rappor.privacy.PrivacyLoss.table`)."""
        how = ("one report per client: the larger" if self.split == "clients"
               else "both reports per client: the sum (basic composition)")
        return record_table(MEASURE_COLUMNS, [
            ("epsilon_inf_full", "pure epsilon, full-string permanent response", self.epsilon_inf_full),
            ("epsilon_inf_discovery", "pure epsilon, discovery permanent response", self.epsilon_inf_discovery),
            ("epsilon_inf_client", f"per client, {how}", self.epsilon_inf),
            ("epsilon_one_full", "pure epsilon, one full-string report", self.epsilon_one_full),
            ("epsilon_one_discovery", "pure epsilon, one discovery report", self.epsilon_one_discovery),
            ("epsilon_one_client", f"per client, {how}", self.epsilon_one),
        ])


def discovery_privacy(params: Params, discovery: Params, *, split: Literal["clients", "budget"] = "clients",
                      ) -> DiscoveryPrivacy:
    """Per-client privacy loss with full-string parameters ``params`` and discovery parameters ``discovery``.

    Examples
    --------
    >>> import math
    >>> full = Params(num_bloombits=128, num_hashes=1, num_cohorts=64, prob_p=0.0, prob_q=1.0,
    ...               prob_f=2 / (1 + math.e**2))
    >>> round(discovery_privacy(full, full).epsilon_inf, 6), round(discovery_privacy(full, full, split="budget").epsilon_inf, 6)
    (4.0, 8.0)
    """
    for name, value in (("params", params), ("discovery", discovery)):
        if not isinstance(value, Params):
            raise InvalidParameterError(f"The {name!r} parameter of discovery_privacy must be a Params. Got {value!r}.")
    how = check_options(split, "split", "discovery_privacy", ("clients", "budget"))

    def combine(a: float, b: float) -> float:
        return max(a, b) if how == "clients" else a + b

    return DiscoveryPrivacy(split=how, epsilon_inf_full=params.epsilon_inf, epsilon_one_full=params.epsilon_one,
                            epsilon_inf_discovery=discovery.epsilon_inf, epsilon_one_discovery=discovery.epsilon_one,
                            epsilon_inf=combine(params.epsilon_inf, discovery.epsilon_inf),
                            epsilon_one=combine(params.epsilon_one, discovery.epsilon_one))


def discovery_params(epsilon_inf: float, *, split: Literal["clients", "budget"] = "clients",
                     discovery_fraction: float = 0.5,
                     ) -> tuple[float, float]:
    """The flip probability ``f`` of the full-string and the discovery reports for a per-client ``epsilon_inf``.

    Both use one hash (``h = 1``: the best accuracy per epsilon for a one-hot Bloom
    filter).  With a client split each report gets the whole ``epsilon_inf``; with a
    budget split the discovery report gets ``discovery_fraction`` of it.  Inverts RAPPOR
    Theorem 1: ``f = 2 / (1 + exp(epsilon / (2 h)))``.

    Returns
    -------
    (f_full, f_discovery) : tuple of float
    """
    eps = check_real(epsilon_inf, "epsilon_inf", "discovery_params", low=0.0, low_open=True)
    how = check_options(split, "split", "discovery_params", ("clients", "budget"))
    frac = check_real(discovery_fraction, "discovery_fraction", "discovery_params", low=0.0, high=1.0,
                      low_open=True, high_open=True)
    e_full, e_disc = (eps, eps) if how == "clients" else ((1.0 - frac) * eps, frac * eps)
    from ...privacy._planner import _flip_for_epsilon_inf  # the planner's inversion (no overflow; exact at the target)

    return _flip_for_epsilon_inf(e_full, 1), _flip_for_epsilon_inf(e_disc, 1)
