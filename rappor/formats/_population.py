"""Population files: ``string,count`` rows, the truth a simulation draws from (``rappor simulate --population``)."""

from __future__ import annotations

import csv
import math

from .._util.csv_text import restore_text
from .._util.excerpt import excerpt
from .._util.inputs import iter_text_lines
from .._util.paths import PathLike, display_name
from ..exceptions import ReportFormatError
from ..simulation._populations import Population

__all__ = ["read_population"]


def read_population(path: PathLike) -> Population:
    """Read a ``string,count`` CSV (an optional header ``string,count``; counts >= 0).

    Fields may be quoted as in any CSV; an unquoted string may also contain commas
    (everything before the last comma is the string).  A UTF-8 byte-order mark, CRLF endings and blank lines are accepted.

    Raises
    ------
    ReportFormatError
        Naming the file and line of a malformed row, a blank string, a negative count or a repeated string.
    """
    name = display_name(path)
    counts: dict[str, float] = {}
    for lineno, text in iter_text_lines(path, what="a population file"):
        if not text.strip():
            continue
        try:
            cells = next(csv.reader([text]))
        except (csv.Error, StopIteration) as exc:
            msg = f"expected 'string,count', found {excerpt(text)} ({exc})"
            raise ReportFormatError(msg, path=name, line=lineno) from None
        if len(cells) < 2:
            raise ReportFormatError(f"expected 'string,count', found {excerpt(text)}", path=name, line=lineno)
        value, count_text = restore_text(",".join(cells[:-1])), cells[-1]
        if not counts and value.strip().lower() == "string" and count_text.strip().lower() == "count":
            continue
        try:
            count = float(count_text)
        except ValueError:
            msg = f"expected a number after the last comma, found {excerpt(count_text)}"
            raise ReportFormatError(msg, path=name, line=lineno) from None
        if not math.isfinite(count) or count < 0:
            raise ReportFormatError(f"expected a count >= 0, found {excerpt(count_text)}", path=name, line=lineno)
        if not value.strip():  # it could not be a candidate (a candidate list holds non-blank strings)
            raise ReportFormatError(f"expected a non-blank string before the count, found {excerpt(value)}",
                                    path=name, line=lineno)
        if value in counts:
            raise ReportFormatError(f"the string {excerpt(value)} appears twice", path=name, line=lineno)
        counts[value] = count
    if not counts or sum(counts.values()) <= 0:
        raise ReportFormatError("expected at least one row with a positive count", path=name)
    return Population.from_counts(counts, name=f"file {name}")
