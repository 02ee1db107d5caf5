"""``rappor encode`` with several value columns: one report per variable per client (private).

Input: a CSV whose header is ``client`` followed by two or more variable names
(``client,domain,flag``).  Output: ``client,cohort,<name1>,<name2>,...`` with each
variable's IRR as a bit string (a boolean: one character), the reports file that
``rappor decode-assoc`` reads.  Columns named with ``--bool`` hold booleans
(``1``/``0``/``true``/``false``).  Every variable gets its own permanent response
(domain-separated by its name, ``docs/client.md``); the cohort is the client's.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from .._csv_blocks import iter_csv_records
from .._excerpt import excerpt
from .._io import PathLike, atomic_output, csv_field, display_name, open_input_binary
from .._keyfile import looks_like_key_file, not_a_key_file_error
from ..formats.client_values import BLOCK_BYTES, MAX_ROW_BYTES
from ..exceptions import ReportFormatError
from ..params import Params
from ._variables import boolean_params

__all__ = ["encode_multi_file", "multi_header"]

CHUNK_ROWS = 65536


def multi_header(raw_first_line: str) -> list[str] | None:
    """The variable names of a multi-variable input header, or None for ``client,value`` (or not a header)."""
    try:
        cells = next(csv.reader([raw_first_line]), [])
    except csv.Error:
        return None
    cells = [c.strip() for c in cells]
    if len(cells) >= 3 and cells[0] == "client":
        return cells[1:]
    return None


def encode_multi_file(path: PathLike, output: PathLike, params: Params, key: bytes, booleans: Sequence[str],
                      seed: int | None) -> int:
    """Encode a ``client,<var1>,<var2>,...`` file; returns the number of clients written.

    The input is read a block at a time, exactly as the csv module reads it (strict
    quoting; a quoted client id may hold commas and line breaks), and encoded
    :data:`CHUNK_ROWS` clients at a time: memory follows the chunk, not the input.
    """
    name = display_name(path)
    with open_input_binary(path) as fh:
        rows = ((line, cells) for line, cells in iter_csv_records(fh, name, strict=True, block_bytes=BLOCK_BYTES,
                                                                   max_record_bytes=MAX_ROW_BYTES)
                if cells and cells != [""])
        return _encode_rows(rows, output, params, key, booleans, seed, name)


def _encode_rows(rows: Iterator[tuple[int, list[str]]], output: PathLike, params: Params, key: bytes,
                 booleans: Sequence[str], seed: int | None, name: str) -> int:
    """Check the header record, then encode and write the data records a chunk at a time."""
    try:
        _, header = next(rows)
    except StopIteration:
        raise ReportFormatError("expected a header 'client,<variable>,<variable>...', found an empty file",
                                path=name) from None
    if looks_like_key_file(",".join(header)):
        raise not_a_key_file_error(name, "a 'client,<variable>,...' input file")
    shown = excerpt(",".join(header))
    names = [c.strip() for c in header[1:]]
    if len(set(names)) != len(names) or any(not n for n in names):
        raise ReportFormatError(f"expected distinct, non-empty variable names in the header, found {shown}",
                                path=name, line=1)
    reserved = [n for n in names if n in ("client", "cohort")]
    if reserved:  # the output has its own 'client' and 'cohort' columns: two columns of one name
        raise ReportFormatError(f"expected variable names other than 'client' and 'cohort' (the output's own "
                                f"columns), found {reserved[0]!r} in the header {shown}", path=name, line=1)
    unknown = [b for b in booleans if b not in names]
    if unknown:
        raise ReportFormatError(f"--bool {excerpt(unknown[0])} is not a column of the header ({shown})",
                                path=name, line=1)
    width = len(header)
    written = 0
    with atomic_output(output) as out:
        out.write(",".join(["client", "cohort", *(csv_field(n) for n in names)]) + "\n")
        chunk: list[tuple[int, list[str]]] = []
        index = 0
        for line, cells in rows:
            if len(cells) != width:
                raise ReportFormatError(f"expected {width} comma-separated fields ({shown}), found {len(cells)}",
                                        path=name, line=line)
            if not cells[0]:
                raise ReportFormatError("expected a client id, found an empty field", path=name, line=line)
            chunk.append((line, cells))
            if len(chunk) == CHUNK_ROWS:
                written += _encode_chunk(out, chunk, names, booleans, params, key, seed, index, name)
                chunk, index = [], index + 1
        if chunk:
            written += _encode_chunk(out, chunk, names, booleans, params, key, seed, index, name)
    return written


def _encode_chunk(out: Any, chunk: list[tuple[int, list[str]]], names: list[str], booleans: Sequence[str],
                  params: Params, key: bytes, seed: int | None, index: int, source: str) -> int:
    from ..encoder import encode_clients
    from ..exceptions import InvalidParameterError

    clients = [cells[0] for _, cells in chunk]
    columns = []
    cohorts = np.zeros(0, dtype=np.int64)
    for j, var in enumerate(names):
        values = [cells[j + 1] for _, cells in chunk]
        boolean = var in booleans
        rng = None if seed is None else np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(index, j)))
        try:
            batch = encode_clients(boolean_params(params) if boolean else params, key, clients, values, rng=rng,
                                   variable=var, boolean=boolean)
        except InvalidParameterError as exc:
            text = str(exc)
            at = text.rfind("at index ")
            if boolean and at >= 0:
                i = int(text[at + 9:].split(".")[0])
                raise ReportFormatError(f"expected a boolean (1, 0, true or false) for {var!r}, found {excerpt(values[i])}",
                                        path=source, line=chunk[i][0]) from None
            raise
        cohorts = batch.cohorts  # the same for every variable: derived from the client's secret
        columns.append(batch.bitstrings())
    names_out = [csv_field(c) for c in clients]
    lines = [",".join([c, str(h), *(col[i] for col in columns)])
             for i, (c, h) in enumerate(zip(names_out, cohorts.tolist()))]
    out.write("\n".join(lines) + "\n")
    return len(chunk)
