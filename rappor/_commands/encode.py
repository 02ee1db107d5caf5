"""Encode client values into RAPPOR reports.

INPUT is a CSV file with the header ``client,value``, one row per report (a client
may appear several times).  Fields are used exactly as written (a space after a
comma is part of the value); quote fields that contain commas, quotes or newlines.

Each client's secret is derived from the key file and the client id (HMAC-SHA256,
see docs/client.md), so re-running the command gives every client the same cohort
and the same permanent randomized responses; only the instantaneous responses are
fresh.  The output CSV has the header ``client,cohort,irr``, with ``irr`` a
google/rappor bit string (character 0 = bit k-1).

With ``--on-error skip`` bad data rows are left out and written, with their line
numbers and reasons, to a rejects file (see docs/reliability.md).

Create a key with ``rappor keygen -o KEY``.
"""

from __future__ import annotations

import argparse
import collections
import csv
import io
import itertools
import multiprocessing
import os
import re
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

import numpy as np

from .._excerpt import excerpt
from .._io import STDIO, PathLike, atomic_output, display_name, read_input_bytes
from .._rejects import RejectedRow, RejectSink, RejectsWriter, resolve_rejects_path
from .._validation import check_int
from ..exceptions import ReportFormatError
from ..params import Params
from ._common import add_on_error_arguments, add_output_argument, add_params_argument, load_params

NAME = "encode"
HELP = "encode client values into reports (client,value -> client,cohort,irr)"
ORDER = 20

#: Rows encoded per vectorized call (bounds memory: about 100 bytes per row and bit).
CHUNK_ROWS = 65536

_HEADER = ["client", "value"]
_SPECIAL = frozenset(',"\r\n')
_UNDECODABLE = re.compile("[\udc80-\udcff]")
_LINE_BREAK = re.compile("\r\n|\r|\n")  # where io.StringIO(newline="") ends lines


def configure(parser: argparse.ArgumentParser) -> None:
    """Register the arguments of ``rappor encode``."""
    parser.add_argument("input", nargs="?", default="-", metavar="INPUT",
                        help="CSV with header 'client,value' ('-' for stdin) [default: stdin]")
    add_params_argument(parser)
    parser.add_argument("--key-file", required=True, metavar="KEY",
                        help="key file (hex text from 'rappor keygen'); client secrets are derived from it")
    add_output_argument(parser, help_text="output CSV 'client,cohort,irr' ('-' for stdout)")
    parser.add_argument("--seed", type=int, default=None, metavar="INT",
                        help="draw the instantaneous noise from numpy's generator with this seed instead of "
                             "the operating system's CSPRNG: reproducible, NOT secure; for tests and "
                             "simulation only")
    add_on_error_arguments(parser, kept="the good rows are encoded")
    parser.add_argument("--jobs", type=int, default=None, metavar="N",
                        help="worker processes for large inputs [default: number of CPUs, at most 8]")


def _rows(path: PathLike, rejects: RejectSink | None = None) -> Iterator[tuple[int, str, str]]:
    """Yield ``(line, client, value)`` for each data row; errors name the file and line.

    With a ``rejects`` sink (``--on-error skip``) a bad data row is appended there as a
    :class:`rappor._rejects.RejectedRow` and left out; a bad header is always fatal.
    """
    return _text_rows(_read_text(path), display_name(path), rejects)


def _read_text(path: PathLike) -> str:
    """The input as text without a BOM; undecodable bytes become lone surrogates (U+DC80..U+DCFF).

    They are checked row by row, so that the first bad row is reported (or rejected)
    whatever is wrong with it.
    """
    text = read_input_bytes(path).decode("utf-8", errors="surrogateescape")
    return text[1:] if text.startswith("\ufeff") else text


def _text_rows(text: str, name: str, rejects: RejectSink | None) -> Iterator[tuple[int, str, str]]:
    if _is_plain(text):
        return _plain_rows(text, name, rejects)
    return _csv_rows(text, name, rejects)


