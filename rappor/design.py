"""Candidate maps: which (cohort, bit) rows each candidate string sets.

A :class:`CandidateMap` is the design matrix of the decoder: a sparse 0/1 matrix with
one row per (cohort, bit), row index ``cohort * k + bit``, and one column per candidate
(google/rappor ``map.csv``; its rows are 1-based ``cohort * k + bit + 1``).  The map,
not our hash function, defines the design: maps written by google/rappor (MD5
hashing) decode the same way as maps hashed here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import scipy.sparse as sp  # imported where used: keeps `import rappor` fast

from .exceptions import InvalidParameterError
from .hashing import bloom_bits_table
from .params import Params

__all__ = ["CandidateMap", "hash_candidates"]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class CandidateMap:
    """Candidate strings and the Bloom rows each sets in every cohort.

    Parameters
    ----------
    params : Params
    strings : sequence of str
        The candidates, distinct.
    matrix : scipy.sparse matrix of shape (num_cohorts * num_bloombits, len(strings))
        Stored as CSC, float64, entries 1.0 where candidate ``s`` sets bit ``b`` in
        cohort ``c`` (row ``c * k + b``).
    """

    params: Params
    strings: tuple[str, ...]
    matrix: sp.csc_matrix

    def __post_init__(self) -> None:
        import scipy.sparse as sp

        strings = tuple(self.strings)
        rows = self.params.num_cohorts * self.params.num_bloombits
        if not sp.issparse(self.matrix):
            raise InvalidParameterError("The 'matrix' parameter of CandidateMap must be a scipy.sparse matrix.")
        matrix = sp.csc_matrix(self.matrix, dtype=np.float64, copy=True)
        if matrix.shape != (rows, len(strings)):
            msg = f"The 'matrix' parameter of CandidateMap must have shape ({rows}, {len(strings)}). Got {matrix.shape} instead."
            raise InvalidParameterError(msg)
        matrix.sum_duplicates()
        matrix.data[:] = 1.0
        matrix.eliminate_zeros()
        if len(set(strings)) != len(strings):
            seen: set[str] = set()
            dup = next(s for s in strings if s in seen or seen.add(s))  # type: ignore[func-returns-value]
            msg = f"The 'strings' parameter of CandidateMap must hold distinct candidates; {dup!r} is repeated."
            raise InvalidParameterError(msg)
        object.__setattr__(self, "strings", strings)
        object.__setattr__(self, "matrix", matrix)

    def __len__(self) -> int:
        return len(self.strings)

    @classmethod
    def from_indices(cls, params: Params, strings: Sequence[str], rows: Sequence[Sequence[int]]) -> CandidateMap:
        """Build from 0-based stacked row indices (``cohort * k + bit``) per candidate."""
        import scipy.sparse as sp

        n_rows = params.num_cohorts * params.num_bloombits
        lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
        flat = np.fromiter((i for r in rows for i in r), dtype=np.int64, count=int(lengths.sum()))
        if flat.size and (flat.min() < 0 or flat.max() >= n_rows):
            msg = f"Candidate map row indices must be in [0, {n_rows - 1}]."
            raise InvalidParameterError(msg)
        cols = np.repeat(np.arange(len(rows)), lengths)
        matrix = sp.csc_matrix((np.ones(flat.size), (flat, cols)), shape=(n_rows, len(rows)))
        return cls(params=params, strings=tuple(strings), matrix=matrix)


def hash_candidates(strings: Sequence[str], params: Params) -> CandidateMap:
    """Hash candidate strings into a :class:`CandidateMap` with :mod:`rappor.hashing`.

    Parameters
    ----------
    strings : sequence of str
        Distinct candidate strings.
    params : Params

    Returns
    -------
    CandidateMap
    """
    import scipy.sparse as sp

    k, m = params.num_bloombits, params.num_cohorts
    table = bloom_bits_table(list(strings), params).astype(np.int64)  # (S, m, h)
    s, _, h = table.shape
    rows = (np.arange(m, dtype=np.int64)[None, :, None] * k + table).reshape(-1)
    cols = np.repeat(np.arange(s), m * h)
    matrix = sp.csc_matrix((np.ones(rows.size), (rows, cols)), shape=(m * k, s))
    return CandidateMap(params=params, strings=tuple(strings), matrix=matrix)
