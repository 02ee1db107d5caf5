"""The variables of an association analysis: a name, an encoding and its categories (private)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..._util.memory import check_design
from ...collect._design import CandidateMap
from ...exceptions import InvalidParameterError
from ...params import Params, boolean_params

__all__ = ["BOOLEAN_CATEGORIES", "OTHER", "Variable", "boolean_params"]

#: Category labels of a boolean variable, in google/rappor's order (``association.R``
#: ``GetCondProbBooleanReports``: TRUE first).
BOOLEAN_CATEGORIES = ("TRUE", "FALSE")
#: Label of the category of the strings that are not candidates (google/rappor's "Other").
OTHER = "Other"

VariableKind = Literal["string", "boolean"]


def _boolean_map(params: Params) -> CandidateMap:
    """TRUE sets the single bit in every cohort; FALSE sets none.

    Checked before allocating and built from numpy arrays: a Python list of the ``m``
    rows grew without bound at ``m = 2**32`` (about 150 GB, or the OOM killer).
    """
    import numpy as np
    import scipy.sparse as sp

    m = params.num_cohorts
    check_design(params, len(BOOLEAN_CATEGORIES))
    index_dtype = np.int32 if m < 2**31 else np.int64
    matrix = sp.csc_matrix((np.ones(m), np.arange(m, dtype=index_dtype), np.array([0, m, m], dtype=index_dtype)),
                           shape=(m * params.num_bloombits, len(BOOLEAN_CATEGORIES)), copy=False)
    matrix.has_sorted_indices = True
    return CandidateMap._from_canonical(params, BOOLEAN_CATEGORIES, matrix)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Variable:
    """One variable of a multi-variable RAPPOR collection.

    Build with :meth:`string` or :meth:`boolean`.

    Attributes
    ----------
    name : str
        The variable's name (a column of the reports file).
    kind : {"string", "boolean"}
    params : Params
        The parameters its reports were encoded with (``k = 1`` for a boolean).
    candidate_map : CandidateMap
        Its candidates and the bits each sets in every cohort.  For a boolean, the
        categories ``TRUE`` (sets the bit) and ``FALSE`` (sets none).
    """

    name: str
    kind: VariableKind
    params: Params
    candidate_map: CandidateMap

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            msg = f"The 'name' parameter of Variable must be a non-empty str. Got {self.name!r} instead."
            raise InvalidParameterError(msg)
        if self.kind not in ("string", "boolean"):
            msg = f"The 'kind' parameter of Variable must be 'string' or 'boolean'. Got {self.kind!r} instead."
            raise InvalidParameterError(msg)
        if not isinstance(self.candidate_map, CandidateMap):
            msg = f"The 'candidate_map' parameter of Variable must be a CandidateMap. Got {type(self.candidate_map).__name__} instead."
            raise InvalidParameterError(msg)
        if self.candidate_map.params != self.params:
            msg = (f"The candidate map of variable {self.name!r} was made with {self.candidate_map.params!r}, "
                   f"not with the variable's {self.params!r}.")
            raise InvalidParameterError(msg)

    @classmethod
    def string(cls, name: str, candidate_map: CandidateMap) -> Variable:
        """A string variable whose candidates are those of ``candidate_map`` (encoded with its params)."""
        if not isinstance(candidate_map, CandidateMap):
            msg = f"The 'candidate_map' parameter of Variable.string must be a CandidateMap. Got {type(candidate_map).__name__} instead."
            raise InvalidParameterError(msg)
        return cls(name=name, kind="string", params=candidate_map.params, candidate_map=candidate_map)

    @classmethod
    def boolean(cls, name: str, params: Params) -> Variable:
        """A boolean variable collected with ``params`` (its reports have one bit: see :func:`boolean_params`)."""
        if not isinstance(params, Params):
            msg = f"The 'params' parameter of Variable.boolean must be a Params. Got {type(params).__name__} instead."
            raise InvalidParameterError(msg)
        bparams = boolean_params(params)
        return cls(name=name, kind="boolean", params=bparams, candidate_map=_boolean_map(bparams))

    def __repr__(self) -> str:
        return f"Variable(name={self.name!r}, kind={self.kind!r}, candidates={len(self.candidate_map)}, params={self.params!r})"