def _columns(text: str) -> tuple[list[str], list[str]] | None:
    """The clients and values of a file without any special case, split at C speed; else None.

    "No special case" means: the header line is exactly ``client,value``; no quote, NUL,
    undecodable byte or lone CR anywhere; and every later line (LF or CRLF ended, no blank
    line) holds one comma after a non-empty client, and fits the csv module's field size
    limit.  Then :func:`_rows` would give the same rows, and nothing to reject.  Returns
    None otherwise, and the caller parses line by line.
    """
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    head, newline, body = text.partition("\n")
    if (not newline or head != "client,value" or not body or '"' in body or "\r" in body or "\0" in body
            or (not body.isascii() and _UNDECODABLE.search(body) is not None)):
        return None
    if body.endswith("\n"):
        body = body[:-1]
    data = np.frombuffer(body.encode("utf-8"), dtype=np.uint8)
    ends = np.append(np.flatnonzero(data == ord("\n")), data.size)
    commas = np.flatnonzero(data == ord(","))
    if commas.size != ends.size:
        return None
    starts = np.append(0, ends[:-1] + 1)
    # As many commas as lines, each strictly inside its own line: exactly one per line.
    if not ((commas > starts).all() and (commas < ends).all()) or (ends - starts).max() > csv.field_size_limit():
        return None
    fields = body.replace("\n", ",").split(",")
    return fields[0::2], fields[1::2]


def _is_plain(text: str) -> bool:
    """True if ``text`` can be split at line breaks and commas with the csv module's result.

    That is: no quote (so no quoted field and no quoting error), no NUL, no undecodable
    byte, and no line longer than the csv module's field size limit.
    """
    if '"' in text or "\0" in text or _UNDECODABLE.search(text) is not None:
        return False
    return max(map(len, _LINE_BREAK.split(text))) <= csv.field_size_limit()


def _plain_rows(text: str, name: str, rejects: RejectSink | None) -> Iterator[tuple[int, str, str]]:
    """:func:`_csv_rows` for text that :func:`_is_plain` accepts: one record per line, fields split at commas."""
    lines = _LINE_BREAK.split(text)
    header_seen = False
    for number, line in enumerate(lines, 1):
        if not line:
            continue
        row = line.split(",")
        if header_seen:
            error = _row_error(row, name, number)
            if error is None:
                yield number, row[0], row[1]
            elif rejects is None:
                raise error
            else:
                rejects.append(RejectedRow(path=name, line=number, reason=error.message, text=line))
        else:
            _check_header(row, name, number)
            header_seen = True
    if not header_seen:
        raise ReportFormatError("expected the header 'client,value', found an empty file", path=name)


def _check_header(row: list[str], name: str, line: int) -> None:
    if [cell.strip().strip('"') for cell in row] != _HEADER:
        raise ReportFormatError(f"expected the header 'client,value', found {excerpt(','.join(row))}", path=name, line=line)


def _row_error(row: list[str], name: str, line: int) -> ReportFormatError | None:
    """The error of a parsed data row, or None if it is a good ``client,value`` row."""
    if len(row) != 2:
        return ReportFormatError(f"expected 2 comma-separated fields (client,value), found {len(row)}",
                                 path=name, line=line)
    if not row[0]:
        return ReportFormatError("expected a client id, found an empty field", path=name, line=line)
    return None


def _csv_rows(text: str, name: str, rejects: RejectSink | None) -> Iterator[tuple[int, str, str]]:
    """:func:`_rows` by the csv module: quoted fields, undecodable bytes, malformed CSV."""
    consumed: list[str] = []

    def lines() -> Iterator[str]:
        for physical in io.StringIO(text, newline=""):
            consumed.append(physical)
            yield physical

    def bad(exc: ReportFormatError, line: int) -> None:
        # Rejected when skipping (and not the header), raised otherwise.
        if rejects is None or not header_seen:
            raise exc
        row_text = _UNDECODABLE.sub("\ufffd", "".join(consumed)).rstrip("\r\n")
        rejects.append(RejectedRow(path=name, line=line, reason=exc.message, text=row_text))

    # Fields are taken exactly (RFC 4180: spaces are part of a field), because values are
    # hashed exactly; only the header tolerates spaces and quotes around its names.
    reader = csv.reader(lines(), strict=True)
    header_seen = False
    line = 0
    while True:
        consumed.clear()
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            # The reader resumes at the next line after an error.
            bad(ReportFormatError(f"malformed CSV: {exc}", path=name, line=reader.line_num), reader.line_num)
            line = reader.line_num
            continue
        start, line = line + 1, reader.line_num
        if not row or row == [""]:
            continue
        undecodable = _UNDECODABLE.search("".join(consumed))
        if undecodable is not None:
            offset = "".join(consumed)[:undecodable.start()].count("\n")
            message = f"expected UTF-8 text, found the byte 0x{ord(undecodable.group()) - 0xDC00:02x}"
            bad(ReportFormatError(message, path=name, line=start + offset), start + offset)
        elif not header_seen:
            _check_header(row, name, start)
            header_seen = True
        else:
            error = _row_error(row, name, start)
            if error is None:
                yield start, row[0], row[1]
            else:
                bad(error, start)
    if not header_seen:
        raise ReportFormatError("expected the header 'client,value', found an empty file", path=name)


