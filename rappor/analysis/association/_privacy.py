"""Privacy of a client that reports several variables (private; re-exported by :mod:`rappor.analysis.association`).

Each variable's report is a separate RAPPOR report (its own Bloom filter, an independent
permanent response per variable, fresh instantaneous noise), so by sequential
composition of pure differential privacy the epsilons add (Dwork and Roth 2014, "The
Algorithmic Foundations of Differential Privacy", Theorem 3.14): the unit of privacy is
the client's whole tuple of values, and changing all of them costs at most the sum.

A string variable costs what :class:`~rappor.Params` says (``epsilon_one`` for one
report, ``epsilon_inf`` for the permanent response, RAPPOR Theorems 1-2).  A boolean is a
one-bit Bloom filter whose two values differ in that one bit, so its permanent response
costs ``ln((1 - f/2) / (f/2))`` -- half of ``epsilon_inf`` of one-hash parameters, whose
``2h`` counts the bits of two different strings -- and one report the larger log-ratio of
that bit's two laws, ``max(|ln(p11 / p01)|, |ln((1 - p11) / (1 - p01))|)`` (the definition
of epsilon-DP for one Bernoulli bit; ``epsilon_one`` of one-hash parameters is the sum of
the two, again for two differing bits).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ...exceptions import InvalidParameterError
from ...params import Params
from ._variables import boolean_params

__all__ = ["MultiVariablePrivacy", "multi_variable_privacy"]


@dataclass(frozen=True, slots=True, kw_only=True)
class MultiVariablePrivacy:
    """Pure-DP cost of one client's tuple of reports, per variable and in total.

    Attributes
    ----------
    kinds : tuple of str
        ``"string"`` or ``"boolean"`` per variable.
    epsilon_one, epsilon_inf : tuple of float
        Per variable: one report, and the permanent response (any number of reports of
        unchanged values).
    total_epsilon_one, total_epsilon_inf : float
        Their sums.
    """

    kinds: tuple[str, ...]
    epsilon_one: tuple[float, ...]
    epsilon_inf: tuple[float, ...]

    @property
    def total_epsilon_one(self) -> float:
        """Sum of the variables' one-report epsilons."""
        return float(sum(self.epsilon_one))

    @property
    def total_epsilon_inf(self) -> float:
        """Sum of the variables' permanent-response epsilons."""
        return float(sum(self.epsilon_inf))


def _log_ratio(a: float, b: float) -> float:
    """``|ln(a / b)|``, infinite when exactly one of them is 0."""
    if a == b:
        return 0.0
    if a == 0.0 or b == 0.0:
        return math.inf
    return abs(math.log(a / b))


def multi_variable_privacy(params: Params, kinds: Sequence[str]) -> MultiVariablePrivacy:
    """The privacy cost of reporting one value of each variable with ``params``.

    Parameters
    ----------
    params : Params
        The collection's parameters (a boolean uses one bit and one hash).
    kinds : sequence of {"string", "boolean"}

    Returns
    -------
    MultiVariablePrivacy

    Examples
    --------
    >>> p = Params(num_bloombits=16, num_hashes=2, num_cohorts=8, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    >>> cost = multi_variable_privacy(p, ["string", "boolean"])
    >>> round(cost.total_epsilon_inf, 4), round(p.epsilon_inf + p.epsilon_inf / 4, 4)
    (5.4931, 5.4931)
    """
    if not isinstance(params, Params):
        raise InvalidParameterError(f"The 'params' parameter of multi_variable_privacy must be a Params. Got {params!r} instead.")
    ones, infs = [], []
    for kind in kinds:
        if kind == "string":
            ones.append(params.epsilon_one)
            infs.append(params.epsilon_inf)
        elif kind == "boolean":
            b = boolean_params(params)
            ones.append(max(_log_ratio(b.p11, b.p01), _log_ratio(1.0 - b.p11, 1.0 - b.p01)))
            infs.append(b.epsilon_inf / 2.0)  # one differing bit, not 2h = 2
        else:
            msg = f"The 'kinds' parameter of multi_variable_privacy must hold 'string' or 'boolean'. Got {kind!r} instead."
            raise InvalidParameterError(msg)
    return MultiVariablePrivacy(kinds=tuple(kinds), epsilon_one=tuple(ones), epsilon_inf=tuple(infs))
