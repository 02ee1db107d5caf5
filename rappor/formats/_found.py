"""The values ``rappor discover`` found (``found.csv``): :func:`write_found` writes a
:class:`~rappor.analysis.discovery.DiscoveryResult`, :func:`read_found` reads it back.

A ``found.csv`` is a CSV file with the header :data:`FOUND_HEADER`, one value a row, most
frequent first.  Its ``string`` field is written with :func:`rappor._util.csv_text.csv_text_field`, so a
value holding a comma, a quote, a line break or white space at an edge survives (a
quoted field); it is the carrier of the discovered values from ``rappor discover`` to
``rappor decode --candidates found.csv`` (which reads it with
:func:`rappor.formats.read_candidates`) and ``rappor plan --discovery-lengths found.csv``.  A value that is not valid UTF-8 is shown with ``\\xNN``
escapes (:func:`rappor.analysis.discovery.display_string`) and cannot be a candidate (candidates
are hashed as UTF-8): :func:`read_found` leaves such rows to the caller's choice.
"""

from __future__ import annotations

import csv
import io
import os
from typing import IO

from .._util.csv_text import csv_text_field
from .._util.excerpt import excerpt
from .._util.inputs import open_input_binary, read_first_line
from .._util.outputs import atomic_output
from .._util.paths import PathLike, display_name
from ..analysis.discovery import DiscoveryResult
from ..exceptions import ReportFormatError

__all__ = ["FOUND_HEADER", "is_found_file", "read_found", "read_found_shares", "write_found"]

#: Header of ``found.csv``, which :func:`rappor.formats.read_candidates` also reads.
FOUND_HEADER = "string,proportion,prop_std_error,zscore,pvalue,significant,first_slot,slots"


def write_found(result: DiscoveryResult, path: PathLike | IO[str] | None) -> None:
    """Write ``found.csv`` of ``result``: :data:`FOUND_HEADER`, then one value a row, in the result's order.

    Parameters
    ----------
    result : DiscoveryResult
    path : str, os.PathLike, open text file or None
        Written atomically (``"-"`` or None: standard output); an open text file (such as
        one :func:`rappor._util.outputs.atomic_output` yields) is written as it is.

    Values are shown as :func:`~rappor.analysis.discovery.display_string` and quoted where
    CSV needs it; shares and standard errors are written to full precision.
    """
    if path is None or isinstance(path, (str, os.PathLike)):
        with atomic_output(path) as out:
            _write_rows(result, out)
    else:
        _write_rows(result, path)


def _write_rows(result: DiscoveryResult, out: IO[str]) -> None:
    out.write(FOUND_HEADER + "\n")
    for i, s in enumerate(result.strings):
        out.write(f"{csv_text_field(s)},{float(result.proportion[i])!r},{float(result.prop_std_error[i])!r},"
                  f"{result.zscore[i]:.4f},{result.pvalue[i]:.4g},{str(bool(result.significant[i])).lower()},"
                  f"{int(result.first_slot[i])},{int(result.slots[i])}\n")


def is_found_file(path: PathLike) -> bool:
    """Whether the first line of ``path`` is the header of a found.csv (a counts file's is not)."""
    first = read_first_line(path).decode("utf-8", errors="replace")
    return first.lstrip("\ufeff").rstrip("\r\n") == FOUND_HEADER


def read_found_shares(path: PathLike) -> list[tuple[str, float]]:
    """The ``(string, proportion)`` pairs of the significant values of a found.csv, in file order."""
    return [(value, share) for value, significant, share in _rows(path) if significant]


def read_found(path: PathLike) -> list[tuple[str, bool]]:
    """The ``(string, significant)`` pairs of a found.csv, in file order.

    Raises
    ------
    ReportFormatError
        For a bad header, a row without the 8 fields or a ``significant`` field other
        than ``true``/``false``; the message names the file and the line the row starts on.
    """
    return [(value, significant) for value, significant, _ in _rows(path)]


def _rows(path: PathLike) -> list[tuple[str, bool, float]]:
    """``(string, significant, proportion)`` of every row (see :func:`read_found`)."""
    name = display_name(path)
    out: list[tuple[str, bool, float]] = []
    with open_input_binary(path) as raw:
        fh = io.TextIOWrapper(raw, encoding="utf-8", errors="strict", newline="")
        reader = csv.reader(fh, strict=True)
        line = 1
        try:
            for row in reader:
                if reader.line_num == 1:
                    if [c.lstrip("\ufeff") if i == 0 else c for i, c in enumerate(row)] != FOUND_HEADER.split(","):
                        msg = f"expected the header {FOUND_HEADER}, found {excerpt(','.join(row))}"
                        raise ReportFormatError(msg, path=name, line=1)
                elif len(row) != len(FOUND_HEADER.split(",")):
                    msg = f"expected {len(FOUND_HEADER.split(','))} comma-separated fields, found {len(row)}"
                    raise ReportFormatError(msg, path=name, line=line)
                elif row[5] not in ("true", "false"):
                    msg = f"expected 'true' or 'false' in the significant column, found {excerpt(row[5])}"
                    raise ReportFormatError(msg, path=name, line=line)
                else:
                    try:
                        share = float(row[1])
                    except ValueError:
                        msg = f"expected a number in the proportion column, found {excerpt(row[1])}"
                        raise ReportFormatError(msg, path=name, line=line) from None
                    out.append((row[0], row[5] == "true", share))
                line = reader.line_num + 1
        except csv.Error as err:
            raise ReportFormatError(f"expected CSV, found an unreadable row ({err})", path=name, line=line) from None
        except UnicodeDecodeError:
            raise ReportFormatError("expected UTF-8 text, found other bytes", path=name, line=line) from None
        finally:
            fh.detach()
    if line == 1:
        raise ReportFormatError(f"expected the header {FOUND_HEADER}, found an empty file", path=name)
    return out
