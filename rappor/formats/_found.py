"""The values ``rappor discover`` found (``found.csv``): :func:`write_found` writes a
:class:`~rappor.analysis.discovery.DiscoveryResult`, :func:`read_found_rows` reads it back.

A ``found.csv`` is a CSV file with the header :data:`FOUND_HEADER`, one value a row, most
frequent first.  Its ``string`` field is written with :func:`rappor._util.csv_text.csv_text_field`, so a
value holding a comma, a quote, a line break or white space at an edge survives (a
quoted field); it is the carrier of the discovered values from ``rappor discover`` to
``rappor decode --candidates found.csv`` (which reads it with
:func:`rappor.formats.read_candidates`) and ``rappor plan --discovery-lengths found.csv``.

The last column, ``utf8``, says how to read ``string``:

* ``true``: the value is UTF-8 text and ``string`` is that text, exactly;
* ``false``: the value is not UTF-8 (no candidate can be: candidates are hashed as
  UTF-8), and ``string`` shows its bytes with two escapes, ``\\xNN`` for a byte that is not
  part of valid UTF-8 and ``\\\\`` for a backslash, so the bytes read back exactly and a
  literal ``\\xe6`` in valid text is never taken for an escape.

A file of the older layout, without the ``utf8`` column, is read as UTF-8 text throughout.
"""

from __future__ import annotations

import csv
import io
import os
import re
from typing import IO, NamedTuple

from .._util.csv_text import csv_text_field, restore_text
from .._util.excerpt import excerpt
from .._util.inputs import open_input_binary, read_first_line
from .._util.outputs import atomic_output
from .._util.paths import PathLike, display_name
from ..analysis.discovery import DiscoveryResult, display_string
from ..exceptions import ReportFormatError

__all__ = ["FOUND_HEADER", "FoundRow", "is_found_file", "read_found", "read_found_rows", "read_found_shares",
           "write_found"]

#: Header of ``found.csv``, which :func:`rappor.formats.read_candidates` also reads.
FOUND_HEADER = "string,proportion,prop_std_error,zscore,pvalue,significant,first_slot,slots,utf8"
#: The header before the ``utf8`` column (every value read as UTF-8 text).
FOUND_HEADER_WITHOUT_UTF8 = FOUND_HEADER.removesuffix(",utf8")

_ESCAPE = re.compile(r"\\(\\|x[0-9a-fA-F]{2})?")


class FoundRow(NamedTuple):
    """One row of a found.csv (:func:`read_found_rows`)."""

    value: bytes
    """The bytes the clients hold."""
    text: str | None
    """The value as text, or None when it is not UTF-8 (it cannot be a candidate)."""
    significant: bool
    proportion: float
    line: int
    """The line the row starts on."""

    @property
    def string(self) -> str:
        """The value as people read it: its text, or :func:`~rappor.analysis.discovery.display_string`."""
        return self.text if self.text is not None else display_string(self.value)


def _found_field(value: bytes) -> tuple[str, bool]:
    """``(string field, utf8)`` of a value: its text, or its bytes with ``\\xNN`` and ``\\\\`` escapes.

    A backslash is one byte (0x5C) that no multi-byte UTF-8 sequence contains, so doubling
    it before the escapes are made cannot change which bytes are valid.
    """
    try:
        return value.decode("utf-8"), True
    except UnicodeDecodeError:
        return value.replace(b"\\", b"\\\\").decode("utf-8", errors="backslashreplace"), False


def _unescape(field: str) -> bytes | None:
    """The bytes of a ``utf8=false`` field; None for a backslash that starts no escape."""
    parts: list[bytes] = []
    start = 0
    for match in _ESCAPE.finditer(field):
        escape = match.group(1)
        if escape is None:
            return None
        parts += [field[start:match.start()].encode("utf-8"),
                  b"\\" if escape == "\\" else bytes([int(escape[1:], 16)])]
        start = match.end()
    return b"".join(parts) + field[start:].encode("utf-8")


def write_found(result: DiscoveryResult, path: PathLike | IO[str] | None) -> None:
    """Write ``found.csv`` of ``result``: :data:`FOUND_HEADER`, then one value a row, in the result's order.

    Parameters
    ----------
    result : DiscoveryResult
    path : str, os.PathLike, open text file or None
        Written atomically (``"-"`` or None: standard output); an open text file (such as
        one :func:`rappor._util.outputs.atomic_output` yields) is written as it is.

    Values are written as :func:`found_field` (their text, or their bytes escaped with
    ``utf8`` false) and quoted where CSV needs it; shares and standard errors are written
    to full precision.
    """
    if path is None or isinstance(path, (str, os.PathLike)):
        with atomic_output(path) as out:
            _write_rows(result, out)
    else:
        _write_rows(result, path)


