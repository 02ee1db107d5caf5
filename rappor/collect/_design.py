"""Candidate maps: which (cohort, bit) rows each candidate string sets.

A :class:`CandidateMap` is the design matrix of the decoder: a sparse 0/1 matrix with
one row per (cohort, bit), row index ``cohort * k + bit``, and one column per candidate
(google/rappor ``map.csv``; its rows are 1-based ``cohort * k + bit + 1``).  The map,
not our hash function, defines the design: maps written by google/rappor (MD5
hashing) decode the same way as maps hashed here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from .._util import pages
from .._util.lazy import lazy_module
from .._util.memory import check_design
from ..exceptions import InvalidParameterError
from ..client._hashing import bloom_bits_table
from ..params import Params

if TYPE_CHECKING:
    import scipy.sparse as sp
else:  # imported on first use: keeps `import rappor` light
    sp = lazy_module("scipy.sparse")

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
        cohort ``c`` (row ``c * k + b``).  A map made by :func:`hash_candidates` or
        :func:`rappor.formats.read_map` stores its ones as one read-only value (``data``
        has stride 0): a third of the memory; SciPy copies them into a contiguous array
        for its own conversions and products of the whole map.
    """

    params: Params
    strings: tuple[str, ...]
    matrix: sp.csc_matrix

    def __post_init__(self) -> None:
        strings = tuple(self.strings)
        rows = self.params.num_cohorts * self.params.num_bloombits
        if not sp.issparse(self.matrix):
            raise InvalidParameterError("The 'matrix' parameter of CandidateMap must be a scipy.sparse matrix.")
        if self.matrix.shape != (rows, len(strings)):
            msg = (f"The 'matrix' parameter of CandidateMap must have shape ({rows}, {len(strings)}). "
                   f"Got {self.matrix.shape} instead.")
            raise InvalidParameterError(msg)
        _check_distinct(strings)
        matrix = sp.csc_matrix(self.matrix, dtype=np.float64, copy=True)
        matrix.sum_duplicates()
        matrix.data[:] = 1.0
        matrix.eliminate_zeros()
        object.__setattr__(self, "strings", strings)
        object.__setattr__(self, "matrix", matrix)

    @classmethod
    def _from_canonical(cls, params: Params, strings: tuple[str, ...], matrix: sp.csc_matrix) -> CandidateMap:
        """Wrap a matrix this package built in canonical form (CSC, float64, sorted unique
        indices, all values 1) without the defensive copy: half the peak memory of
        :func:`hash_candidates` on large lists."""
        if matrix.shape != (params.num_cohorts * params.num_bloombits, len(strings)):  # pragma: no cover
            raise AssertionError("internal error: candidate matrix of the wrong shape")
        _check_distinct(strings)
        out = cls.__new__(cls)
        object.__setattr__(out, "params", params)
        object.__setattr__(out, "strings", strings)
        object.__setattr__(out, "matrix", matrix)
        return out

    def __len__(self) -> int:
        return len(self.strings)

    @classmethod
    def from_indices(cls, params: Params, strings: Sequence[str], rows: Sequence[Sequence[int]]) -> CandidateMap:
        """Build from 0-based stacked row indices (``cohort * k + bit``) per candidate."""
        n_rows = params.num_cohorts * params.num_bloombits
        lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
        flat = np.fromiter((i for r in rows for i in r), dtype=np.int64, count=int(lengths.sum()))
        if flat.size and (flat.min() < 0 or flat.max() >= n_rows):
            msg = f"Candidate map row indices must be in [0, {n_rows - 1}]."
            raise InvalidParameterError(msg)
        cols = np.repeat(np.arange(len(rows)), lengths)
        matrix = sp.csc_matrix((np.ones(flat.size), (flat, cols)), shape=(n_rows, len(rows)))
        return cls(params=params, strings=tuple(strings), matrix=matrix)


def _check_distinct(strings: tuple[str, ...]) -> None:
    """Refuse a repeated candidate; a str and its UTF-8 bytes (``"a"``, ``b"a"``) are the same candidate.

    Both would set exactly the same bits (a str is hashed as its UTF-8 bytes), giving the
    design two identical columns, so the repeat is an error like any other.
    """
    if all(type(s) is str for s in strings):  # UTF-8 is one-to-one: distinct str, distinct bytes
        keys: Sequence[object] = strings
    else:
        keys = [s.encode("utf-8", "surrogatepass") if isinstance(s, str) else bytes(s) for s in strings]
    if len(set(keys)) == len(keys):
        return
    first: dict[object, int] = {}
    for index, key in enumerate(keys):
        earlier = first.setdefault(key, index)
        if earlier != index:
            break
    a, b = strings[earlier], strings[index]
    if type(a) is type(b):
        msg = f"The 'strings' parameter of CandidateMap must hold distinct candidates; {a!r} is repeated."
    else:
        msg = (f"The 'strings' parameter of CandidateMap must hold distinct candidates; {a!r} (index {earlier}) and "
               f"{b!r} (index {index}) are the same candidate (a str is hashed as its UTF-8 bytes).")
    raise InvalidParameterError(msg)


#: Candidates hashed per block by :func:`hash_candidates` (bounds its temporary arrays) ...
_HASH_BLOCK = 8192
#: ... and at most this many (candidate, cohort, hash) entries per block, for large m * h.
_HASH_BLOCK_ENTRIES = 1 << 21


