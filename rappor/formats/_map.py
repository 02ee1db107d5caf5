"""google/rappor's ``map.csv``, the candidate map as text: :func:`read_map` and :func:`write_map` own the format.

A row is a candidate, then its Bloom rows as 1-based indices ``cohort * k + bit + 1``
of the stacked ``(m * k)`` Bloom vector: a *set* of indices, each in the block
``[c * k + 1, (c + 1) * k]`` of exactly one cohort ``c = (index - 1) // k``, between 1
and ``h`` distinct ones per cohort.  Rows have ``h * m`` index fields; two layouts of
that set are in use and both are read:

* positional (google/rappor ``hash_candidates.py``, and :func:`write_map`): for cohort
  ``0 .. m-1`` and hash ``0 .. h-1`` one index, a repeated index where hashes coincide;
* sorted (the map shipped with google/rappor's ``apps/rappor-analysis``): the distinct
  indices in ascending order, then one empty field for each index saved by a
  coincidence (``"V_8",64,226,...,1018,`` holds 15 indices for h * m = 16).

Any order is accepted; repeats collapse; empty fields may only close a row.  The
candidate is CSV-quoted when it holds a comma, a quote or a line break (a quoted field
may span lines, as in any CSV file).

The map, not our hash function, defines the design matrix, so maps that google/rappor
wrote with its MD5 hashing are read exactly like maps made by
:func:`rappor.collect.hash_candidates`.
"""

from __future__ import annotations

import array
import csv
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO, TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from .._util.excerpt import EXCERPT_CHARS, excerpt
from .._util.csv_text import restore_text, spreadsheet_text
from .._util.inputs import decode_line, MAX_LINE_BYTES, open_input_binary
from .._util.outputs import atomic_output
from .._util.paths import display_name, PathLike
from .._util.keyfile import looks_like_key_file, not_a_key_file_error
from .._util.lazy import lazy_module
from .._util.memory import check_design
from ..collect._design import CandidateMap, _map_from_bit_tables
from ..exceptions import InvalidParameterError, ReportFormatError
from ..params import Params

if TYPE_CHECKING:
    import scipy.sparse as sp
else:  # imported on first use: keeps `import rappor` light
    sp = lazy_module("scipy.sparse")

__all__ = ["read_map", "write_map", "write_map_positions"]


def _bad_index_message(cells: list[str], params: Params) -> str:
    """Describe the first index cell of a row that is not a digit string."""
    k, h = params.num_bloombits, params.num_hashes
    for pos, cell in enumerate(cells):
        if not (cell.isascii() and cell.isdigit()):
            cohort, hash_no = divmod(pos, h)
            return (f"expected a positive integer row index (cohort {cohort}, hash {hash_no}: cohort*k + bit + 1 "
                    f"with k = {k}) in column {pos + 2}, found {excerpt(cell)}")
    return "expected integer row indices"  # pragma: no cover - called only with a bad cell


class _Lines:
    """The decoded lines of a file, line endings kept, with one line of push-back.

    The fast path and :func:`csv.reader` read from this one stream: the reader pulls
    further lines while a quoted field is open, so a candidate holding a line break
    reads back whole and line numbers stay those of the file.
    """

    def __init__(self, fh: IO[bytes], path: PathLike, max_line_bytes: int) -> None:
        self._fh = fh
        self._max = max_line_bytes
        self._path = path
        self._pending: str | None = None
        self.lineno = 0
        self.exhausted = False

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        if self._pending is not None:
            text, self._pending = self._pending, None
            return text
        try:
            raw = self._fh.readline(self._max + 1)  # a bounded read, even of /dev/zero
            if not raw:
                raise StopIteration
        except StopIteration:
            self.exhausted = True
            raise
        self.lineno += 1
        if len(raw) > self._max:
            msg = f"expected a line of at most {self._max:,} bytes, found a longer one"
            raise ReportFormatError(msg, path=display_name(self._path), line=self.lineno)
        if self.lineno == 1 and looks_like_key_file(raw):  # a map row needs commas: never a key
            raise not_a_key_file_error(display_name(self._path), "a map file")
        ending = "\r\n" if raw.endswith(b"\r\n") else "\n" if raw.endswith(b"\n") else \
            "\r" if raw.endswith(b"\r") else ""
        return decode_line(raw, self._path, self.lineno) + ending

    def push_back(self, text: str) -> None:
        self._pending = text


