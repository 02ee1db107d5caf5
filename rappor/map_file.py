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
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ._excerpt import excerpt
from ._io import MAX_LINE_BYTES, PathLike, atomic_output, display_name, iter_text_lines
from .design import CandidateMap, _map_from_bit_tables
from .exceptions import InvalidParameterError, ReportFormatError
from .params import Params

if TYPE_CHECKING:
    import scipy.sparse as sp

__all__ = ["read_map", "write_map"]


def _bad_index_message(cells: list[str], params: Params) -> str:
    """Describe the first index cell of a row that is not a digit string."""
    k, h = params.num_bloombits, params.num_hashes
    for pos, cell in enumerate(cells):
        if not (cell.isascii() and cell.isdigit()):
            cohort, hash_no = divmod(pos, h)
            return (f"expected a positive integer row index (cohort {cohort}, hash {hash_no}: cohort*k + bit + 1 "
                    f"with k = {k}) in column {pos + 2}, found {excerpt(cell)}")
    return "expected integer row indices"  # pragma: no cover - called only with a bad cell


def _parse_row_csv(text: str, lineno: int, name: str, params: Params) -> tuple[str, list[str]]:
    """Split a row with the csv module and check its cells (the general, slower path)."""
    h, m = params.num_hashes, params.num_cohorts
    width = h * m
    try:
        cells = next(csv.reader([text]))
    except (csv.Error, StopIteration) as exc:
        raise ReportFormatError(f"expected a CSV row, found {excerpt(text)} ({exc})", path=name, line=lineno) from None
    if len(cells) != width + 1:
        msg = (f"expected a candidate and h * m = {width} row indices (h = {h}, m = {m}), "
               f"found {len(cells) - 1} indices")
        raise ReportFormatError(msg, path=name, line=lineno)
    digits = cells[1:]
    joined = "".join(digits)
    if not (joined.isascii() and joined.isdigit() and all(digits)):
        raise ReportFormatError(_bad_index_message(digits, params), path=name, line=lineno)
    return cells[0], digits


