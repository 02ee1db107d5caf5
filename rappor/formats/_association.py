"""Files of multi-variable collections (association analysis): reports, Parquet reports and the schema.

Reports (google/rappor ``bin/decode_assoc.R``, ``tests/rappor_sim.py --assoc-testdata``)
    A CSV file with a header naming its columns: ``cohort`` and one column per variable,
    holding that variable's IRR as a bit string (character 0 = bit ``k - 1``; a boolean
    is one character, ``0`` or ``1``).  A ``client`` column, when present, says whose each
    row is: rows of one client (a client that reports daily) are decoded as such
    (:attr:`AssocReports.clients`).  Other columns are ignored.  A blank value is an error
    unless bad rows are removed (``--remove-bad-rows``).
Parquet reports
    The same columns: ``cohort`` (integer) and, per variable, either the bit string
    (``string``) or the packed bits (``binary`` of ``ceil(k / 8)`` bytes, bit ``j`` is
    ``(b[j // 8] >> (j % 8)) & 1``, the layout of :meth:`rappor.Report.to_bytes`); a null
    is a blank.  :func:`write_assoc_parquet` writes the binary form.
Schema (``rappor-vars.csv``)
    Header ``metric,var,var_type,params`` (spaces allowed); ``var_type`` is ``string`` or
    ``boolean`` and ``params`` names ``<params-dir>/<params>.csv``.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, NamedTuple

import numpy as np
import numpy.typing as npt

from .._util.clients import cohort_conflict
from .._util.bits import BitStringError, bits_to_bitstrings, bitstrings_to_bits, pack_bits
from .._util.csv_blocks import iter_csv_records
from .._util.excerpt import excerpt
from .._util.csv_text import csv_field
from .._util.inputs import open_input_binary, read_input_bytes
from .._util.outputs import atomic_output
from .._util.paths import display_name, PathLike
from .._util.keyfile import looks_like_key_file, not_a_key_file_error
from ..exceptions import InvalidParameterError, ReportFormatError
from ..params import Params
from ..client._reports import ReportBatch

__all__ = ["AssocReports", "SchemaRow", "read_assoc_reports", "read_schema", "write_assoc_parquet",
           "write_assoc_reports"]


@dataclass(frozen=True)
class AssocReports:
    """Report tuples read from a file: one batch per variable (rows aligned) and what was left out.

    ``clients`` holds, when the file has a ``client`` column, a key of each kept row's client:
    equal ids give equal keys (Python's string hash, 64 bits, salted per process: two distinct
    ids among ``n`` share a key with probability about ``n^2 / 2^65``).
    """

    batches: tuple[ReportBatch, ...]
    removed: int
    clients: npt.NDArray[np.int64] | None = None


@dataclass(frozen=True)
class SchemaRow:
    """One row of google/rappor's ``rappor-vars.csv``."""

    metric: str
    var: str
    var_type: str
    params: str
    line: int


#: Rows checked and packed at a time (their text is dropped once packed).
_ASSEMBLE_ROWS = 1 << 16
#: Bytes of a reports CSV read at a time: bounds the text held besides the packed reports.
_BLOCK_BYTES = 1 << 22
#: Longest record (a row with a quoted line break may span lines): bounds an unclosed quote.
_MAX_RECORD_BYTES = 1 << 26
#: Largest schema file (``rappor-vars.csv``, a few lines): bounds the read of /dev/zero.
_MAX_SCHEMA_BYTES = 1 << 24


def _blank(cells: list[str]) -> bool:
    """A record that holds no value: a blank line, or fields of whitespace only."""
    return not any(c.strip() for c in cells)


def _csv_rows(fh: IO[bytes], name: str, what: str) -> Iterator[tuple[int, list[str]]]:
    """The non-blank records ``(line, cells)`` of the CSV stream ``fh``, read a block at a time.

    The records are exactly the csv module's (:func:`rappor._util.csv_blocks.iter_csv_records`:
    a quoted field may hold commas and line breaks), so a client id cannot forge a row.
    The first one is the header: a key file there is refused without quoting it.
    """
    first = True
    for line, cells in iter_csv_records(fh, name, block_bytes=_BLOCK_BYTES, max_record_bytes=_MAX_RECORD_BYTES):
        if _blank(cells):
            continue
        if first:
            if looks_like_key_file(",".join(cells)):
                raise not_a_key_file_error(name, what)
            first = False
        yield line, cells
    if first:
        raise ReportFormatError("expected a header line, found an empty file", path=name)


