"""google/rappor's ``params.csv``: :func:`read_params` and :func:`write_params` own the format.

The file (google/rappor ``doc/data-flow.md``) is a header line ``k,h,m,p,q,f`` and one
data row, e.g.::

    k,h,m,p,q,f
    16,2,8,0.5,0.75,0.5

A **discovery parameters file** (one slot's parameters, ``rappor plan
--discovery-params-out``) adds the layout the clients were given, so that the file alone
reproduces the wire layout: ``max_length``, ``segment`` and ``slot_weights`` (the slots'
weights separated by spaces, empty when every slot is alike)::

    k,h,m,p,q,f,max_length,segment,slot_weights
    256,1,32,0.0,1.0,0.2384,30,2,12 20 18 17 14 12 9 7 1 1 1 2 3 3 4 4

:func:`read_discovery_params` reads both kinds (a file without the layout columns leaves
the layout to the command's flags, as before they existed); :func:`read_params` refuses
the discovery kind, whose ``m`` counts the cohorts of one slot, not of the report files.
"""

from __future__ import annotations

import csv
import io
import math
import re
from typing import Any

from .._util.excerpt import excerpt
from .._util.inputs import iter_text_lines
from .._util.outputs import atomic_output
from .._util.paths import PathLike, display_name
from ..exceptions import InvalidParameterError, ReportFormatError
from ..analysis.discovery._spec import DiscoverySpec
from ..params import PARAM_NAMES, Params

__all__ = ["DISCOVERY_COLUMNS", "discovery_params_text", "params_text", "read_discovery_params", "read_params",
           "write_discovery_params", "write_params"]

_HEADER = PARAM_NAMES
#: Columns a discovery parameters file adds after ``k,h,m,p,q,f``: one slot's layout.
DISCOVERY_COLUMNS = ("max_length", "segment", "slot_weights")
_MAX_LINE_BYTES = 1 << 16  # a params line is a few dozen characters: read no more of another file


def _parse_int(text: str, name: str, path: str, line: int) -> int:
    try:
        return int(text)
    except ValueError:
        msg = f"expected an integer for {name!r}, found {excerpt(text)}"
        raise ReportFormatError(msg, path=path, line=line) from None


def _parse_float(text: str, name: str, path: str, line: int) -> float:
    try:
        value = float(text)
    except ValueError:
        msg = f"expected a number for {name!r}, found {excerpt(text)}"
        raise ReportFormatError(msg, path=path, line=line) from None
    if not math.isfinite(value):
        msg = f"expected a finite number for {name!r}, found {excerpt(text)}"
        raise ReportFormatError(msg, path=path, line=line)
    return value


def _split(text: str, path: str, line: int) -> list[str]:
    try:
        row = next(csv.reader(io.StringIO(text), skipinitialspace=True), [])
    except csv.Error as exc:  # e.g. a stray carriage return inside the line
        raise ReportFormatError(f"expected a CSV row, found {excerpt(text)} ({exc})", path=path, line=line) from None
    return [cell.strip() for cell in row]


def _is_header(cells: list[str], columns: tuple[str, ...] = _HEADER) -> bool:
    return sorted(cells) == sorted(columns) and len(cells) == len(columns)


def _is_any_header(cells: list[str]) -> bool:
    return _is_header(cells) or _is_header(cells, _HEADER + DISCOVERY_COLUMNS)


def _read_row(path: PathLike) -> tuple[str, int, dict[str, str]]:
    """``(file name, line of the data row, {column: cell})`` of a params file of either kind."""
    name = display_name(path)
    lines: list[tuple[int, str]] = []
    for number, text in iter_text_lines(path, what="a params file", max_line_bytes=_MAX_LINE_BYTES):
        if not text.strip():
            continue
        lines.append((number, text))
        if (len(lines) == 1 and not _is_any_header(_split(text, name, number))) or len(lines) > 2:
            break  # a bad header, or one row too many: the error is known, read no further
    if not lines:
        raise ReportFormatError("expected a header 'k,h,m,p,q,f' and one data row, found an empty file", path=name)
    head_no, head_text = lines[0]
    header = _split(head_text, name, head_no)
    if not _is_any_header(header):
        msg = f"expected the header 'k,h,m,p,q,f', found {excerpt(head_text)}"
        raise ReportFormatError(msg, path=name, line=head_no)
    if len(lines) < 2:
        raise ReportFormatError("expected one data row after the header, found none", path=name, line=head_no + 1)
    if len(lines) > 2:
        raise ReportFormatError("expected exactly one data row, found another", path=name, line=lines[2][0])
    row_no, row_text = lines[1]
    cells = _split(row_text, name, row_no)
    if len(cells) != len(header):
        msg = f"expected {len(header)} comma-separated values, found {len(cells)}"
        raise ReportFormatError(msg, path=name, line=row_no)
    return name, row_no, dict(zip(header, cells))


def _params_of(raw: dict[str, str], name: str, row_no: int) -> Params:
    values: dict[str, Any] = {}
    for key in ("k", "h", "m"):
        values[key] = _parse_int(raw[key], key, name, row_no)
    for key in ("p", "q", "f"):
        values[key] = _parse_float(raw[key], key, name, row_no)
    try:
        return Params.from_dict(values)
    except InvalidParameterError as exc:
        raise ReportFormatError(_column_wording(str(exc)), path=name, line=row_no) from None


