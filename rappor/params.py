"""RAPPOR parameters: the immutable, validated :class:`Params` and the quantities derived from them.

The ``params.csv`` file (header ``k,h,m,p,q,f``) is read and written by
:mod:`rappor.formats`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from ._util.validation import check_int, check_probability
from .exceptions import IncompatibleParamsError, InvalidParameterError

__all__ = ["MAX_COHORTS", "Params", "boolean_params", "check_same_params", "report_probabilities"]

#: Cohorts are hash seeds (unsigned 32-bit), so at most 2**32 of them.
MAX_COHORTS = 2**32

#: The names of the parameters in google/rappor's order (the ``params.csv`` header).
PARAM_NAMES = ("k", "h", "m", "p", "q", "f")
#: Marks a keyword of :class:`Params` that was not given (``None`` is a value, and a wrong one).
_UNSET: Any = object()


def report_probabilities(prob_p: float, prob_q: float, prob_f: float) -> tuple[float, float]:
    """``(p11, p01)``: P(report bit 1 | Bloom bit 1) and P(report bit 1 | Bloom bit 0).

    ``p11 = q (1 - f/2) + p f/2`` and ``p01 = p (1 - f/2) + q f/2`` (Erlingsson, Pihur
    and Korolova 2014, Sec. 4; google/rappor ``decode.R``: the PRR keeps a bit with
    probability ``1 - f/2`` and flips it with ``f/2``, then the IRR reports ``q`` or ``p``).
    """
    p11 = prob_q * (1.0 - prob_f / 2.0) + prob_p * prob_f / 2.0
    p01 = prob_p * (1.0 - prob_f / 2.0) + prob_q * prob_f / 2.0
    return p11, p01


@dataclass(frozen=True, slots=True, kw_only=True, init=False)
class Params:
    """Parameters of a RAPPOR collection (google/rappor names; CSV columns ``k,h,m,p,q,f``).

    Parameters
    ----------
    num_bloombits : int
        ``k``, the number of bits of each Bloom filter and report; ``1 <= k <= 2**32``.
    num_hashes : int
        ``h``, the number of hash functions, ``1 <= h <= k``.
    num_cohorts : int
        ``m``, the number of cohorts (each with its own hash functions), ``1 <= m <= 2**32``.
    prob_p : float
        ``p``, P(report bit = 1) where the permanent randomized response bit is 0.
    prob_q : float
        ``q``, P(report bit = 1) where the permanent randomized response bit is 1.
    prob_f : float
        ``f``, the permanent randomized response replaces each Bloom bit with a fair
        coin with probability ``f`` (so it becomes 1 or 0 with probability ``f/2`` each).
    k, h, m, p, q, f :
        The same six values by their short names (the ``params.csv`` header and the
        paper's letters), as keywords too: ``Params(k=16, h=2, m=64, p=0.5, q=0.75,
        f=0.5)``.  Each value is given once, by either name.

    Raises
    ------
    InvalidParameterError
        If a value is out of range, or if ``(1 - f)(q - p) == 0``: such reports are
        independent of the value and carry no information; if a value is given by both
        its names (``k`` and ``num_bloombits``) or by neither.

    Notes
    -----
    Derived quantities follow Erlingsson, Pihur and Korolova (2014), "RAPPOR:
    Randomized Aggregatable Privacy-Preserving Ordinal Response", arXiv:1407.6981,
    Section 3 and Theorems 1-2, and google/rappor ``analysis/R/decode.R``:

    * ``p11 = q (1 - f/2) + p f/2``, P(report 1 | Bloom bit 1);
    * ``p01 = p (1 - f/2) + q f/2``, P(report 1 | Bloom bit 0);
    * ``epsilon_one = h |ln(p11 (1 - p01) / (p01 (1 - p11)))|``, one report;
    * ``epsilon_inf = 2 h ln((1 - f/2) / (f/2))``, the permanent response, i.e. the bound
      over any number of reports of one value (infinite when ``f = 0``).

    Examples
    --------
    >>> params = Params(num_bloombits=16, num_hashes=2, num_cohorts=8,
    ...                 prob_p=0.5, prob_q=0.75, prob_f=0.5)
    >>> params.p11, params.p01
    (0.6875, 0.5625)
    >>> round(params.epsilon_inf, 4)
    4.3944
    >>> Params(k=16, h=2, m=8, p=0.5, q=0.75, f=0.5) == params
    True
    """

    num_bloombits: int
    num_hashes: int
    num_cohorts: int
    prob_p: float
    prob_q: float
    prob_f: float

    def __init__(self, *, num_bloombits: int = _UNSET, num_hashes: int = _UNSET, num_cohorts: int = _UNSET,
                 prob_p: float = _UNSET, prob_q: float = _UNSET, prob_f: float = _UNSET,
                 k: int = _UNSET, h: int = _UNSET, m: int = _UNSET,
                 p: float = _UNSET, q: float = _UNSET, f: float = _UNSET) -> None:
        named = _one_name_each(
            (("num_bloombits", num_bloombits), ("num_hashes", num_hashes), ("num_cohorts", num_cohorts),
             ("prob_p", prob_p), ("prob_q", prob_q), ("prob_f", prob_f)),
            (("k", k), ("h", h), ("m", m), ("p", p), ("q", q), ("f", f)),
        )
        # Errors name the keyword the caller used.  Bit indices are 32-bit in the hashing spec;
        # a larger k cannot even be allocated.
        bits = check_int(named[0][1], named[0][0], "Params", low=1, high=2**32)
        values = (
            bits,
            check_int(named[1][1], named[1][0], "Params", low=1, high=bits),
            check_int(named[2][1], named[2][0], "Params", low=1, high=MAX_COHORTS),
            *(check_probability(value, name, "Params") for name, value in named[3:]),
        )
        for name, value in zip(("num_bloombits", "num_hashes", "num_cohorts", "prob_p", "prob_q", "prob_f"), values):
            object.__setattr__(self, name, value)
        if (1.0 - self.prob_f) * (self.prob_q - self.prob_p) == 0.0:
            msg = (
                "These parameters carry no information: (1 - prob_f) * (prob_q - prob_p) == 0 "
                f"(prob_f={self.prob_f!r}, prob_p={self.prob_p!r}, prob_q={self.prob_q!r}). "
                "Information is lost. Cannot decode."
            )
            raise InvalidParameterError(msg)

    # Short names mirroring the paper and the CSV header.
    @property
    def k(self) -> int:
        """Alias of :attr:`num_bloombits`."""
        return self.num_bloombits

    @property
    def h(self) -> int:
        """Alias of :attr:`num_hashes`."""
        return self.num_hashes

    @property
    def m(self) -> int:
        """Alias of :attr:`num_cohorts`."""
        return self.num_cohorts

    @property
    def p(self) -> float:
        """Alias of :attr:`prob_p`."""
        return self.prob_p

    @property
    def q(self) -> float:
        """Alias of :attr:`prob_q`."""
        return self.prob_q

    @property
    def f(self) -> float:
        """Alias of :attr:`prob_f`."""
        return self.prob_f

    @property
    def p11(self) -> float:
        """P(report bit 1 | Bloom bit 1) ``= q (1 - f/2) + p f/2`` (:func:`report_probabilities`)."""
        return report_probabilities(self.prob_p, self.prob_q, self.prob_f)[0]

    @property
    def p01(self) -> float:
        """P(report bit 1 | Bloom bit 0) ``= p (1 - f/2) + q f/2`` (:func:`report_probabilities`)."""
        return report_probabilities(self.prob_p, self.prob_q, self.prob_f)[1]

    @property
    def epsilon_one(self) -> float:
        """Epsilon of a single report: ``h |ln(p11 (1 - p01) / (p01 (1 - p11)))|`` (RAPPOR, Thm. 2)."""
        p11, p01 = self.p11, self.p01
        if p11 in (0.0, 1.0) or p01 in (0.0, 1.0):
            return math.inf
        ratio = math.log(p11) + math.log1p(-p01) - math.log(p01) - math.log1p(-p11)
        return self.num_hashes * abs(ratio)

    @property
    def epsilon_inf(self) -> float:
        """Epsilon of the permanent response: ``2 h ln((1 - f/2) / (f/2))`` (RAPPOR, Thm. 1)."""
        f = self.prob_f
        if f == 0.0:
            return math.inf
        # ln(f) - ln(2), not ln(f / 2): the smallest subnormal f halves to 0.
        return 2.0 * self.num_hashes * (math.log1p(-f / 2.0) - (math.log(f) - math.log(2.0)))

    @property
    def num_words(self) -> int:
        """Number of little-endian 64-bit words that hold one packed report."""
        return (self.num_bloombits + 63) // 64

    def as_dict(self) -> dict[str, Any]:
        """The parameters keyed by the CSV header names ``k, h, m, p, q, f``."""
        return {"k": self.k, "h": self.h, "m": self.m, "p": self.p, "q": self.q, "f": self.f}

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Params:
        """Build from a mapping with keys ``k, h, m, p, q, f``."""
        return cls(
            num_bloombits=values["k"],
            num_hashes=values["h"],
            num_cohorts=values["m"],
            prob_p=values["p"],
            prob_q=values["q"],
            prob_f=values["f"],
        )



def _one_name_each(long: tuple[tuple[str, Any], ...], short: tuple[tuple[str, Any], ...]) -> list[tuple[str, Any]]:
    """``(name used, value)`` for each parameter given by its long or its short name, never both."""
    out = []
    for (long_name, long_value), (short_name, short_value) in zip(long, short):
        if long_value is not _UNSET and short_value is not _UNSET:
            msg = (f"Params got both {long_name}={long_value!r} and {short_name}={short_value!r}: "
                   "give each value once, by either name.")
            raise InvalidParameterError(msg)
        if long_value is _UNSET and short_value is _UNSET:
            raise InvalidParameterError(f"Params needs {long_name} (or its short name {short_name}).")
        out.append((long_name, long_value) if short_value is _UNSET else (short_name, short_value))
    return out


def check_same_params(expected: Params, found: Params, what: str) -> None:
    """Raise :class:`IncompatibleParamsError` unless ``found == expected``."""
    if expected != found:
        diffs = ", ".join(
            f"{key}={found.as_dict()[key]!r} (expected {expected.as_dict()[key]!r})"
            for key in PARAM_NAMES
            if expected.as_dict()[key] != found.as_dict()[key]
        )
        msg = f"{what} was made with different parameters: {diffs}"
        raise IncompatibleParamsError(msg)


def boolean_params(params: Params) -> Params:
    """The parameters of a boolean variable collected alongside ``params``: one bit, one hash.

    google/rappor encodes a boolean as a one-bit Bloom filter whose bit is the value
    (``tests/rappor_sim.py``: ``num_bloombits = 1``, ``encode_bits``; ``decode_assoc.R``:
    ``bool_params$k <- 1``), with the collection's ``p``, ``q``, ``f`` and cohorts.
    """
    return replace(params, num_bloombits=1, num_hashes=1)