def _csv_row(reader: Iterator[list[str]], lines: _Lines, lineno: int, text: str, name: str,
             params: Params) -> tuple[str, list[str]]:
    """The next row through the csv module: the candidate and its non-empty index cells.

    Checks the syntax only: ``h * m`` fields after the candidate, digit strings, empty
    fields only at the end.  Where the indices lie is checked later, for every row at once.
    """
    h, m = params.num_hashes, params.num_cohorts
    width = h * m
    try:
        cells = next(reader)
    except (csv.Error, StopIteration) as exc:
        raise ReportFormatError(f"expected a CSV row, found {excerpt(text)} ({exc})", path=name, line=lineno) from None
    if lines.exhausted:  # the reader asked for more lines than the file has: a quote left open
        msg = "expected a closing quote '\"' before the end of the file, for the quoted field opened on this line"
        raise ReportFormatError(msg, path=name, line=lineno)
    if len(cells) != width + 1:
        msg = (f"expected a candidate and h * m = {width} row indices (h = {h}, m = {m}), "
               f"found {len(cells) - 1} indices")
        raise ReportFormatError(msg, path=name, line=lineno)
    digits = cells[1:]
    while digits and not digits[-1]:  # empty fields close rows where hashes coincide
        digits.pop()
    joined = "".join(digits)
    if digits and not (joined.isascii() and joined.isdigit() and all(digits)):
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


def _fill_positions(values: npt.NDArray[np.int64], per_group: npt.NDArray[np.int64], h: int) -> npt.NDArray[np.int64]:
    """``(G, h)`` table of sorted ``values`` grouped by ``per_group`` counts (each in ``[1, h]``),
    the last value of a group repeated in its unused slots."""
    first = np.cumsum(per_group) - per_group
    take = first[:, None] + np.minimum(np.arange(h, dtype=np.int64)[None, :], per_group[:, None] - 1)
    out: npt.NDArray[np.int64] = values[take]
    return out


def _set_to_positions(cells: list[str], params: Params) -> npt.NDArray[np.int64] | str:
    """The ``(m, h)`` positional layout of a row read as a set of indices, or what is wrong with it.

    Each index must lie in ``[1, m * k]`` (its cohort is ``(index - 1) // k``) and every
    cohort must get between 1 and ``h`` distinct indices.
    """
    k, h, m = params.num_bloombits, params.num_hashes, params.num_cohorts
    for column, cell in enumerate(cells, start=2):
        # m * k <= 2**64 has at most 20 digits; int() of thousands of digits would even fail.
        if len(cell.lstrip("0")) > 20 or not 1 <= int(cell) <= m * k:
            shown = cell if len(cell) <= EXCERPT_CHARS else excerpt(cell)
            return (f"expected row indices in [1, m * k] = [1, {m * k}], found {shown} in column {column}, outside "
                    f"every cohort (the cohort of an index is (index - 1) // k with k = {k}); was the map made "
                    f"with other parameters?")
    rows = np.unique(np.array([int(cell) for cell in cells], dtype=np.int64))
    cohorts = (rows - 1) // k
    per_cohort = np.bincount(cohorts, minlength=m)
    if per_cohort.min() < 1 or per_cohort.max() > h:
        c = int(np.argmax((per_cohort < 1) | (per_cohort > h)))
        found = "none" if per_cohort[c] == 0 else \
            f"{int(per_cohort[c])} ({', '.join(map(str, rows[cohorts == c][:h + 1].tolist()))}...)"
        return (f"expected 1 to h = {h} distinct indices of cohort {c} in [{c * k + 1}, {(c + 1) * k}] "
                f"(cohort*k + bit + 1 with k = {k}), found {found}; was the map made with other parameters?")
    return _fill_positions(rows, per_cohort, h)


#: A row that the positional check always sends to :func:`_set_to_positions` (index 0).
_PLACEHOLDER = "0"