def _split_row(text: str, width: int) -> tuple[str, str] | None:
    """``(candidate, "i,j,...")`` of a well-formed row without quotes, else None.

    The common case, checked with string methods only (no per-cell Python work): no
    quote or carriage return (those rows take the csv path), ``width`` cells after the
    candidate, all of them non-empty ASCII digit strings.
    """
    if '"' in text or "\r" in text:
        return None
    cut = text.find(",")
    if cut < 0:
        return None
    indices = text[cut + 1:]
    if (indices.count(",") != width - 1 or indices.startswith(",") or indices.endswith(",") or ",," in indices):
        return None
    bare = indices.replace(",", "")
    if not (bare.isascii() and bare.isdigit()):
        return None
    return text[:cut], indices


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

    Notes
    -----
    Rows without quotes are split with string methods and all indices are parsed at
    once by numpy (about 3 times faster than the csv module on 100,000 candidates and
    128 cohorts); quoted rows, and any row that fails the quick checks, go through the
    csv module, which also words the error.
    """
    name = display_name(path)
    k, h, m = params.num_bloombits, params.num_hashes, params.num_cohorts
    width = h * m
    strings: list[str] = []
    first_line: dict[str, int] = {}
    line_numbers = array.array("q")
    parts: list[str] = []
    for lineno, text in iter_text_lines(path, what="a map file", max_line_bytes=MAX_LINE_BYTES + 24 * width):
        if not text.strip():
            continue
        split = _split_row(text, width)
        if split is None:
            string, digits = _parse_row_csv(text, lineno, name, params)
            indices = ",".join(digits)
        else:
            string, indices = split
        if string in first_line:
            msg = f"expected distinct candidates, found {excerpt(string)} again (first on line {first_line[string]})"
            raise ReportFormatError(msg, path=name, line=lineno)
        first_line[string] = lineno
        strings.append(string)
        line_numbers.append(lineno)
        parts.append(indices)
    if not strings:
        raise ReportFormatError("expected at least one candidate row, found an empty file", path=name)

    # Digits only, so the parse cannot fail; an index beyond int64 saturates (and is out of range).
    idx = np.fromstring(",".join(parts), dtype=np.int64, sep=",").reshape(len(strings), m, h)
    low = (np.arange(m, dtype=np.int64) * k + 1)[None, :, None]
    bad = (idx < low) | (idx > low + (k - 1))
    if bad.any():
        s, c, j = (int(v) for v in np.argwhere(bad)[0])
        value = int(parts[s].split(",")[c * h + j])  # the text itself (a saturated parse would not say it)
        if not 1 <= value <= m * k:
            msg = f"expected row indices in [1, m * k] = [1, {m * k}], found {value} (cohort {c}, hash {j})"
        else:
            msg = (f"expected the indices of cohort {c} in [{c * k + 1}, {(c + 1) * k}] (cohort*k + bit + 1 with "
                   f"k = {k}), found {value} for hash {j}; was the map made with other parameters?")
        raise ReportFormatError(msg, path=name, line=int(line_numbers[s]))
    del parts
    idx -= low  # the bit within the cohort, in [0, k)
    block = max(1, 1 << 20 // width)  # bounds the temporaries of the conversion
    return _map_from_bit_tables(params, tuple(strings), (idx[i:i + block] for i in range(0, len(idx), block)))


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
    import scipy.sparse as sp  # lazy: keeps `import rappor` fast

    matrix = sp.csc_matrix(cmap.matrix)
    if not matrix.has_sorted_indices:
        matrix = matrix.copy()
        matrix.sort_indices()
    # Rows are formatted by hand (the csv module costs a call per cell): numbers through a
    # lookup table; the candidate quoted as csv.writer's QUOTE_MINIMAL would quote it.
    # A block of candidates at a time, so memory stays small on large maps.
    text_of = [str(i) for i in range(params.num_cohorts * params.num_bloombits + 1)].__getitem__
    with atomic_output(path) as fh:
        for start in range(0, len(cmap), _WRITE_BLOCK):
            stop = min(start + _WRITE_BLOCK, len(cmap))
            table = _positions(matrix, start, stop, params, cmap.strings).tolist()
            fh.write("".join(f"{_csv_field(string)},{','.join(map(text_of, indices))}\n"
                             for string, indices in zip(cmap.strings[start:stop], table)))


def _positions(matrix: sp.csc_matrix, start: int, stop: int, params: Params, strings: tuple[str, ...]) -> npt.NDArray[np.int64]:
    """The ``map.csv`` cells of candidates ``start:stop``: shape ``(stop - start, m * h)``.

    For cohort ``c`` and hash slot ``i``, the 1-based row of the ``i``-th set bit of that
    cohort, in increasing order, the last one repeated when fewer than ``h`` are set.
    """
    k, h, m = params.num_bloombits, params.num_hashes, params.num_cohorts
    lo, hi = int(matrix.indptr[start]), int(matrix.indptr[stop])
    rows = matrix.indices[lo:hi].astype(np.int64)
    cols = np.repeat(np.arange(stop - start, dtype=np.int64), np.diff(matrix.indptr[start:stop + 1]))
    group = cols * m + rows // k  # nondecreasing: columns in order, rows sorted within each
    per_group = np.bincount(group, minlength=(stop - start) * m)
    if len(per_group) and (per_group.min() < 1 or per_group.max() > h):
        g = int(np.argmax((per_group < 1) | (per_group > h)))
        msg = (f"The 'cmap' parameter of write_map must set between 1 and h = {h} bits per cohort for every "
               f"candidate. Got {int(per_group[g])} for {strings[start + g // m]!r} in cohort {g % m} instead.")
        raise InvalidParameterError(msg)
    first = np.cumsum(per_group) - per_group  # where each (candidate, cohort) group starts
    rank = np.arange(group.size) - first[group]
    out = np.full(((stop - start) * m, h), -1, dtype=np.int64)
    out[group, rank] = rows + 1
    for j in range(1, h):
        out[:, j] = np.where(out[:, j] < 0, out[:, j - 1], out[:, j])
    return out.reshape(stop - start, m * h)


#: Candidates formatted per write by :func:`write_map`.
_WRITE_BLOCK = 4096


def _csv_field(text: str) -> str:
    """``text`` as csv.writer writes a field of a multi-field row (``QUOTE_MINIMAL``, ``\\n`` ends)."""
    if "," in text or '"' in text or "\n" in text:
        return '"' + text.replace('"', '""') + '"'
    return text