def _write_rows(result: DiscoveryResult, out: IO[str]) -> None:
    out.write(FOUND_HEADER + "\n")
    for i, value in enumerate(result.values):
        field, utf8 = _found_field(value)
        out.write(f"{csv_text_field(field)},{float(result.proportion[i])!r},{float(result.prop_std_error[i])!r},"
                  f"{result.zscore[i]:.4f},{result.pvalue[i]:.4g},{str(bool(result.significant[i])).lower()},"
                  f"{int(result.first_slot[i])},{int(result.slots[i])},{str(utf8).lower()}\n")


def is_found_file(path: PathLike) -> bool:
    """Whether the first line of ``path`` is the header of a found.csv (a counts file's is not)."""
    first = read_first_line(path).decode("utf-8", errors="replace")
    return first.lstrip("\ufeff").rstrip("\r\n") in (FOUND_HEADER, FOUND_HEADER_WITHOUT_UTF8)


def read_found_shares(path: PathLike) -> list[tuple[str, float]]:
    """The ``(string, proportion)`` pairs of the significant values of a found.csv, in file order
    (``string`` as :attr:`FoundRow.string`)."""
    return [(row.string, row.proportion) for row in read_found_rows(path) if row.significant]


def read_found(path: PathLike) -> list[tuple[str, bool]]:
    """The ``(string, significant)`` pairs of a found.csv, in file order (``string`` as
    :attr:`FoundRow.string`: a value that is not UTF-8 with ``\\xNN`` escapes, as
    :attr:`~rappor.analysis.discovery.DiscoveryResult.strings` shows it)."""
    return [(row.string, row.significant) for row in read_found_rows(path)]


def read_found_rows(path: PathLike) -> list[FoundRow]:
    """Every row of a found.csv, in file order, with the exact bytes of each value.

    Raises
    ------
    ReportFormatError
        For a bad header, a row without its fields, a ``significant`` or ``utf8`` field
        other than ``true``/``false``, a proportion that is not a number, or a
        ``utf8=false`` value with a backslash that starts no escape; the message names
        the file and the line the row starts on.
    """
    name = display_name(path)
    out: list[FoundRow] = []
    with open_input_binary(path) as raw:
        fh = io.TextIOWrapper(raw, encoding="utf-8", errors="strict", newline="")
        reader = csv.reader(fh, strict=True)
        line = 1
        width = 0
        try:
            for row in reader:
                if reader.line_num == 1:
                    header = ",".join(c.lstrip("\ufeff") if i == 0 else c for i, c in enumerate(row))
                    if header not in (FOUND_HEADER, FOUND_HEADER_WITHOUT_UTF8):
                        msg = f"expected the header {FOUND_HEADER}, found {excerpt(','.join(row))}"
                        raise ReportFormatError(msg, path=name, line=1)
                    width = len(row)
                else:
                    out.append(_found_row(row, width, name, line))
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


def _found_row(row: list[str], width: int, name: str, line: int) -> FoundRow:
    if len(row) != width:
        raise ReportFormatError(f"expected {width} comma-separated fields, found {len(row)}", path=name, line=line)
    for column, field in ((5, "significant"), (8, "utf8"))[:width - 7]:
        if row[column] not in ("true", "false"):
            msg = f"expected 'true' or 'false' in the {field} column, found {excerpt(row[column])}"
            raise ReportFormatError(msg, path=name, line=line)
    try:
        share = float(row[1])
    except ValueError:
        msg = f"expected a number in the proportion column, found {excerpt(row[1])}"
        raise ReportFormatError(msg, path=name, line=line) from None
    field = restore_text(row[0])
    if width == 8 or row[8] == "true":
        return FoundRow(field.encode("utf-8"), field, row[5] == "true", share, line)
    value = _unescape(field)
    if value is None:
        msg = (f"expected only \\\\ and \\xNN escapes in a value whose utf8 column is false, found "
               f"{excerpt(field)}")
        raise ReportFormatError(msg, path=name, line=line)
    return FoundRow(value, None, row[5] == "true", share, line)
