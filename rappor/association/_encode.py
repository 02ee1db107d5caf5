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
import io
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from .._io import PathLike, atomic_output, csv_field, display_name, read_input_bytes
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


def _rows(text: str, name: str) -> Iterator[tuple[int, list[str]]]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    start = 1
    try:
        for cells in reader:
            line = start
            start = reader.line_num + 1
            if not cells or cells == [""]:
                continue
            yield line, cells
    except csv.Error as exc:
        raise ReportFormatError(f"malformed CSV: {exc}", path=name, line=reader.line_num) from None


def encode_multi_file(path: PathLike, output: PathLike, params: Params, key: bytes, booleans: Sequence[str],
                      seed: int | None) -> int:
    """Encode a ``client,<var1>,<var2>,...`` file; returns the number of clients written."""
    name = display_name(path)
    raw = read_input_bytes(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ReportFormatError(f"expected UTF-8 text, found the byte 0x{raw[exc.start]:02x}", path=name,
                                line=raw[:exc.start].count(b"\n") + 1) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    rows = _rows(text, name)
    try:
        _, header = next(rows)
    except StopIteration:
        raise ReportFormatError("expected a header 'client,<variable>,<variable>...', found an empty file",
                                path=name) from None
    names = [c.strip() for c in header[1:]]
    if len(set(names)) != len(names) or any(not n for n in names):
        raise ReportFormatError(f"expected distinct, non-empty variable names in the header, found {header}",
                                path=name, line=1)
    unknown = [b for b in booleans if b not in names]
    if unknown:
        raise ReportFormatError(f"--bool {unknown[0]!r} is not a column of the header ({','.join(header)})",
                                path=name, line=1)
    width = len(header)
    written = 0
    with atomic_output(output) as out:
        out.write(",".join(["client", "cohort", *(csv_field(n) for n in names)]) + "\n")
        chunk: list[tuple[int, list[str]]] = []
        index = 0
        for line, cells in rows:
            if len(cells) != width:
                raise ReportFormatError(f"expected {width} comma-separated fields ({','.join(header)}), found "
                                        f"{len(cells)}", path=name, line=line)
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
                raise ReportFormatError(f"expected a boolean (1, 0, true or false) for {var!r}, found {values[i]!r}",
                                        path=source, line=chunk[i][0]) from None
            raise
        cohorts = batch.cohorts  # the same for every variable: derived from the client's secret
        columns.append(batch.bitstrings())
    names_out = [csv_field(c) for c in clients]
    lines = [",".join([c, str(h), *(col[i] for col in columns)])
             for i, (c, h) in enumerate(zip(names_out, cohorts.tolist()))]
    out.write("\n".join(lines) + "\n")
    return len(chunk)