def read_params(path: PathLike) -> Params:
    """Read a google/rappor ``params.csv`` (header ``k,h,m,p,q,f``, one data row).

    Spaces after commas, quoted header names, a UTF-8 byte-order mark, CRLF line endings
    and trailing blank lines are accepted.

    Parameters
    ----------
    path : str or os.PathLike
        The file, or ``"-"`` for standard input.

    Returns
    -------
    Params

    Raises
    ------
    ReportFormatError
        If the file does not have that form or holds invalid parameters (a discovery
        parameters file among them: see :func:`read_discovery_params`); the message
        names the file and the line.
    RapporIOError
        If the file cannot be read.
    """
    name, row_no, raw = _read_row(path)
    if DISCOVERY_COLUMNS[0] in raw:
        msg = ("expected the header 'k,h,m,p,q,f', found a discovery parameters file (one slot of "
               f"{raw['m']} cohorts, with max_length, segment and slot_weights): it is for 'rappor encode "
               "--discovery-params', 'rappor discover --params', 'rappor decode --discovery-params' and 'rappor "
               "sum-bits --params' (which derives the report files' layout from it); elsewhere the discovery report "
               "files need the wire parameters (slots x cohorts: 'rappor plan --discovery-wire-params-out')")
        raise ReportFormatError(msg, path=name, line=row_no - 1)
    return _params_of(raw, name, row_no)


def _layout_of(raw: dict[str, str], params: Params, name: str, row_no: int) -> dict[str, Any]:
    layout: dict[str, Any] = {key: _parse_int(raw[key], key, name, row_no) for key in DISCOVERY_COLUMNS[:2]}
    text = raw["slot_weights"]
    try:
        weights = tuple(int(w) for w in text.split())
    except ValueError:
        msg = f"expected the slot weights as integers separated by spaces (or nothing), found {excerpt(text)}"
        raise ReportFormatError(msg, path=name, line=row_no) from None
    layout["slot_weights"] = weights or None
    try:
        DiscoverySpec(params=params, **layout)
    except InvalidParameterError as exc:
        message = re.sub(r"The '(\w+)' parameter of DiscoverySpec", r"column \1", str(exc))
        raise ReportFormatError(message, path=name, line=row_no) from None
    return layout


def read_discovery_params(path: PathLike) -> tuple[Params, dict[str, Any]]:
    """Read a discovery parameters file (``path`` as :func:`read_params`): one slot's parameters and the clients' layout.

    Returns
    -------
    params : Params
        One slot's parameters (``m`` cohorts per slot).
    layout : dict
        ``max_length``, ``segment`` and ``slot_weights`` (a tuple, or None when every slot
        is alike), ready for :class:`rappor.analysis.discovery.DiscoverySpec`; empty for a
        file of the plain ``k,h,m,p,q,f`` kind, whose layout the command's flags give.

    Raises
    ------
    ReportFormatError
        As :func:`read_params`, or for a layout that cannot be (a weight per slot, each in
        ``[1, 2**20]``); the message names the file and the line.
    """
    name, row_no, raw = _read_row(path)
    params = _params_of(raw, name, row_no)
    return params, (_layout_of(raw, params, name, row_no) if DISCOVERY_COLUMNS[0] in raw else {})


#: The file's column of each :class:`Params` field.
_COLUMNS = {"num_bloombits": "k", "num_hashes": "h", "num_cohorts": "m", "prob_p": "p", "prob_q": "q", "prob_f": "f"}


def _column_wording(message: str) -> str:
    """``message`` about a Params field, worded with the file's column (``m`` for ``num_cohorts``).

    "The 'num_cohorts' parameter of Params must be an int in the range [1, 4294967296]. Got 0
    instead." becomes "column m: must be an int in the range [1, 4294967296], found 0"; the
    names in other messages (``prob_f=0.5``) become the columns too.
    """
    match = re.match(r"The '(\w+)' parameter of Params must be (.*)\. Got (.*) instead\.$", message, re.DOTALL)
    if match and match.group(1) in _COLUMNS:
        return f"column {_COLUMNS[match.group(1)]}: expected {match.group(2)}, found {match.group(3)}"
    for field, column in _COLUMNS.items():
        message = re.sub(rf"\b{field}\b", column, message)
    return message


def params_text(params: Params) -> str:
    """The ``params.csv`` text of ``params``: the header ``k,h,m,p,q,f`` and one row (each value's repr)."""
    d = params.as_dict()
    return ",".join(_HEADER) + "\n" + ",".join(repr(d[key]) for key in _HEADER) + "\n"


def write_params(params: Params, path: PathLike) -> None:
    """Write ``params`` as a google/rappor ``params.csv`` (atomically; ``"-"`` for stdout)."""
    with atomic_output(path) as fh:
        fh.write(params_text(params))


def discovery_params_text(spec: DiscoverySpec) -> str:
    """The discovery parameters file of ``spec``: ``k,h,m,p,q,f,max_length,segment,slot_weights`` and one row."""
    weights = " ".join(map(str, spec.slot_weights or ()))
    lines = params_text(spec.params).splitlines()
    return (f"{lines[0]},{','.join(DISCOVERY_COLUMNS)}\n"
            f"{lines[1]},{spec.max_length},{spec.segment},{weights}\n")


def write_discovery_params(spec: DiscoverySpec, path: PathLike) -> None:
    """Write ``spec``'s parameters and client layout (:func:`discovery_params_text`), atomically."""
    with atomic_output(path) as fh:
        fh.write(discovery_params_text(spec))
