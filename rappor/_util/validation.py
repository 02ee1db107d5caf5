"""Small validators shared by the public classes (private): ints, probabilities, reals, options, cohorts, rng.

Messages follow one template, after scikit-learn's ``InvalidParameterError``::

    The 'prob_f' parameter of Params must be a float in the range [0, 1]. Got 1.5 instead.
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Callable
from typing import Any, ClassVar, TypeAlias, Union

import numpy as np
import numpy.typing as npt

from ..exceptions import InvalidParameterError


def _shown(value: Any) -> str:
    """``repr(value)``, or its start and length when longer than 40 characters (a 400-digit integer)."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}\u2026 ({len(text):,} characters)"


def _fail(name: str, owner: str, expected: str, value: Any) -> InvalidParameterError:
    msg = f"The {name!r} parameter of {owner} must be {expected}. Got {_shown(value)} instead."
    return InvalidParameterError(msg)


#: Largest count (of reports, of candidates) the accountings and the planner take: 2**53,
#: the largest integer a float holds exactly (their formulas compute in floats; 10**400
#: reports overflowed them).
MAX_COUNT = 2**53


def check_int(value: Any, name: str, owner: str, *, low: int | None = None, high: int | None = None) -> int:
    """Return ``value`` as an ``int`` in ``[low, high]`` or raise :class:`InvalidParameterError`."""
    expected = "an int"
    if low is not None and high is not None:
        expected = f"an int in the range [{low}, {high}]"
    elif low is not None:
        expected = f"an int >= {low}"
    elif high is not None:
        expected = f"an int <= {high}"
    if isinstance(value, (bool, np.bool_)):
        raise _fail(name, owner, expected, value)
    try:
        ivalue = operator.index(value)
    except TypeError:
        raise _fail(name, owner, expected, value) from None
    if (low is not None and ivalue < low) or (high is not None and ivalue > high):
        raise _fail(name, owner, expected, value)
    return int(ivalue)


def check_probability(value: Any, name: str, owner: str, *, open_low: bool = False, open_high: bool = False) -> float:
    """Return ``value`` as a finite ``float`` in ``[0, 1]`` (ends optionally open)."""
    lo = "(" if open_low else "["
    hi = ")" if open_high else "]"
    expected = f"a float in the range {lo}0, 1{hi}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise _fail(name, owner, expected, value)
    fvalue = float(value)
    if not math.isfinite(fvalue) or fvalue < 0.0 or fvalue > 1.0:
        raise _fail(name, owner, expected, value)
    if (open_low and fvalue == 0.0) or (open_high and fvalue == 1.0):
        raise _fail(name, owner, expected, value)
    return fvalue


def check_real(value: Any, name: str, owner: str, *, low: float | None = None, high: float | None = None,
               low_open: bool = False, high_open: bool = False) -> float:
    """Return ``value`` as a finite ``float`` within the given bounds."""
    parts = []
    if low is not None:
        parts.append(f"{'>' if low_open else '>='} {low}")
    if high is not None:
        parts.append(f"{'<' if high_open else '<='} {high}")
    expected = "a finite float" + (" " + " and ".join(parts) if parts else "")
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise _fail(name, owner, expected, value)
    fvalue = float(value)
    if not math.isfinite(fvalue):
        raise _fail(name, owner, expected, value)
    if low is not None and (fvalue < low or (low_open and fvalue == low)):
        raise _fail(name, owner, expected, value)
    if high is not None and (fvalue > high or (high_open and fvalue == high)):
        raise _fail(name, owner, expected, value)
    return fvalue


def check_options(value: Any, name: str, owner: str, options: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``options``."""
    if not isinstance(value, str) or value not in options:
        expected = "a str among {" + ", ".join(repr(o) for o in options) + "}"
        raise _fail(name, owner, expected, value)
    return value


def check_cohort(value: Any, num_cohorts: int, owner: str, name: str = "cohort") -> int:
    """Return ``value`` as an ``int`` cohort in ``[0, num_cohorts)``."""
    return check_int(value, name, owner, low=0, high=num_cohorts - 1)


def check_cohorts(values: npt.ArrayLike, num_cohorts: int, owner: str, name: str = "cohorts") -> npt.NDArray[np.int64]:
    """Return ``values`` as a flat int64 array of cohorts in ``[0, num_cohorts)``; the message shows the first bad one."""
    cohorts = np.asarray(values, dtype=np.int64).reshape(-1)
    bad = (cohorts < 0) | (cohorts >= num_cohorts)
    if bad.any():
        msg = (f"The {name!r} parameter of {owner} must hold ints in the range [0, {num_cohorts - 1}]. "
               f"Got {int(cohorts[bad][0])} instead.")
        raise InvalidParameterError(msg)
    return cohorts


#: What every ``rng`` parameter accepts (SciPy's SPEC 7): a generator, or what
#: :func:`numpy.random.default_rng` turns into one (an int seed, a ``SeedSequence`` or a
#: ``BitGenerator``); ``None`` draws fresh entropy from the operating system.
RngLike: TypeAlias = Union[np.random.Generator, np.random.BitGenerator, np.random.SeedSequence, int, None]


def check_rng(rng: RngLike) -> np.random.Generator:
    """Normalize ``rng`` (Generator, int seed or None) to a :class:`numpy.random.Generator` (SPEC 7)."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None:
        return np.random.default_rng()
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        return np.random.default_rng(int(rng))
    if isinstance(rng, (np.random.SeedSequence, np.random.BitGenerator)):
        return np.random.default_rng(rng)
    msg = f"rng must be a numpy.random.Generator, an int seed or None. Got {rng!r} instead."
    raise InvalidParameterError(msg)


#: A check of one configuration value: ``check(value, name, owner)`` raises
#: :class:`InvalidParameterError` naming the parameter and its owner.
ParameterCheck: TypeAlias = Callable[[Any, str, str], object]


def options_check(choices: tuple[str, ...]) -> ParameterCheck:
    """A :data:`ParameterCheck` accepting one of ``choices``."""
    return lambda value, name, owner: check_options(value, name, owner, choices)


def check_bool(value: Any, name: str, owner: str) -> None:
    """Raise unless ``value`` is a ``bool`` (or ``numpy.bool_``)."""
    if not isinstance(value, (bool, np.bool_)):
        msg = f"The {name!r} parameter of {owner} must be a bool. Got {value!r} instead."
        raise InvalidParameterError(msg)


def check_rng_parameter(value: Any, name: str, owner: str) -> None:
    """Raise unless ``value`` is accepted by :func:`check_rng` (:data:`RngLike`)."""
    try:
        check_rng(value)
    except InvalidParameterError:
        msg = (f"The {name!r} parameter of {owner} must be a numpy.random.Generator, an int seed "
               f"or None. Got {value!r} instead.")
        raise InvalidParameterError(msg) from None


class CheckedParameters:
    """Configuration objects (scikit-learn's convention): parameters stored as given in
    ``__init__``, checked by :meth:`_check_parameters` when used, shown by ``repr``.

    Subclasses list their parameters, in ``__init__`` order, in ``_parameter_constraints``
    with the check of each.
    """

    _parameter_constraints: ClassVar[dict[str, ParameterCheck]] = {}

    def __repr__(self) -> str:
        args = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._parameter_constraints)
        return f"{type(self).__name__}({args})"

    def _check_parameters(self) -> None:
        owner = type(self).__name__
        for name, check in self._parameter_constraints.items():
            check(getattr(self, name), name, owner)