def read_assoc_reports(path: PathLike, names: Sequence[str], params: Sequence[Params], *,
                       remove_bad_rows: bool = False) -> AssocReports:
    """Read the report tuples of the variables ``names`` (CSV, or Parquet by extension / directory).

    Parameters
    ----------
    path : str or os.PathLike
        A CSV file (``-`` for standard input), a ``.parquet`` file or a directory of them.
    names : sequence of str
        The variables' columns.
    params : sequence of Params
        Each variable's parameters (``k`` characters per bit string; cohorts in ``[0, m)``).
    remove_bad_rows : bool, default=False
        Leave out rows with a blank value (google/rappor's ``--remove-bad-rows``);
        by default a blank value is an error.

    Raises
    ------
    ReportFormatError
        Naming the file and line: a missing column, a row with another number of
        columns, a cohort that is not an integer in ``[0, m)``, a bit string of the wrong
        length or with other characters than ``0``/``1``, a blank value.
    """
    p = Path(os.fspath(path))
    if str(path) != "-" and (p.suffix == ".parquet" or p.is_dir()):
        return _read_parquet(p, names, params, remove_bad_rows)
    name = display_name(path)
    with open_input_binary(path) as fh:
        return _read_csv(_csv_rows(fh, name, "a reports file"), names, params, remove_bad_rows, name)


def _read_csv(rows: Iterator[tuple[int, list[str]]], names: Sequence[str], params: Sequence[Params],
              remove_bad_rows: bool, name: str) -> AssocReports:
    """The reports of the CSV records ``rows`` (header first), checked and packed a block of rows at a time."""
    _, header_cells = next(rows)
    header = [c.strip().strip('"').strip() for c in header_cells]
    index = _column_index(header, names, name)
    client_at = header.index("client") if "client" in header and "client" not in names else None
    width = len(header)
    parts: list[_Part] = []
    block: list[tuple[int, list[str]]] = []

    def assemble() -> None:
        for line, cells in block:
            if len(cells) != width:
                msg = f"expected {width} comma-separated columns ({excerpt(','.join(header))}), found {len(cells)}"
                raise ReportFormatError(msg, path=name, line=line)
        lines = np.array([line for line, _ in block], dtype=np.int64)
        columns = [[cells[i] for _, cells in block] for i in index]
        clients = None if client_at is None else [cells[client_at] for _, cells in block]
        reports, positions = _assemble(columns[0], columns[1:], names, params, remove_bad_rows, name, lines,
                                       clients=clients)
        parts.append(_Part(reports, name, positions, True))
        block.clear()

    for row in rows:
        block.append(row)
        if len(block) >= _ASSEMBLE_ROWS:
            assemble()
    if block or not parts:
        assemble()
    return _concatenate(parts, params)


class _Part(NamedTuple):
    """A block of rows read: its reports, its file, and each kept row's line (CSV) or row number (Parquet)."""

    reports: AssocReports
    source: str
    positions: npt.NDArray[np.int64]
    lines: bool


def _concatenate(parts: list[_Part], params: Sequence[Params]) -> AssocReports:
    """One :class:`AssocReports` of consecutive parts (the rows of a file, block by block), its clients checked."""
    if len(parts) == 1:
        out = parts[0].reports
    else:
        cohorts = np.concatenate([p.reports.batches[0].cohorts for p in parts])
        batches = tuple(ReportBatch(params=par, cohorts=cohorts,
                                    words=np.concatenate([p.reports.batches[j].words for p in parts]))
                        for j, par in enumerate(params))
        keys = [p.reports.clients for p in parts]
        clients = None if any(k is None for k in keys) else np.concatenate([k for k in keys if k is not None])
        out = AssocReports(batches=batches, removed=sum(p.reports.removed for p in parts), clients=clients)
    if out.clients is not None:
        _check_client_cohorts(out.clients, out.batches[0].cohorts, parts)
    return out


