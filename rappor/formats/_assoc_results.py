"""An association analysis's table as CSV (``rappor decode-assoc -o``, ``simulate-assoc``'s ``assoc-results.csv``).

Two layouts:

``"rappor"``
    The columns of :meth:`rappor.analysis.association.AssociationResult.table`: one column
    per variable, ``proportion``, ``std_error``, ``prop_low_95``, ``prop_high_95`` and, for
    two variables, the conditional shares and their standard errors.
``"google"``
    google/rappor's ``assoc-results.csv`` (``bin/decode_assoc.R``): the *last* variable
    first, then the others in reverse order, then ``proportion`` -- every text quoted, the
    last variable varying fastest -- followed by our ``std_error``, ``prop_low_95`` and
    ``prop_high_95``.

A category that could start a spreadsheet formula gets a leading ``'``
(:func:`rappor._util.csv_text.spreadsheet_text`).  Numbers have 15 significant digits; a
missing value is ``NA`` and an infinite one ``Inf`` or ``-Inf``, as R's ``write.csv``
writes them.
"""

from __future__ import annotations

import math
from typing import Literal

from .._util.csv_text import csv_field, spreadsheet_text
from .._util.outputs import atomic_output
from .._util.paths import PathLike
from .._util.validation import check_options
from ..analysis.association import AssociationResult

__all__ = ["ASSOC_RESULT_COLUMNS", "write_assoc_results"]

#: The columns after the variables' in both layouts (``"rappor"`` may add conditional shares).
ASSOC_RESULT_COLUMNS = ("proportion", "std_error", "prop_low_95", "prop_high_95")


def write_assoc_results(result: AssociationResult, path: PathLike | None, *,
                        layout: Literal["rappor", "google"] = "rappor") -> None:
    """Write the table of ``result`` as CSV, atomically (``"-"`` for standard output).

    Parameters
    ----------
    result : AssociationResult
    path : str, os.PathLike or "-"
    layout : {"rappor", "google"}, default="rappor"
        The columns (see the module's documentation).
    """
    check_options(layout, "layout", "write_assoc_results", ("rappor", "google"))
    table = result.table()
    names = list(result.variables)
    with atomic_output(path) as out:
        if layout == "google":
            header = list(reversed(names)) + list(ASSOC_RESULT_COLUMNS)
            out.write(",".join(_csv_text(h, always=True) for h in header) + "\n")
            for row in table:
                cells = [_csv_text(str(row[n]), always=True) for n in reversed(names)]
                cells += [_csv_number(float(row[c])) for c in ASSOC_RESULT_COLUMNS]
                out.write(",".join(cells) + "\n")
            return
        columns = list(table.dtype.names or ())
        out.write(",".join(_csv_text(c) for c in columns) + "\n")
        for row in table:
            cells = [_csv_text(str(row[n])) for n in names]
            cells += [_csv_number(float(row[c])) for c in columns[len(names):]]
            out.write(",".join(cells) + "\n")


def _csv_text(text: str, *, always: bool = False) -> str:
    """:func:`rappor._util.csv_text.csv_text_field` (a leading formula character neutralised), or
    always quoted (R's ``write.csv``)."""
    text = spreadsheet_text(text)
    return '"' + text.replace('"', '""') + '"' if always else csv_field(text)


def _csv_number(value: float) -> str:
    if math.isnan(value):
        return "NA"
    if math.isinf(value):
        return "Inf" if value > 0 else "-Inf"
    return f"{value:.15g}"
