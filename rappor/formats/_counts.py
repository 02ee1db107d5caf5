"""google/rappor's ``counts.csv``: :func:`read_counts` and :func:`write_counts` own the format.

No header; one row per cohort, ``num_cohorts`` rows; row ``c`` holds ``num_bloombits + 1``
integers: the number of reports of cohort ``c``, then the number of them with bit 0,
bit 1, ..., bit ``k - 1`` set (the table of :class:`~rappor.collect.Aggregate`).
"""

from __future__ import annotations

from .._util.excerpt import excerpt
from .._util.inputs import iter_text_lines, MAX_LINE_BYTES
from .._util.outputs import atomic_output
from .._util.paths import display_name, PathLike
from ..collect._aggregate import INT64_MAX, Aggregate, zero_counts
from ..exceptions import ReportFormatError
from ..params import Params

__all__ = ["read_counts", "write_counts"]


def _parse_count(text: str, name: str, lineno: int, column: int) -> int:
    cell = text.strip()
    if not cell.isascii() or not cell.isdigit():
        what = "a negative number" if cell.startswith("-") and cell[1:].isdigit() else excerpt(cell)
        msg = f"expected a non-negative integer count in column {column}, found {what}"
        raise ReportFormatError(msg, path=name, line=lineno)
    # More than 19 significant digits is too large; int() of thousands of digits would even fail.
    value = int(cell) if len(cell.lstrip("0")) <= len(str(INT64_MAX)) else INT64_MAX + 1
    if value > INT64_MAX:
        msg = f"expected a count of at most 2**63 - 1 in column {column}, found {excerpt(cell)}"
        raise ReportFormatError(msg, path=name, line=lineno)
    return value


def read_counts(path: PathLike, params: Params, *, rows: str | None = None) -> Aggregate:
    """Read a google/rappor ``counts.csv``.

    The file has no header and ``num_cohorts`` rows; row ``i`` is cohort ``i`` and holds
    ``num_bloombits + 1`` integers: the number of reports of the cohort, then the
    number of ones of bit 0, bit 1, ..., bit ``k - 1``.  Blank lines, a UTF-8
    byte-order mark, CRLF line endings and spaces around numbers are accepted.

    Parameters
    ----------
    path : str or os.PathLike
        The file, or ``"-"`` for standard input.
    params : Params
    rows : str or None, default=None
        What the ``num_cohorts`` rows stand for, in the message about a file with another
        number of rows (discovery counts: "slots x cohorts, from --max-length ..."); the
        default says "one per cohort, m = M".  Such a file is read to its end, so the
        message gives the number of rows it has.

    Returns
    -------
    Aggregate

    Raises
    ------
    ReportFormatError
        For a row of the wrong width, the wrong number of rows, a count that is not a
        non-negative integer, a bit count larger than the cohort's report count, or
        report counts whose total exceeds ``2**63 - 1``; the message names the file and
        line.
    RapporIOError
        If the file cannot be opened or read.
    InsufficientMemoryError
        If the ``(m, k + 1)`` table cannot fit in memory (checked before reading).
    """
    name = display_name(path)
    m, k = params.num_cohorts, params.num_bloombits
    counts = zero_counts(params)
    total = 0
    row = 0
    last_line = 0
    longest = max(MAX_LINE_BYTES, 24 * (k + 1))  # k + 1 numbers of up to 20 digits, with some spaces
    lines = iter_text_lines(path, what="a counts file", max_line_bytes=longest)
    for lineno, text in lines:
        last_line = lineno
        if not text.strip():
            continue
        if row >= m:
            row += 1
            break
        cells = text.split(",")
        if len(cells) != k + 1:
            msg = (f"expected {k + 1} comma-separated counts (reports, then bits 0..{k - 1} with k = {k}), "
                   f"found {len(cells)}")
            raise ReportFormatError(msg, path=name, line=lineno)
        values = [_parse_count(cell, name, lineno, col) for col, cell in enumerate(cells, start=1)]
        bad = next((j for j in range(k) if values[1 + j] > values[0]), None)
        if bad is not None:
            msg = (f"expected bit counts of at most the cohort's {values[0]} reports, found {values[1 + bad]} "
                   f"for bit {bad}")
            raise ReportFormatError(msg, path=name, line=lineno)
        total += values[0]
        if total > INT64_MAX:
            msg = (f"expected at most 2**63 - 1 reports in all cohorts together (the int64 range), found {total} "
                   f"up to this row")
            raise ReportFormatError(msg, path=name, line=lineno)
        counts[row] = values
        row += 1
    if row == 0:
        raise ReportFormatError(f"expected {m} rows of counts (one per cohort), found an empty file", path=name)
    if row > m:  # count the rest (no parsing): the message says how many rows the file has
        first_extra = last_line
        row += sum(1 for _, text in lines if text.strip())
        msg = f"expected {m} rows ({rows or f'one per cohort, m = {m}'}), found {row}"
        raise ReportFormatError(msg, path=name, line=first_extra)
    if row < m:
        msg = f"expected {m} rows ({rows or f'one per cohort, m = {m}'}), found {row}"
        raise ReportFormatError(msg, path=name, line=last_line)
    return Aggregate(params=params, counts=counts)


def write_counts(aggregate: Aggregate, path: PathLike) -> None:
    """Write ``aggregate`` as a google/rappor ``counts.csv``, atomically (``"-"`` for stdout).

    See :func:`read_counts` for the layout.
    """
    with atomic_output(path) as fh:
        for row in aggregate.counts.tolist():
            fh.write(",".join(map(str, row)) + "\n")
