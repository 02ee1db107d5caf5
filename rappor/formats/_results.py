"""google/rappor's ``results.csv``: a decode's estimates, one row per string (``rappor decode -o``).

Columns: google/rappor's ``string, estimate, std_error, proportion, prop_std_error,
prop_low_95, prop_high_95`` (``analysis/R/decode.R``) plus ``pvalue`` (unadjusted) and,
unless only the detected strings are written, ``detected`` (``true``/``false``).  A string
that could start a spreadsheet formula gets a leading ``'`` (:func:`rappor._util.csv_text.spreadsheet_text`),
which :func:`read_results` removes.  Numbers are
Python's shortest round-trip repr (whole numbers without a decimal point); a missing value
is ``NA`` and an infinite one ``Inf`` or ``-Inf``, as R's ``write.csv`` writes them (R's
``read.csv`` and Python's ``float`` read both back).
"""

from __future__ import annotations

import csv
import math
from typing import Literal

import numpy as np
import numpy.typing as npt

from .._util.csv_text import csv_text_field, restore_text
from .._util.excerpt import excerpt
from .._util.inputs import iter_text_lines
from .._util.outputs import atomic_output
from .._util.paths import PathLike, display_name
from ..analysis.decoder import DecodeResult
from ..exceptions import ReportFormatError

__all__ = ["RESULTS_COLUMNS", "read_results", "write_results"]

#: The columns every ``results.csv`` has, in order (``detected`` may follow).
RESULTS_COLUMNS = ("string", "estimate", "std_error", "proportion", "prop_std_error", "prop_low_95",
                   "prop_high_95", "pvalue")


def write_results(result: DecodeResult, path: PathLike | None, all: bool = False, *,  # noqa: A002
                  adjust: Literal["fcr", "none", "selective"] | None = None) -> None:
    """Write ``results.csv`` of ``result`` (atomically; ``"-"`` for standard output).

    Rows are ranked largest estimate first (:meth:`~rappor.DecodeResult.ranking`): with
    ``shares="all"`` (the decoder's default) one row per candidate with a positive share or
    detected, and a ``detected`` column; with ``shares="detected"`` one row per detected
    string (google/rappor's layout).  With ``all=True`` every candidate and the ``detected``
    column.  ``adjust``: the intervals, as in :meth:`~rappor.DecodeResult.table`.
    """
    rows = result.table(adjust=adjust)[result.ranking(all)]
    flag = all or result.shares != "detected"
    names = (*RESULTS_COLUMNS, "detected") if flag else RESULTS_COLUMNS
    with atomic_output(path) as out:
        out.write(",".join(names) + "\n")
        for row in rows:
            cells = [csv_text_field(str(row["string"]))]
            cells += [_csv_float(float(row[name])) for name in RESULTS_COLUMNS[1:]]
            if flag:
                cells.append("true" if row["detected"] else "false")
            out.write(",".join(cells) + "\n")


def read_results(path: PathLike) -> npt.NDArray[np.void]:
    """Read a ``results.csv`` (ours, or google/rappor's without ``pvalue``) as a structured array.

    Returns
    -------
    ndarray
        One record per row, with the file's columns: ``string`` (str), the numbers (float64;
        ``NA`` is nan) and ``detected`` (bool) when the file has it.

    Raises
    ------
    ReportFormatError
        Naming the file and line of a header without google/rappor's columns, a row of
        another length, or a field that is not a number (or ``true``/``false``).
    """
    name = display_name(path)
    header: list[str] | None = None
    rows: list[tuple[object, ...]] = []
    for lineno, text in iter_text_lines(path, what="a results.csv file"):
        if not text.strip():
            continue
        cells = next(csv.reader([text]))
        if header is None:
            header = [c.strip() for c in cells]
            if header[:7] != list(RESULTS_COLUMNS[:7]) or not set(header[7:]) <= {"pvalue", "detected"}:
                msg = f"expected the header {','.join(RESULTS_COLUMNS)}[,detected], found {excerpt(text)}"
                raise ReportFormatError(msg, path=name, line=lineno)
            continue
        if len(cells) != len(header):
            msg = f"expected {len(header)} fields, found {len(cells)}: {excerpt(text)}"
            raise ReportFormatError(msg, path=name, line=lineno)
        row: list[object] = [restore_text(cells[0])]  # the spreadsheet quote of write_results removed
        for column, cell in zip(header[1:], cells[1:]):
            try:
                row.append(_read_cell(column, cell))
            except ValueError:
                msg = f"expected {'true or false' if column == 'detected' else 'a number'} in {column}, found {excerpt(cell)}"
                raise ReportFormatError(msg, path=name, line=lineno) from None
        rows.append(tuple(row))
    if header is None:
        raise ReportFormatError("expected a header line, found an empty file", path=name)
    dtype = [("string", object)] + [(c, bool if c == "detected" else np.float64) for c in header[1:]]
    return np.array(rows, dtype=dtype)


def _read_cell(column: str, cell: str) -> float | bool:
    if column == "detected":
        if cell not in ("true", "false", "TRUE", "FALSE"):
            raise ValueError(cell)
        return cell.lower() == "true"
    return math.nan if cell == "NA" else float(cell)  # float reads "Inf" and "-Inf"


def _csv_float(x: float) -> str:
    """A number as ``results.csv`` writes it: shortest repr, whole numbers bare, ``NA``, ``Inf``, ``-Inf``."""
    if math.isnan(x):
        return "NA"
    if math.isinf(x):
        return "Inf" if x > 0 else "-Inf"
    return repr(x) if x != int(x) or abs(x) >= 1e16 else str(int(x))
