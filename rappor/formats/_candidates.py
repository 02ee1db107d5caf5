"""Candidate lists, one string per line: :func:`read_candidates` and :func:`write_candidates` own the format.

A candidate file is UTF-8 text with one candidate per line, exactly as the clients
hash their values (no trimming or case folding; only the line ending is removed).  A
UTF-8 byte-order mark and CRLF line endings are accepted.  Blank lines and repeated
candidates are reported rather than silently kept: a repeated candidate would give the
decoder two identical columns.

Lines end with LF or CRLF only.  Any other carriage return is an error naming its
line: a file with old Mac (CR-only) line endings would otherwise be read as one long
candidate, and a candidate cannot hold a carriage return (:func:`write_candidates`
refuses one, so the file format never needs it; pass such strings to
:func:`rappor.collect.hash_candidates` directly).

A candidate that could start a spreadsheet formula (``=``, ``+``, ``-``, ``@``, tab or
carriage return, after any run of single quotes) is written with a leading single quote
and read back without it (:func:`rappor._util.csv_text.spreadsheet_text`), so the file is safe to
open and every string reads back exactly.

The CSV that ``rappor discover -o`` writes (header :data:`rappor.formats._found.FOUND_HEADER`) is a candidate
list too: its significant values are read, whatever they hold (line breaks, commas,
quotes), so a discovered value never depends on the one-per-line list.  A significant
value that is not UTF-8 (its ``utf8`` column is ``false``) is left out with a warning:
candidates are hashed as UTF-8 text, so no candidate can stand for it.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator

from .._util.excerpt import excerpt
from .._util.csv_text import restore_text, spreadsheet_text
from .._util.inputs import iter_text_lines
from .._util.outputs import atomic_output
from .._util.paths import display_name, PathLike
from ._found import is_found_file, read_found_rows
from ..exceptions import InvalidParameterError, ReportFormatError, RapporWarning

__all__ = ["read_candidates", "write_candidates"]



def read_candidates(path: PathLike, *, allow_duplicates: bool = False) -> list[str]:
    """Read a candidate file, one candidate per line, or the significant values of a discovered values CSV.

    Parameters
    ----------
    path : str or os.PathLike
        The file, or ``"-"`` for standard input.
    allow_duplicates : bool, default=False
        If ``False`` a repeated candidate is an error.  If ``True`` only its first
        occurrence is kept and one :class:`~rappor.exceptions.RapporWarning` lists the
        repeats with their line numbers.

    Returns
    -------
    list of str
        The candidates in file order.

    Raises
    ------
    ReportFormatError
        For an empty file, a blank line, a line that is not UTF-8, a carriage return
        that does not end a CRLF line, or (by default) a repeated candidate; the message
        names the file and line.

    Warns
    -----
    RapporWarning
        When ``allow_duplicates=True`` and repeats were dropped, or when a found.csv holds
        significant values that are not UTF-8 (left out).
    """
    name = display_name(path)
    first_seen: dict[str, int] = {}
    repeats: list[tuple[int, str, int]] = []
    found = is_found_file(path)
    for lineno, text in _found_values(path) if found else _lines(path):
        if "\r" in text and not found:
            msg = ("expected one candidate per line, lines ending in LF or CRLF, found a carriage return inside "
                   f"the line at column {text.index(chr(13)) + 1} (CR line endings? convert them with "
                   "tr '\\r' '\\n'; a candidate cannot hold a carriage return)")
            raise ReportFormatError(msg, path=name, line=lineno)
        if not text.strip() and not found:
            msg = "expected a candidate string, found a blank line" if not text else \
                f"expected a candidate string, found only whitespace {excerpt(text)}"
            raise ReportFormatError(msg, path=name, line=lineno)
        if text in first_seen:
            if not allow_duplicates:
                msg = f"expected distinct candidates, found {excerpt(text)} again (first on line {first_seen[text]})"
                raise ReportFormatError(msg, path=name, line=lineno)
            repeats.append((lineno, text, first_seen[text]))
            continue
        first_seen[text] = lineno
    if not first_seen:
        what = "a significant value, found none" if found else "at least one candidate, found an empty file"
        raise ReportFormatError(f"expected {what}", path=name)
    if repeats:
        shown = "; ".join(f"line {ln}: {excerpt(s)} (first on line {first})" for ln, s, first in repeats[:5])
        more = f"; and {len(repeats) - 5} more" if len(repeats) > 5 else ""
        msg = f"{name}: skipped {len(repeats)} repeated candidate(s): {shown}{more}"
        warnings.warn(msg, RapporWarning, stacklevel=2)
    return list(first_seen)


def _lines(path: PathLike) -> Iterator[tuple[int, str]]:
    """``(line number, candidate)`` of a one-per-line list, the spreadsheet quote removed."""
    for lineno, line in iter_text_lines(path, what="a candidates file"):
        yield lineno, restore_text(line)


def _found_values(path: PathLike) -> Iterator[tuple[int, str]]:
    """``(line number, value)`` of the significant rows of a found.csv that are UTF-8 text.

    The others are left out with one warning naming their lines: no candidate can stand
    for a value that is not UTF-8.
    """
    rows = [row for row in read_found_rows(path) if row.significant]
    left_out = [row for row in rows if row.text is None]
    if left_out:
        shown = ", ".join(f"line {row.line}: {excerpt(row.string)}" for row in left_out[:5])
        more = f", and {len(left_out) - 5} more" if len(left_out) > 5 else ""
        msg = (f"{display_name(path)}: left out {len(left_out)} significant value(s) that are not UTF-8 text "
               f"({shown}{more}): candidates are hashed as UTF-8, so none can stand for them")
        warnings.warn(msg, RapporWarning, stacklevel=3)
    for row in rows:
        if row.text is not None:
            yield row.line, row.text


def write_candidates(candidates: Iterable[str], path: PathLike) -> None:
    """Write candidates one per line (UTF-8), atomically; ``"-"`` writes to standard output.

    Raises
    ------
    InvalidParameterError
        If a candidate is empty, contains a line break, or is repeated (it could not be
        read back as the same list).
    """
    items = list(candidates)
    seen: set[str] = set()
    for s in items:
        if not isinstance(s, str) or not s.strip() or "\n" in s or "\r" in s or s in seen:
            msg = ("The 'candidates' parameter of write_candidates must hold distinct, non-blank strings "
                   f"without line breaks. Got {s!r} instead.")
            raise InvalidParameterError(msg)
        seen.add(s)
    with atomic_output(path) as fh:
        for s in items:
            fh.write(spreadsheet_text(s) + "\n")
