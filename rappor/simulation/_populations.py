"""Populations: the truth a simulation draws from, and the candidate lists made from it.

A :class:`Population` is a distribution over strings: ``U`` strings ``"v1" .. "vU"`` (Zipf,
exponential, Gaussian, uniform; google/rappor's ``tests/gen_sim_input.py``) or given counts
(:func:`rappor.formats.read_population`).  :func:`candidate_strings` makes the analyst's
candidate list from it, with decoys added and every R-th true string removed (to exercise
unexplained mass).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
import numpy.typing as npt

from .._util.lazy import lazy_module
from .._util.memory import check_memory
from .._util.validation import RngLike, check_int, check_options, check_real, check_rng
from ..exceptions import InvalidParameterError

if TYPE_CHECKING:
    from scipy import special
else:  # imported on first use: keeps `import rappor` light
    special = lazy_module("scipy.special")

__all__ = ["DISTRIBUTIONS", "Population", "candidate_strings"]

#: Names accepted by :meth:`Population.make` (and ``rappor simulate --dist``).
DISTRIBUTIONS = ("zipf", "exponential", "gaussian", "uniform")


Distribution = Literal["zipf", "exponential", "gaussian", "uniform"]


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


#: Bytes a distinct simulated value or candidate string costs (str object, slots, sets).
_BYTES_PER_VALUE = 256


def _check_population_size(num_unique: int) -> None:
    """Refuse, before building, a population whose values would not fit in memory (``--unique 10**9``:
    its arrays and strings grew without bound)."""
    check_memory(_BYTES_PER_VALUE * num_unique, f"a population of {num_unique:,} distinct values",
                 remedy="use fewer distinct values")