def _check_client_cohorts(keys: npt.NDArray[np.int64], cohorts: npt.NDArray[np.int64], parts: list[_Part]) -> None:
    """Refuse a client id whose rows are in two cohorts, naming the file and line of both rows.

    A client belongs to one cohort for good (its hash functions are its cohort's), so such an id
    names two clients, or the rows are mixed up.
    """
    _, codes = np.unique(keys, return_inverse=True)
    conflict = cohort_conflict(codes.reshape(-1).astype(np.int64), cohorts)
    if conflict is None:
        return
    row, earlier = conflict
    ends = np.cumsum([p.positions.size for p in parts])

    def locate(i: int) -> tuple[_Part, int]:
        j = int(np.searchsorted(ends, i, side="right"))
        return parts[j], int(parts[j].positions[i - (int(ends[j - 1]) if j else 0)])

    part, position = locate(row)
    before, at = locate(earlier)
    there = (f"line {at}" if before.lines else f"row {at}") + ("" if before.source == part.source
                                                               else f" of {before.source}")
    msg = (f"{'' if part.lines else f'row {position}: '}this row's client has a report in cohort {int(cohorts[row])} "
           f"and one in cohort {int(cohorts[earlier])} ({there}): a client belongs to one cohort for good, "
           f"so a client id must not name two clients")
    raise ReportFormatError(msg, path=part.source, line=position if part.lines else None)


def _column_index(header: list[str], names: Sequence[str], source: str) -> list[int]:
    if "cohort" in names:
        raise ReportFormatError("'cohort' is the cohort column, not a variable: name another column", path=source,
                                line=1)
    wanted = ["cohort", *names]
    missing = [c for c in wanted if c not in header]
    if missing:
        msg = f"expected a column {excerpt(missing[0])} in the header (found {excerpt(', '.join(header))})"
        raise ReportFormatError(msg, path=source, line=1)
    repeated = [c for c in wanted if header.count(c) > 1]
    if repeated:  # which of them holds the reports? (the first was taken, the others ignored)
        msg = f"expected one column {excerpt(repeated[0])} in the header, found {header.count(repeated[0])}"
        raise ReportFormatError(msg, path=source, line=1)
    return [header.index(c) for c in wanted]


def _assemble(cohort_text: list[str], values: list[list[str]], names: Sequence[str], params: Sequence[Params],
              remove_bad_rows: bool, source: str, lines: npt.NDArray[np.int64] | None,
              first_row: int = 0, clients: list[str] | None = None) -> tuple[AssocReports, npt.NDArray[np.int64]]:
    """Check and convert text columns; ``lines`` gives the line of each row (None: Parquet rows,
    numbered from ``first_row + 1``); ``clients``, the client column's text.  Returns the reports
    and the line (CSV) or row number (Parquet) of each kept row."""
    n = len(cohort_text)

    def where(i: int) -> dict[str, object]:
        if lines is None:
            return {"path": source}
        return {"path": source, "line": int(lines[i])}

    def prefix(i: int) -> str:
        return "" if lines is not None else f"row {first_row + i + 1}: "

    blank = np.zeros(n, dtype=bool)
    for var, column in zip(names, values):
        empty = np.fromiter((not v.strip() for v in column), dtype=bool, count=n)
        if empty.any() and not remove_bad_rows:
            i = int(np.argmax(empty))
            msg = f"{prefix(i)}blank value of variable {var!r} (pass --remove-bad-rows to leave such rows out)"
            raise ReportFormatError(msg, **where(i))  # type: ignore[arg-type]
        blank |= empty
    keep = np.flatnonzero(~blank)
    m = params[0].num_cohorts
    cohorts = _parse_cohorts([cohort_text[i] for i in keep.tolist()], m)
    if isinstance(cohorts, int):
        i = int(keep[cohorts])
        msg = f"{prefix(i)}expected a cohort, an integer in [0, {m - 1}], found {excerpt(cohort_text[i])}"
        raise ReportFormatError(msg, **where(i))  # type: ignore[arg-type]
    batches = []
    for var, column, par in zip(names, values, params):
        k = par.num_bloombits
        strings = [column[i] for i in keep.tolist()]
        try:
            bits = bitstrings_to_bits(strings, k)
        except BitStringError as exc:
            i = int(keep[exc.index])
            hint = " (were the reports made with other parameters?)" if "characters" in str(exc) else ""
            msg = f"{prefix(i)}variable {var!r}: {exc}{hint}"
            raise ReportFormatError(msg, **where(i)) from None  # type: ignore[arg-type]
        batches.append(ReportBatch(params=par, cohorts=cohorts, words=pack_bits(bits)))
    keys = None if clients is None else np.fromiter((hash(clients[i].strip()) for i in keep.tolist()),
                                                    dtype=np.int64, count=keep.size)
    # each kept row's line or row number, kept only for the client check (_check_client_cohorts)
    positions = np.zeros(0, dtype=np.int64) if clients is None \
        else (lines[keep] if lines is not None else first_row + 1 + keep).astype(np.int64)
    return AssocReports(batches=tuple(batches), removed=int(blank.sum()), clients=keys), positions