def _chunks(path: PathLike, rejects: RejectSink | None, size: int) -> Iterator[tuple[list[str], list[str]]]:
    """The input's ``(clients, values)`` in chunks of ``size`` rows, in input order."""
    text = _read_text(path)
    columns = _columns(text)
    if columns is not None:
        clients, values = columns
        for start in range(0, len(clients), size):
            yield clients[start : start + size], values[start : start + size]
        return
    clients, values = [], []
    for _, client, value in _text_rows(text, display_name(path), rejects):
        clients.append(client)
        values.append(value)
        if len(clients) == size:
            yield clients, values
            clients, values = [], []
    if clients:
        yield clients, values


def _quote(cell: str) -> str:
    if _SPECIAL.isdisjoint(cell):
        return cell
    return '"' + cell.replace('"', '""') + '"'


def _default_jobs() -> int:
    try:
        return max(1, min(8, len(os.sched_getaffinity(0))))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, min(8, os.cpu_count() or 1))


_WORKER: dict[str, Any] = {}


def _init_worker(params: Params, key: bytes, seed: int | None) -> None:
    _WORKER.update(params=params, key=key, seed=seed)


def _encode_chunk(index: int, clients: list[str], values: list[str]) -> str:
    """Encode one chunk and render its output rows (runs in a worker or inline)."""
    from ..encoder import encode_clients

    seed = _WORKER["seed"]
    # One generator per chunk, keyed by the chunk's index: the output for a given
    # --seed does not depend on --jobs.
    rng = None if seed is None else np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(index,)))
    batch = encode_clients(_WORKER["params"], _WORKER["key"], clients, values, rng=rng)
    # Client ids need quoting only if one holds a comma, quote or line break: checked once.
    names = clients if _SPECIAL.isdisjoint("".join(clients)) else [_quote(c) for c in clients]
    return "".join(map("{},{},{}\n".format, names, batch.cohorts.tolist(), batch.bitstrings()))


def run(args: argparse.Namespace) -> int:
    """Encode INPUT and write ``client,cohort,irr``."""
    from ..encoder import read_key_file

    params = load_params(args)
    key = read_key_file(args.key_file)
    jobs = _default_jobs() if args.jobs is None else check_int(args.jobs, "jobs", "rappor encode", low=1)
    if args.on_error == "raise":
        _encode_file(args, params, key, jobs, None)
        return 0
    rejects_path = resolve_rejects_path(args.output, args.rejects, "reports")
    # Both files are committed only if the whole input was read: a fatal error leaves neither.
    with atomic_output(rejects_path) as fh:
        sink = RejectsWriter(fh)
        written = _encode_file(args, params, key, jobs, sink)
    where = display_name(rejects_path) if rejects_path != STDIO else "<stdout>"
    sys.stderr.write(f"rappor: skipped {sink.count} bad row(s); {written} reports written; "
                     f"rejected rows are in {where}\n")
    return 0


def _encode_file(args: argparse.Namespace, params: Params, key: bytes, jobs: int,
                 rejects: RejectSink | None) -> int:
    """Encode INPUT into OUTPUT (atomically); return the number of reports written.

    Rows are parsed (and rejected) in this process, in input order, so the output and
    the rejects do not depend on ``jobs``.
    """
    chunks = enumerate(_chunks(args.input, rejects, CHUNK_ROWS))
    written = 0
    with atomic_output(args.output) as out:
        head = list(itertools.islice(chunks, 2))
        todo = itertools.chain(head, chunks)
        out.write("client,cohort,irr\n")
        if len(head) < 2 or jobs == 1:
            # One chunk or one job: no worker processes.
            _init_worker(params, key, args.seed)
            try:
                for index, (clients, values) in todo:
                    out.write(_encode_chunk(index, clients, values))
                    written += len(clients)
            finally:
                _WORKER.clear()
            return written
        methods = multiprocessing.get_all_start_methods()
        ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
        with ProcessPoolExecutor(jobs, mp_context=ctx, initializer=_init_worker,
                                 initargs=(params, key, args.seed)) as pool:
            pending: collections.deque[tuple[int, Future[str]]] = collections.deque()
            for index, (clients, values) in todo:
                pending.append((len(clients), pool.submit(_encode_chunk, index, clients, values)))
                if len(pending) >= 2 * jobs:
                    size, future = pending.popleft()
                    out.write(future.result())
                    written += size
            while pending:
                size, future = pending.popleft()
                out.write(future.result())
                written += size
    return written
