"""google/rappor ``map.csv`` files: the candidate map as text.

Layout (google/rappor ``hash_candidates.py``): no header; one row per candidate: the
candidate string (quoted CSV-style when it contains a comma, a quote or leading
spaces), then ``num_hashes * num_cohorts`` integers: for cohort ``0 .. m-1`` and hash
``0 .. h-1``, the 1-based row ``cohort * k + bit + 1`` of the stacked ``(m * k)`` Bloom
vector.  Hashes that coincide repeat a position; duplicates collapse.

The map, not our hash function, defines the design matrix, so maps that google/rappor
wrote with its MD5 hashing are read exactly like maps made by
:func:`rappor.design.hash_candidates`.
"""

from __future__ import annotations

import array
import csv

import numpy as np

from ._io import PathLike, atomic_output, display_name, iter_text_lines
from .design import CandidateMap
from .exceptions import InvalidParameterError, ReportFormatError
from .params import Params

__all__ = ["read_map", "write_map"]


def _bad_index_message(cells: list[str], params: Params) -> str:
    """Describe the first index cell of a row that is not a digit string."""
    k, h = params.num_bloombits, params.num_hashes
    for pos, cell in enumerate(cells):
        if not (cell.isascii() and cell.isdigit()):
            cohort, hash_no = divmod(pos, h)
            return (f"expected a positive integer row index (cohort {cohort}, hash {hash_no}: cohort*k + bit + 1 "
                    f"with k = {k}) in column {pos + 2}, found {cell!r}")
    return "expected integer row indices"  # pragma: no cover - called only with a bad cell


def read_map(path: PathLike, params: Params) -> CandidateMap:
    """Read a google/rappor ``map.csv`` into a :class:`~rappor.design.CandidateMap`.

    Parameters
    ----------
    path : str or os.PathLike
        The file, or ``"-"`` for standard input.
    params : Params
        The parameters the map was made with.

    Returns
    -------
    CandidateMap

    Raises
    ------
    ReportFormatError
        For an empty file, a row without exactly ``h * m`` indices, an index that is
        not an integer or lies outside ``[1, m * k]`` or outside its cohort's block
        ``[c * k + 1, (c + 1) * k]`` (a map made with other parameters), or a repeated
        candidate; the message names the file and line.
    """
    name = display_name(path)
    k, h, m = params.num_bloombits, params.num_hashes, params.num_cohorts
    width = h * m
    strings: list[str] = []
    first_line: dict[str, int] = {}
    line_numbers = array.array("q")
    flat = array.array("q")
    for lineno, text in iter_text_lines(path):
        if not text.strip():
            continue
        try:
            cells = next(csv.reader([text]))
        except (csv.Error, StopIteration) as exc:
            raise ReportFormatError(f"expected a CSV row, found {text!r} ({exc})", path=name, line=lineno) from None
        if len(cells) != width + 1:
            msg = (f"expected a candidate and h * m = {width} row indices (h = {h}, m = {m}), "
                   f"found {len(cells) - 1} indices")
            raise ReportFormatError(msg, path=name, line=lineno)
        digits = cells[1:]
        joined = "".join(digits)
        if not (joined.isascii() and joined.isdigit() and all(digits)):
            raise ReportFormatError(_bad_index_message(digits, params), path=name, line=lineno)
        string = cells[0]
        if string in first_line:
            msg = f"expected distinct candidates, found {string!r} again (first on line {first_line[string]})"
            raise ReportFormatError(msg, path=name, line=lineno)
        first_line[string] = lineno
        strings.append(string)
        line_numbers.append(lineno)
        flat.extend(map(int, digits))
    if not strings:
        raise ReportFormatError("expected at least one candidate row, found an empty file", path=name)

    idx = np.frombuffer(flat, dtype=np.int64).reshape(len(strings), m, h)
    low = (np.arange(m, dtype=np.int64) * k + 1)[None, :, None]
    bad = (idx < low) | (idx > low + (k - 1))
    if bad.any():
        s, c, j = (int(v) for v in np.argwhere(bad)[0])
        value = int(idx[s, c, j])
        if not 1 <= value <= m * k:
            msg = f"expected row indices in [1, m * k] = [1, {m * k}], found {value} (cohort {c}, hash {j})"
        else:
            msg = (f"expected the indices of cohort {c} in [{c * k + 1}, {(c + 1) * k}] (cohort*k + bit + 1 with "
                   f"k = {k}), found {value} for hash {j}; was the map made with other parameters?")
        raise ReportFormatError(msg, path=name, line=int(line_numbers[s]))
    import scipy.sparse as sp  # lazy: keeps `import rappor` fast

    rows = idx.reshape(-1) - 1
    cols = np.repeat(np.arange(len(strings)), width)
    matrix = sp.csc_matrix((np.ones(rows.size), (rows, cols)), shape=(m * k, len(strings)))
    return CandidateMap(params=params, strings=tuple(strings), matrix=matrix)


def write_map(cmap: CandidateMap, path: PathLike) -> None:
    """Write a :class:`~rappor.design.CandidateMap` as a google/rappor ``map.csv``, atomically.

    Each cohort's positions are written in increasing order; a cohort where fewer than
    ``h`` positions are set (hashes that coincide) repeats its last position, as
    google/rappor does for coinciding hashes.

    Parameters
    ----------
    cmap : CandidateMap
    path : str or os.PathLike
        Target file, or ``"-"`` for standard output.

    Raises
    ------
    InvalidParameterError
        If some candidate sets no bit or more than ``h`` bits in a cohort, which the
        format cannot express.
    """
    params = cmap.params
    k, h, m = params.num_bloombits, params.num_hashes, params.num_cohorts
    s = len(cmap)
    import scipy.sparse as sp  # lazy: keeps `import rappor` fast

    matrix = sp.csc_matrix(cmap.matrix, copy=True)
    matrix.sort_indices()
    rows = matrix.indices.astype(np.int64)
    cols = np.repeat(np.arange(s, dtype=np.int64), np.diff(matrix.indptr))
    group = cols * m + rows // k  # nondecreasing: columns in order, rows sorted within each
    per_group = np.bincount(group, minlength=s * m)
    if s and (per_group.min() < 1 or per_group.max() > h):
        g = int(np.argmax((per_group < 1) | (per_group > h)))
        msg = (f"The 'cmap' parameter of write_map must set between 1 and h = {h} bits per cohort for every "
               f"candidate. Got {int(per_group[g])} for {cmap.strings[g // m]!r} in cohort {g % m} instead.")
        raise InvalidParameterError(msg)
    rank = np.arange(group.size) - np.searchsorted(group, group, side="left")
    out = np.full((s * m, h), -1, dtype=np.int64)
    out[group, rank] = rows + 1
    for j in range(1, h):
        out[:, j] = np.where(out[:, j] < 0, out[:, j - 1], out[:, j])
    out = out.reshape(s, m * h)
    with atomic_output(path) as fh:
        writer = csv.writer(fh, lineterminator="\n")
        for string, indices in zip(cmap.strings, out.tolist()):
            writer.writerow([string, *indices])