def _parse_cohorts(texts: list[str], m: int) -> npt.NDArray[np.int64] | int:
    """Cohorts as int64, or the index of the first bad one."""
    arr = np.array(texts, dtype=object)
    ok = np.fromiter((0 < len(t) <= 10 and t.isascii() and t.isdigit() for t in texts), dtype=bool, count=len(texts))
    if not ok.all():
        return int(np.argmin(ok))
    values = arr.astype(np.int64) if len(texts) else np.zeros(0, dtype=np.int64)
    bad = values >= m
    if bad.any():
        return int(np.argmax(bad))
    return values


def _read_parquet(path: Path, names: Sequence[str], params: Sequence[Params], remove_bad_rows: bool) -> AssocReports:
    """The reports of a Parquet file or directory, converted and packed a batch of rows at a time."""
    from ..exceptions import RapporError
    from ._arrow import _pyarrow
    from ._parquet import _open, parquet_files

    pa = _pyarrow()
    parts: list[_Part] = []
    for f in parquet_files(path):
        source = display_name(f)
        pf, schema = _open(f)
        _column_index(list(schema.names), names, source)
        client = ["client"] if "client" in schema.names and "client" not in names else []
        first_row = 0
        try:
            for batch in pf.iter_batches(batch_size=_ASSEMBLE_ROWS, columns=["cohort", *names, *client]):
                reports, positions = _parquet_part(batch, names, params, remove_bad_rows, source, first_row)
                parts.append(_Part(reports, source, positions, False))
                first_row += batch.num_rows
        except RapporError:
            raise
        except (pa.ArrowException, OSError, ValueError) as exc:  # corrupt pages
            raise ReportFormatError(f"cannot read Parquet data: {exc}", path=source) from None
    if not parts:
        empty, positions = _assemble([], [[] for _ in names], names, params, remove_bad_rows, display_name(path), None)
        parts.append(_Part(empty, display_name(path), positions, False))
    return _concatenate(parts, params)


def _parquet_part(batch: Any, names: Sequence[str], params: Sequence[Params], remove_bad_rows: bool, source: str,
                  first_row: int) -> tuple[AssocReports, npt.NDArray[np.int64]]:
    """The reports of one Arrow record batch (rows ``first_row + 1 ...`` of ``source``) and their row numbers."""
    from ._arrow import _pyarrow

    pa = _pyarrow()
    cohort = batch.column("cohort")
    if not pa.types.is_integer(cohort.type):
        raise ReportFormatError(f"expected an integer 'cohort' column, found {cohort.type}", path=source)
    cohort_text = ["" if c is None else str(c) for c in cohort.to_pylist()]
    values = []
    for var, par in zip(names, params):
        col = batch.column(var)
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            values.append(["" if v is None else v for v in col.to_pylist()])
        elif pa.types.is_binary(col.type) or pa.types.is_fixed_size_binary(col.type) or pa.types.is_large_binary(col.type):
            values.append(_binary_to_bitstrings(col.to_pylist(), par.num_bloombits, var, source, first_row))
        else:
            msg = f"expected column {var!r} to hold bit strings or packed bytes, found {col.type}"
            raise ReportFormatError(msg, path=source)
    if any(t == "" for t in cohort_text):
        i = cohort_text.index("")
        raise ReportFormatError(f"row {first_row + i + 1}: expected a cohort, found null", path=source)
    clients = None
    if "client" in batch.schema.names and "client" not in names:
        clients = ["" if c is None else str(c) for c in batch.column("client").to_pylist()]
    return _assemble(cohort_text, values, names, params, remove_bad_rows, source, None, first_row, clients)