def hash_block_size(params: Params) -> int:
    """Candidates per hashing block: :data:`_HASH_BLOCK`, fewer when ``m * h`` is large.

    Also the block ``rappor hash-candidates`` hashes and writes at a time.
    """
    return max(1, min(_HASH_BLOCK, _HASH_BLOCK_ENTRIES // (params.num_cohorts * params.num_hashes)))


def hash_candidates(strings: Sequence[str], params: Params) -> CandidateMap:
    """Hash candidate strings into a :class:`CandidateMap` with :mod:`rappor.client`.

    Parameters
    ----------
    strings : sequence of str
        Distinct candidate strings.
    params : Params

    Returns
    -------
    CandidateMap

    Raises
    ------
    InsufficientMemoryError
        If the map of ``len(strings)`` candidates at these ``k``, ``h`` and ``m`` cannot
        fit in memory (estimated before hashing: :func:`rappor._util.memory.design_bytes`).
    """
    strings = tuple(strings)
    block = hash_block_size(params)
    check_design(params, len(strings), block=block)
    blocks = (bloom_bits_table(strings[i:i + block], params) for i in range(0, len(strings), block))
    return _map_from_bit_tables(params, strings, blocks)


def _sort_last_axis(table: npt.NDArray[np.integer]) -> None:
    """``table.sort(axis=2)`` in place; for ``h = 2`` a minimum and a maximum (NumPy sorts
    each pair with a call of its own: 1.7 of 7 CPU-s of hashing 1 M candidates at m = 64)."""
    if table.shape[2] == 2:
        first, second = table[:, :, 0], table[:, :, 1]
        low = np.minimum(first, second)
        np.maximum(first, second, out=second)
        first[...] = low
    else:
        table.sort(axis=2)


def _map_from_bit_tables(params: Params, strings: tuple[str, ...],
                         tables: Iterable[npt.NDArray[np.integer]]) -> CandidateMap:
    """The :class:`CandidateMap` of consecutive blocks of a ``(S, m, h)`` table of bit indices.

    ``table[s, c, i]`` is the bit (in ``[0, k)``) that hash ``i`` of candidate ``s`` sets in
    cohort ``c``; each block is overwritten (sorted, then turned into row numbers).  The CSC arrays are written directly:
    within a column the rows ``c * k + bit`` come out sorted by cohort, and sorting each
    cohort's ``h`` bits and dropping repeats (two hashes on one bit) makes them sorted and
    unique, so no COO triplets, format conversions or defensive copies are needed.

    Unless ``m k`` is large beside the map, its ``indices`` are a view of an array that goes
    on with the row numbers ``0 .. m k - 1`` (then a little spare room): the decoder's
    whitened design (the map's columns, then one dense column) shares that array instead of
    copying it (0.5 GB at 1 M candidates, m = 64;
    :func:`rappor.analysis.decoder._problem.weighted_design`).
    """
    k, m = params.num_bloombits, params.num_cohorts
    n_rows, bound = m * k, len(strings) * m * params.num_hashes  # at most h rows per cohort
    tail = n_rows if n_rows <= bound // 16 else 0  # the row numbers, when small beside the map
    index_dtype: type[np.int32] | type[np.int64] = np.int32 if max(bound + tail, n_rows) < 2**31 else np.int64
    offsets = np.arange(0, n_rows, k, dtype=index_dtype)[None, :, None]
    # One array for every block's row indices (a list of blocks, concatenated, left 0.5 GB
    # of freed heap resident at 1 M candidates), then the row numbers (see the docstring).
    flat = pages.empty(bound + tail, index_dtype)  # written once: small pages (rappor._util.pages)
    lengths: list[npt.NDArray[np.int64]] = []
    total = 0
    for table in tables:
        _sort_last_axis(table)
        keep = np.ones(table.shape, dtype=bool)
        np.not_equal(table[:, :, 1:], table[:, :, :-1], out=keep[:, :, 1:])
        per_candidate = keep.reshape(len(table), -1).sum(axis=1, dtype=np.int64)
        n_kept = int(per_candidate.sum())
        rows: npt.NDArray[np.integer] = table if table.dtype == index_dtype else table.astype(index_dtype)
        np.add(rows, offsets, out=rows)  # the table is the caller's scratch: row numbers in place, kept into flat
        np.compress(keep.ravel(), rows.ravel(), out=flat[total:total + n_kept])
        total += n_kept
        lengths.append(per_candidate)
    flat[total:total + tail] = np.arange(tail)
    indptr = np.zeros(len(strings) + 1, dtype=index_dtype)
    if lengths:
        np.cumsum(np.concatenate(lengths), out=indptr[1:])
    matrix = sp.csc_matrix((_ones(total), flat[:total], indptr), shape=(n_rows, len(strings)), copy=False)
    matrix.has_sorted_indices = True
    return CandidateMap._from_canonical(params, strings, matrix)


def _ones(n: int) -> npt.NDArray[np.float64]:
    """``n`` read-only float64 ones that take no memory (one value, stride 0).

    A map's values are all 1, and a map is not changed once built (a frozen
    :class:`CandidateMap`); SciPy's products read the values through their strides.  The
    stored ones were 1 GB at 1 M candidates (k=16, m=64, h=2), written and paged in for
    nothing: 2 of the 5 CPU-s of hashing the candidates on this machine.
    """
    return np.broadcast_to(np.float64(1.0), (n,))