def read_map(path: PathLike, params: Params) -> CandidateMap:
    """Read a google/rappor ``map.csv`` into a :class:`~rappor.collect.CandidateMap`.

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
        For an empty file, a row without ``h * m`` index fields, an index that is not
        an integer, an empty field before the last index, an index outside ``[1, m * k]``
        (outside every cohort), a cohort with no index or more than ``h`` distinct ones
        (a map made with other parameters), a quote left open, or a repeated candidate;
        the message names the file and line.
    InsufficientMemoryError
        If the candidate map cannot fit in memory (checked after reading the rows,
        before building it).

    Notes
    -----
    Rows in the positional layout without quotes are split with string methods and all
    indices are parsed at once by numpy: 100,000 candidates at k=128 m=128 h=2 take 2.2-2.3
    CPU-s, 3.45 with every row split by the csv module (1.5-1.6x; ``python
    benchmarks/hand_written.py``, on a quiet 2-core machine, 2026-11-24; ``tests/test_fuzz.py`` checks that both give the same
    map or the same error).  Quoted rows, rows with empty fields and rows
    that fail the quick checks go through the csv module, which also words the error;
    rows whose indices are not in positional order are read as sets.
    """
    name = display_name(path)
    k, h, m = params.num_bloombits, params.num_hashes, params.num_cohorts
    width = h * m
    strings: list[str] = []
    first_line: dict[str, int] = {}
    line_numbers = array.array("q")
    parts: list[str] = []
    irregular: dict[int, list[str]] = {}  # row -> index cells of rows with coinciding hashes
    placeholder = ",".join([_PLACEHOLDER] * width)
    with open_input_binary(path) as fh:
        lines = _Lines(fh, path, MAX_LINE_BYTES + 24 * width)  # up to 20 digits and a comma per index
        reader = csv.reader(lines)
        for text in lines:
            lineno = lines.lineno
            body = text.removesuffix("\n").removesuffix("\r")
            if not body.strip():
                continue
            split = _split_row(body, width)
            if split is None:
                lines.push_back(text)
                string, digits = _csv_row(reader, lines, lineno, body, name, params)
                if len(digits) == width:
                    indices = ",".join(digits)
                else:
                    irregular[len(strings)] = digits
                    indices = placeholder
            else:
                string, indices = split
            string = restore_text(string)
            if string in first_line:
                msg = f"expected distinct candidates, found {excerpt(string)} again (first on line {first_line[string]})"
                raise ReportFormatError(msg, path=name, line=lineno)
            first_line[string] = lineno
            strings.append(string)
            line_numbers.append(lineno)
            parts.append(indices)
    if not strings:
        raise ReportFormatError("expected at least one candidate row, found an empty file", path=name)
    block = max(1, (1 << 20) // width)  # candidates per block of the conversion below (bounds its temporaries)
    check_design(params, len(strings), block=block, extra=16 * len(strings) * width)  # + the int64 table, its text

    # Digits only, so the parse cannot fail; an index beyond int64 saturates (and is out of range).
    idx = np.fromstring(",".join(parts), dtype=np.int64, sep=",").reshape(len(strings), m, h)
    low = (np.arange(m, dtype=np.int64) * k + 1)[None, :, None]
    positional = ((idx >= low) & (idx <= low + (k - 1))).all(axis=(1, 2))
    # Rows not in the positional layout are read as sets of indices, in file order (the
    # first bad one is reported); the saturated parse is not used for them.
    for s in sorted(set(np.flatnonzero(~positional).tolist()) | set(irregular)):
        cells = irregular[s] if s in irregular else parts[s].split(",")
        table = _set_to_positions(cells, params)
        if isinstance(table, str):
            raise ReportFormatError(table, path=name, line=int(line_numbers[s]))
        idx[s] = table
    del parts
    idx -= low  # the bit within the cohort, in [0, k)
    return _map_from_bit_tables(params, tuple(strings), (idx[i:i + block] for i in range(0, len(idx), block)))


#: Index cells formatted at a time by :func:`write_map`: bounds its arrays and strings.
_WRITE_CELLS = 1 << 20


def write_map(cmap: CandidateMap | Iterable[CandidateMap], path: PathLike) -> None:
    """Write a :class:`~rappor.collect.CandidateMap` as a google/rappor ``map.csv``, atomically.

    The positional layout: each cohort's positions in increasing order; a cohort where
    fewer than ``h`` positions are set (hashes that coincide) repeats its last position,
    as google/rappor does for coinciding hashes.

    Parameters
    ----------
    cmap : CandidateMap or iterable of CandidateMap
        The map, or consecutive blocks of one (same parameters, distinct candidates),
        written one after the other as they come: ``rappor hash-candidates`` hashes and
        writes a block of candidates at a time, so its memory does not grow with the map.
    path : str or os.PathLike
        Target file, or ``"-"`` for standard output.

    Raises
    ------
    InvalidParameterError
        If some candidate sets no bit or more than ``h`` bits in a cohort, which the
        format cannot express, or if blocks have other parameters than the first.

    Notes
    -----
    Time and memory follow the output (``h * m`` indices per candidate), not ``m * k``:
    at most :data:`_WRITE_CELLS` indices are formatted at a time (a block of candidates,
    or a run of cohorts of one candidate when ``h * m`` is larger), and the text of
    every position is tabulated only when there are fewer positions than indices to write.
    """
    blocks = [cmap] if isinstance(cmap, CandidateMap) else cmap
    with atomic_output(path) as fh:
        first: Params | None = None
        for block in blocks:
            if first is None:
                first = block.params
            elif block.params != first:
                msg = (f"The 'cmap' parameter of write_map must hold blocks of one map, with the same parameters. "
                       f"Got {block.params} after {first} instead.")
                raise InvalidParameterError(msg)
            _write_rows(fh, block)


def _write_rows(fh: IO[str], cmap: CandidateMap) -> None:
    """The rows of ``cmap`` in ``map.csv`` form (see :func:`write_map`), written to ``fh``."""
    params = cmap.params
    k, h, m = params.num_bloombits, params.num_hashes, params.num_cohorts

    matrix = sp.csc_matrix(cmap.matrix)
    if not matrix.has_sorted_indices:
        matrix = matrix.copy()
        matrix.sort_indices()
    width, n = m * h, len(cmap)
    if width > _WRITE_CELLS:
        # Wide rows: one candidate at a time, a run of cohorts per write.
        step = max(1, _WRITE_CELLS // h)
        for s in range(n):
            fh.write(_csv_field(cmap.strings[s]))
            for c0 in range(0, m, step):
                cells = _positions(matrix, s, s + 1, params, cmap.strings, cohorts=(c0, min(m, c0 + step)))
                fh.write("," + ",".join(map(str, cells.ravel().tolist())))
            fh.write("\n")
        return
    block = max(1, _WRITE_CELLS // width)
    row_text = _row_formatter(m * k, width, n)
    for start in range(0, n, block):
        stop = min(start + block, n)
        table = _positions(matrix, start, stop, params, cmap.strings).reshape(stop - start, width)
        _write_table(fh, cmap.strings[start:stop], table, row_text, "\n")


def _row_formatter(positions: int, width: int, n: int) -> Callable[[list[int]], str]:
    """A function writing a row of ``width`` indices in ``[1, positions]`` as comma-separated text.

    Rows are formatted by hand (the csv module costs a call per cell): through a table of
    every index's text when there are fewer indices than cells to write, else ``%d``.
    """
    if positions < min(n * width, _WRITE_CELLS):
        text_of = [str(i) for i in range(positions + 1)].__getitem__

        def row_text(row: list[int]) -> str:
            return ",".join(map(text_of, row))
        return row_text
    row_format = ",".join(["%d"] * width)

    def row_format_text(row: list[int]) -> str:
        return row_format % tuple(row)
    return row_format_text


def _write_table(fh: IO[str], strings: Sequence[str], table: npt.NDArray[np.int64],
                 row_text: Callable[[list[int]], str], line_ending: str) -> None:
    """Write one row per string: the string quoted as csv.writer's QUOTE_MINIMAL would, then its cells."""
    fh.write("".join(f"{_csv_field(string)},{row_text(row)}{line_ending}"
                     for string, row in zip(strings, table.tolist())))


def write_map_positions(blocks: Iterable[tuple[Sequence[str], npt.NDArray[np.integer]]], params: Params,
                        path: PathLike, *, line_ending: str = "\r\n") -> None:
    """Write ``map.csv`` from Bloom bit tables in hash order, as google/rappor's ``hash_candidates.py``, atomically.

    Each row is the candidate, then for cohort ``0 .. m-1`` and hash ``0 .. h-1`` the
    1-based row ``cohort * k + bit + 1`` of that hash's bit, in hash order (not sorted;
    coinciding hashes repeat the index), with Python's ``csv.writer`` defaults: fields
    quoted only when needed and CRLF line ends.  For candidates without leading or
    trailing white space (``hash_candidates.py`` strips each line) the file is
    google/rappor's byte for byte.

    Parameters
    ----------
    blocks : iterable of (sequence of str, ndarray of shape (S, num_cohorts, num_hashes))
        Consecutive blocks of candidates and their bits (in ``[0, k)``), e.g. from
        :func:`rappor.compat.google_bloom_bits_table`; written as they come.
    params : Params
    path : str or os.PathLike
        Target file, or ``"-"`` for standard output.
    line_ending : str, default="\\r\\n"
        ``csv.writer``'s default line terminator.

    Raises
    ------
    InvalidParameterError
        If a table does not have the shape ``(len(strings), m, h)`` or holds a bit outside ``[0, k)``.
    """
    k, h, m = params.num_bloombits, params.num_hashes, params.num_cohorts
    width = m * h
    offsets = (np.arange(m, dtype=np.int64) * k + 1)[None, :, None]
    with atomic_output(path) as fh:
        for strings, bits in blocks:
            table = np.asarray(bits, dtype=np.int64)
            if table.shape != (len(strings), m, h) or (table.size and (table.min() < 0 or table.max() >= k)):
                msg = (f"The 'blocks' parameter of write_map_positions must hold tables of shape "
                       f"({len(strings)}, {m}, {h}) with bits in [0, {k}). Got shape {table.shape} instead.")
                raise InvalidParameterError(msg)
            rows = (table + offsets).reshape(len(strings), width)
            row_text = _row_formatter(m * k, width, len(strings))
            step = max(1, _WRITE_CELLS // width)
            for start in range(0, len(strings), step):
                _write_table(fh, strings[start:start + step], rows[start:start + step], row_text, line_ending)


def _positions(matrix: sp.csc_matrix, start: int, stop: int, params: Params, strings: tuple[str, ...],
               cohorts: tuple[int, int] | None = None) -> npt.NDArray[np.int64]:
    """The ``map.csv`` cells of candidates ``start:stop``: shape ``((stop - start) * span, h)``.

    For cohort ``c`` (of ``cohorts = (c0, c1)``, a run of ``span`` cohorts of one
    candidate; all ``m`` by default) and hash slot ``i``, the 1-based row of the
    ``i``-th set bit of that cohort, in increasing order, the last one repeated when
    fewer than ``h`` are set.
    """
    k, h, m = params.num_bloombits, params.num_hashes, params.num_cohorts
    lo, hi = int(matrix.indptr[start]), int(matrix.indptr[stop])
    if cohorts is None:
        c0, c1 = 0, m
        rows = matrix.indices[lo:hi].astype(np.int64)
        cols = np.repeat(np.arange(stop - start, dtype=np.int64), np.diff(matrix.indptr[start:stop + 1]))
    else:  # one candidate: its rows are sorted, so the run of cohorts is a slice
        c0, c1 = cohorts
        column = matrix.indices[lo:hi]
        a, b = (int(i) for i in np.searchsorted(column, [c0 * k, c1 * k]))
        rows = column[a:b].astype(np.int64)
        cols = np.zeros(b - a, dtype=np.int64)
    span = c1 - c0
    group = cols * span + rows // k - c0  # nondecreasing: columns in order, rows sorted within each
    per_group = np.bincount(group, minlength=(stop - start) * span)
    if len(per_group) and (per_group.min() < 1 or per_group.max() > h):
        g = int(np.argmax((per_group < 1) | (per_group > h)))
        msg = (f"The 'cmap' parameter of write_map must set between 1 and h = {h} bits per cohort for every "
               f"candidate. Got {int(per_group[g])} for {strings[start + g // span]!r} in cohort {c0 + g % span} "
               f"instead.")
        raise InvalidParameterError(msg)
    return _fill_positions(rows + 1, per_group, h)


def _csv_field(text: str) -> str:
    """``text`` as csv.writer writes a field of a multi-field row (``QUOTE_MINIMAL``, ``\\n`` ends).

    A leading formula character is neutralised first (:func:`rappor._util.csv_text.spreadsheet_text`,
    undone by :func:`read_map`).  Also quoted: a leading byte-order mark, which a reader
    would otherwise drop from the first line of the file.
    """
    text = spreadsheet_text(text)
    if "," in text or '"' in text or "\n" in text or "\r" in text or text.startswith("\ufeff"):
        return '"' + text.replace('"', '""') + '"'
    return text