def _binary_to_bitstrings(cells: list[bytes | None], k: int, var: str, source: str, first_row: int = 0) -> list[str]:
    nbytes = (k + 7) // 8
    present = [i for i, c in enumerate(cells) if c is not None and len(c) > 0]
    out = [""] * len(cells)
    if not present:
        return out
    bad = next((i for i in present if len(cells[i] or b"") != nbytes), None)
    if bad is not None:
        msg = (f"row {first_row + bad + 1}: variable {var!r}: expected {nbytes} bytes for k = {k} bits, "
               f"found {len(cells[bad] or b'')}")
        raise ReportFormatError(msg, path=source)
    data = np.frombuffer(b"".join(cells[i] or b"" for i in present), dtype=np.uint8).reshape(len(present), nbytes)
    bits = np.unpackbits(data, axis=1, bitorder="little")
    high = bits[:, k:].any(axis=1)
    if high.any():
        i = present[int(np.argmax(high))]
        raise ReportFormatError(f"row {first_row + i + 1}: variable {var!r}: bits above bit {k - 1} are set",
                                path=source)
    for i, s in zip(present, bits_to_bitstrings(bits[:, :k])):
        out[i] = s
    return out


def read_schema(path: PathLike) -> list[SchemaRow]:
    """Read google/rappor's ``rappor-vars.csv`` (header ``metric,var,var_type,params``)."""
    name = display_name(path)
    data = read_input_bytes(path, max_bytes=_MAX_SCHEMA_BYTES, what="a schema file")  # /dev/zero: a bounded read
    rows = _csv_rows(io.BytesIO(data), name, "a schema file")
    _, header_cells = next(rows)
    header = [c.strip().strip('"').strip() for c in header_cells]
    expected = ["metric", "var", "var_type", "params"]
    if header != expected:
        raise ReportFormatError(f"expected the header {','.join(expected)}, found {excerpt(','.join(header_cells))}",
                                path=name, line=1)
    out = []
    first: dict[tuple[str, str], int] = {}
    for line, cells in rows:
        if len(cells) != 4:
            raise ReportFormatError(f"expected 4 comma-separated columns (metric,var,var_type,params), found {len(cells)}",
                                    path=name, line=line)
        metric, var, var_type, params = (c.strip() for c in cells)
        if (metric, var) in first:  # which row holds its type and parameters would be a guess
            msg = (f"expected each variable once per metric, found metric {excerpt(metric)}, var {excerpt(var)} "
                   f"again (first on line {first[metric, var]})")
            raise ReportFormatError(msg, path=name, line=line)
        first[metric, var] = line
        out.append(SchemaRow(metric, var, var_type, params, line))
    return out


def write_assoc_reports(path: PathLike, batches: Sequence[ReportBatch], names: Sequence[str],
                        client_ids: Sequence[str] | None = None) -> None:
    """Write report tuples as ``client,cohort,<name1>,<name2>,...`` (bit strings), atomically."""
    n = len(batches[0])
    ids = [f"c{i}" for i in range(n)] if client_ids is None else list(client_ids)
    columns = [b.bitstrings() for b in batches]
    with atomic_output(path) as out:
        out.write(",".join(["client", "cohort", *(csv_field(v) for v in names)]) + "\n")
        cohorts = batches[0].cohorts.tolist()
        for i in range(n):
            out.write(",".join([csv_field(ids[i]), str(cohorts[i]), *(col[i] for col in columns)]) + "\n")


def write_assoc_parquet(path: PathLike, batches: Sequence[ReportBatch], names: Sequence[str],
                        client_ids: Sequence[str] | None = None) -> None:
    """Write report tuples as Parquet: ``cohort`` (int32) and one packed-bytes column per variable; first a
    ``client`` column (strings) when ``client_ids`` are given (a client's rows keep its id)."""
    from ._arrow import _pyarrow

    pa = _pyarrow()
    import pyarrow.parquet as pq

    arrays = [pa.array(batches[0].cohorts.astype(np.int32))]
    columns = ["cohort", *names]
    if client_ids is not None:
        if len(client_ids) != len(batches[0]):
            raise InvalidParameterError(f"The 'client_ids' parameter of write_assoc_parquet must hold one id a report "
                                        f"tuple ({len(batches[0]):,}). Got {len(client_ids):,} instead.")
        arrays.insert(0, pa.array([str(c) for c in client_ids], type=pa.string()))
        columns.insert(0, "client")
    for b in batches:
        nbytes = (b.params.num_bloombits + 7) // 8
        data = np.ascontiguousarray(b.words.astype("<u8")).view(np.uint8).reshape(len(b), -1)[:, :nbytes]
        arrays.append(pa.array([row.tobytes() for row in data], type=pa.binary(nbytes)))
    table = pa.table(arrays, names=columns)
    with atomic_output(path, binary=True) as fh:
        pq.write_table(table, fh, compression="zstd")
