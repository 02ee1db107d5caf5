"""Reports CSV files: :func:`iter_reports`, :func:`read_reports` and :func:`write_reports` own the format.

Two layouts are read, and the header line decides which: ours, ``client,cohort,irr``
(what :func:`write_reports` and ``rappor encode`` write), and google/rappor's
simulation output, ``client,cohort,bloom,prr,irr``.  Only the cohort and the IRR are
read; the IRR is a google/rappor bit string (character 0 is bit ``k - 1``).  The file is
read exactly as the csv module reads it, but vectorized over blocks of raw bytes
(numpy); only rows around a quote, NUL or lone CR go through the csv module
(:mod:`rappor._util.csv_blocks`).  Rows are written by :func:`report_rows`, the one writer of
the format (also used by :func:`rappor.encode_file`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np
import numpy.typing as npt

from .._util.bits import bitstring_codes_to_bits, pack_bits
from .._util.csv_blocks import PlainBlock, Record, iter_csv_blocks
from .._util.excerpt import excerpt
from .._util.csv_text import csv_field
from .._util.inputs import decode_line, open_input_binary
from .._util.outputs import atomic_output
from .._util.paths import display_name, PathLike
from .._util.keyfile import looks_like_key_file, not_a_key_file_error
from .._util.rejects import OnError, RejectedRow, RejectSink, check_on_error
from .._util.validation import check_int
from ..exceptions import InvalidParameterError, ReportFormatError
from ..params import Params
from ..client._reports import ReportBatch
from ._parquet import PARQUET_MAGIC

__all__ = ["HEADER", "iter_reports", "read_reports", "report_rows", "write_reports"]

#: The header :func:`write_reports` writes.
HEADER = "client,cohort,irr\n"

_LAYOUTS: dict[tuple[str, ...], str] = {
    ("client", "cohort", "irr"): "rappor",
    ("client", "cohort", "bloom", "prr", "irr"): "google/rappor",
}
_EXPECTED_HEADERS = "'client,cohort,irr' or 'client,cohort,bloom,prr,irr'"
_COHORT_COLUMN = 1  # in both layouts; the IRR is always the last column
_MAX_COHORT_DIGITS = 10  # num_cohorts <= 2**32
_BLOCK_BYTES = 1 << 24
#: Longest client id a report row may have (bounds the memory an unclosed quote can take).
_MAX_CLIENT_BYTES = 1 << 26
#: Rows parsed by the csv module are packed into a batch every this many (bounds their memory).
_PENDING_ROWS = 1 << 16
DEFAULT_CHUNK_SIZE = 1 << 20


def _max_record_bytes(num_bloombits: int) -> int:
    """Longest report row: a client id, a cohort and up to three bit strings (google's layout)."""
    return _MAX_CLIENT_BYTES + 3 * num_bloombits + 64


def _check_header(cells: list[str], raw: bytes, error: str | None, name: str, line: int) -> int:
    """Check the header record (its fields, its bytes); return the column count."""
    if raw.startswith(PARQUET_MAGIC):
        msg = (f"expected the header {_EXPECTED_HEADERS}, found a Parquet file (Parquet is read by seeking: "
               f"give a regular file or a directory, not a pipe)")
        raise ReportFormatError(msg, path=name, line=line)
    text = decode_line(raw, name, line)  # a header must be UTF-8 (names the byte otherwise)
    if error is not None:
        raise ReportFormatError(f"expected the header {_EXPECTED_HEADERS}, found {excerpt(text)} ({error})",
                                path=name, line=line)
    if not cells:
        msg = f"expected the header {_EXPECTED_HEADERS}, found an empty line"
        raise ReportFormatError(msg, path=name, line=line)
    if tuple(cell.strip().lower() for cell in cells) not in _LAYOUTS:
        if looks_like_key_file(raw):
            raise not_a_key_file_error(name, "a reports file")
        msg = f"expected the header {_EXPECTED_HEADERS}, found {excerpt(text)}"
        raise ReportFormatError(msg, path=name, line=line)
    return len(cells)


def _check_cells(cells: list[str], params: Params, ncols: int, name: str, lineno: int) -> tuple[int, str]:
    """Check the fields of one data row; returns ``(cohort, irr)`` or raises."""
    k, m = params.num_bloombits, params.num_cohorts
    if len(cells) != ncols:
        layout = ",".join(next(h for h in _LAYOUTS if len(h) == ncols))
        msg = f"expected {ncols} comma-separated columns ({layout}), found {len(cells)}"
        raise ReportFormatError(msg, path=name, line=lineno)
    cohort_text, irr = cells[_COHORT_COLUMN], cells[-1]
    # ASCII digits only (str.isdigit alone also takes '²' and other digits).
    if (not 0 < len(cohort_text) <= _MAX_COHORT_DIGITS or not cohort_text.isascii() or not cohort_text.isdigit()
            or int(cohort_text) >= m):
        msg = f"expected a cohort, an integer in [0, {m - 1}], found {excerpt(cohort_text)}"
        if cohort_text.isascii() and cohort_text.isdigit() and len(cohort_text) <= _MAX_COHORT_DIGITS:
            msg += (f" (reports of more than {m} cohorts: discovery reports carry slot x cohorts per slot + cohort, "
                    "and are read with the wire parameters, 'rappor plan --discovery-wire-params-out')")
        raise ReportFormatError(msg, path=name, line=lineno)
    if len(irr) != k:
        msg = (f"expected an irr bit string of k = {k} characters, found {len(irr)} characters "
               f"(were the reports made with other parameters?)")
        raise ReportFormatError(msg, path=name, line=lineno)
    if irr.strip("01"):
        bad = next(i for i, ch in enumerate(irr) if ch not in "01")
        msg = f"expected only '0' and '1' in the irr bit string, found {irr[bad]!r} at character {bad + 1}"
        raise ReportFormatError(msg, path=name, line=lineno)
    return int(cohort_text), irr


def _parse_row(text: str, params: Params, ncols: int, name: str, lineno: int) -> tuple[int, str]:
    """Check one line of a plain block (no quote, NUL or lone CR: its fields are the text between commas)."""
    return _check_cells(text.split(","), params, ncols, name, lineno)


def _line_text(data: npt.NDArray[np.uint8], start: int, end: int) -> str:
    return data[start:end].tobytes().decode("utf-8", errors="replace")


def _reject_or_raise(error: ReportFormatError, text: str, rejects: RejectSink | None) -> None:
    """Raise ``error``, or with a ``rejects`` sink record the row there (clipped, see :mod:`rappor._util.rejects`)."""
    if rejects is None:
        raise error
    rejects.append(RejectedRow(path=error.path or "", line=error.line or 0, reason=error.message, text=text))


def _plain_row(text: str, params: Params, ncols: int, name: str, lineno: int,
               rejects: RejectSink | None) -> tuple[int, str] | None:
    """:func:`_parse_row`, except that with a ``rejects`` sink a bad row is recorded there (-> ``None``)."""
    try:
        return _parse_row(text, params, ncols, name, lineno)
    except ReportFormatError as exc:
        _reject_or_raise(exc, text, rejects)
        return None


def _record_row(record: Record, params: Params, ncols: int, name: str,
                rejects: RejectSink | None) -> tuple[int, str] | None:
    """Check a record parsed by the csv module; ``None`` for a blank or rejected one."""
    if record.error is not None:
        error = ReportFormatError(f"expected a CSV row, found {excerpt(record.text)} ({record.error})",
                                  path=name, line=record.line)
        _reject_or_raise(error, record.text, rejects)
        return None
    if not record.cells:
        return None
    try:
        return _check_cells(record.cells, params, ncols, name, record.line)
    except ReportFormatError as exc:
        _reject_or_raise(exc, record.text, rejects)
        return None


def _parse_block(data: npt.NDArray[np.uint8], params: Params, ncols: int, name: str,
                 first_lineno: int, rejects: RejectSink | None = None,
                 ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint8]]:
    """Parse the lines of a plain block (``data`` ends with ``\\n``) into cohorts and ``(n, k)`` bits.

    The block has no quote, NUL or lone CR (:class:`rappor._util.csv_blocks.PlainBlock`), so
    its rows are its lines and their fields the text between commas; numpy checks them
    all at once.  Blank lines are skipped.  Any bad line is re-parsed by
    :func:`_parse_row`, which raises the error for it; with a ``rejects`` sink, bad
    lines are appended there instead and left out.

    Whole blocks are parsed with numpy (commas found at once, digits and bits gathered
    by index) rather than row by row with the csv module: 200,000 rows at k=32 take 0.04
    CPU-s against 0.19 (about 5x; ``python benchmarks/hand_written.py``, on a quiet 2-core
    machine, 2026-11-24).
    """
    k, m = params.num_bloombits, params.num_cohorts
    newlines = np.flatnonzero(data == 10)
    n_lines = newlines.size
    starts = np.empty(n_lines, dtype=np.int64)
    starts[:1] = 0
    starts[1:] = newlines[:-1] + 1
    ends = newlines.astype(np.int64)
    ends -= (ends > starts) & (data[np.maximum(ends - 1, 0)] == 13)  # CRLF
    keep = np.flatnonzero(ends > starts)
    starts, ends = starts[keep], ends[keep]

    commas = np.flatnonzero(data == 44)
    before_end = np.searchsorted(commas, ends)
    first_comma = np.searchsorted(commas, starts)
    bad = (before_end - first_comma) != ncols - 1
    cols = np.minimum(first_comma[:, None] + np.arange(ncols - 1), max(commas.size - 1, 0))
    comma_pos = commas[cols] if commas.size else np.zeros((starts.size, ncols - 1), dtype=np.int64)

    # Cohort: right-aligned digits between the first two commas (width = longest field).
    c_start, c_end = comma_pos[:, _COHORT_COLUMN - 1] + 1, comma_pos[:, _COHORT_COLUMN]
    c_len = c_end - c_start
    bad |= (c_len < 1) | (c_len > _MAX_COHORT_DIGITS)
    width = int(np.clip(c_len.max(initial=1), 1, _MAX_COHORT_DIGITS))
    offsets = np.arange(-width, 0)
    digits = np.take(data, c_end[:, None] + offsets, mode="clip") - np.uint8(48)
    digits[offsets < -c_len[:, None]] = 0
    bad |= (digits > 9).any(axis=1)
    cohorts = digits.astype(np.int64) @ (10 ** np.arange(width - 1, -1, -1, dtype=np.int64))
    bad |= cohorts >= m

    # IRR: the last column, exactly k characters of '0'/'1': the k bytes from its start,
    # gathered as windows of the block (O(k) per row), then put in bit order.
    i_start = comma_pos[:, -1] + 1
    bad |= (ends - i_start) != k
    if data.size >= k:
        windows = np.lib.stride_tricks.sliding_window_view(data, k)
        bits = bitstring_codes_to_bits(windows[np.minimum(i_start, data.size - k)])
    else:  # no line can hold k characters
        bits = np.full((starts.size, k), 2, dtype=np.uint8)
    bad |= (bits > 1).any(axis=1)

    if bad.any():
        for i in np.flatnonzero(bad).tolist():
            lineno = first_lineno + int(keep[i])
            # Raises (or rejects) with the message for this line.
            if _plain_row(_line_text(data, int(starts[i]), int(ends[i])), params, ncols, name, lineno,
                          rejects) is not None:  # pragma: no cover - both checks refuse the same rows
                raise ReportFormatError("expected a well-formed report row", path=name, line=lineno)
        return cohorts[~bad], bits[~bad]
    return cohorts, bits


def _header_and_rest(item: PlainBlock | Record, name: str) -> tuple[int, PlainBlock | None]:
    """Check the header, the first record of the file; return its column count and the rest of ``item``."""
    if isinstance(item, Record):
        return _check_header(item.cells, item.raw, item.error, name, item.line), None
    end_of_line = item.buffer.index(b"\n", item.start, item.end) + 1
    raw = item.buffer[item.start:end_of_line]
    text = raw.rstrip(b"\r\n").decode("utf-8", errors="replace")
    ncols = _check_header(text.split(",") if text else [], raw, None, name, item.first_line)
    if end_of_line == item.end:
        return ncols, None
    return ncols, PlainBlock(item.buffer, end_of_line, item.end, item.first_line + 1)


def iter_reports(path: PathLike, params: Params, *, chunk_size: int = DEFAULT_CHUNK_SIZE,
                 progress: Callable[[int], None] | None = None, on_error: OnError = "raise",
                 rejects: RejectSink | None = None) -> Iterator[ReportBatch]:
    """Read a reports CSV in chunks of at most ``chunk_size`` reports.

    Memory stays bounded by the chunk and a 16 MiB read block (a row may be longer
    than a block, up to 64 MiB plus its bit strings) however large the file is.
    Standard input, pipes and FIFOs are read once, front to back.  See
    :func:`read_reports` for the accepted formats.

    Parameters
    ----------
    path : str or os.PathLike
        The file, or ``"-"`` for standard input.
    params : Params
        The parameters the reports must have been made with.
    chunk_size : int, default=1048576
        Largest number of reports per yielded batch.
    progress : callable or None, default=None
        Called with the number of bytes read after each block (for progress bars).
    on_error : {"raise", "skip"}, default="raise"
        ``"raise"`` stops at the first bad data row.  ``"skip"`` leaves bad data rows
        out and appends a :class:`rappor._util.rejects.RejectedRow` (file, line, reason,
        text) for each to ``rejects``; a bad header still raises.
    rejects : list or None, default=None
        Where skipped rows go (anything with ``append``); required with ``"skip"``.

    Yields
    ------
    ReportBatch

    Raises
    ------
    ReportFormatError
        At the first bad line (with ``on_error="raise"``), naming the file and line.
    RapporIOError
        If the file cannot be opened or read.
    """
    chunk_size = check_int(chunk_size, "chunk_size", "iter_reports", low=1)
    sink = check_on_error(on_error, rejects, "iter_reports")
    name = display_name(path)
    k = params.num_bloombits
    ncols = 0
    pending: list[tuple[int, str]] = []  # rows parsed by the csv module, in file order

    def flush() -> ReportBatch:
        batch = ReportBatch.from_bitstrings(params, np.array([c for c, _ in pending], dtype=np.int64),
                                            [irr for _, irr in pending])
        pending.clear()
        return batch

    with open_input_binary(path) as fh:
        items = iter_csv_blocks(fh, name, block_bytes=_BLOCK_BYTES,
                                max_record_bytes=_max_record_bytes(k), progress=progress)
        for item in items:
            rest: PlainBlock | Record | None = item
            if not ncols:
                ncols, rest = _header_and_rest(item, name)
            if rest is None:
                continue
            if isinstance(rest, Record):
                row = _record_row(rest, params, ncols, name, sink)
                if row is not None:
                    pending.append(row)
                    if len(pending) >= min(chunk_size, _PENDING_ROWS):
                        yield flush()
                continue
            if pending:
                yield flush()
            data = np.frombuffer(rest.buffer, dtype=np.uint8, count=rest.end - rest.start, offset=rest.start)
            cohorts, bits = _parse_block(data, params, ncols, name, rest.first_line, sink)
            for lo in range(0, cohorts.size, chunk_size):
                yield ReportBatch(params=params, cohorts=cohorts[lo : lo + chunk_size],
                                  words=pack_bits(bits[lo : lo + chunk_size].reshape(-1, k)))
    if not ncols:
        raise ReportFormatError(f"expected the header {_EXPECTED_HEADERS}, found an empty file", path=name)
    if pending:
        yield flush()


def read_reports(path: PathLike, params: Params, *, chunk_size: int = DEFAULT_CHUNK_SIZE,
                 on_error: OnError = "raise", rejects: RejectSink | None = None) -> ReportBatch:
    """Read a whole reports CSV into one :class:`ReportBatch`.

    Two layouts are accepted; the header line decides which:

    * ours, ``client,cohort,irr``;
    * google/rappor's simulation output, ``client,cohort,bloom,prr,irr``.

    Only ``cohort`` (0-based, in ``[0, num_cohorts)``) and ``irr`` (a string of
    ``num_bloombits`` characters ``0``/``1``, character 0 = bit ``k - 1``) are used.
    A UTF-8 byte-order mark, CRLF line endings and blank lines are accepted.  The file
    is read exactly as the csv module reads it: a quoted field may hold commas, quotes
    and line breaks (a client id that spells a report inside quotes stays one id), and
    an error names the line where its record starts.  Parsing is vectorized over blocks
    of the file (numpy over the raw bytes); only rows around a quote, NUL or lone CR go
    through the csv module (:mod:`rappor._util.csv_blocks`).

    Parameters
    ----------
    path : str or os.PathLike
        The file, or ``"-"`` for standard input.
    params : Params
        The parameters the reports must have been made with; a bit string of any other
        length is an error (a client configured with another ``k`` is caught).
    chunk_size : int, default=1048576
        Reports parsed per step (see :func:`iter_reports`).
    on_error : {"raise", "skip"}, default="raise"
    rejects : list or None, default=None
        See :func:`iter_reports`: with ``"skip"``, bad data rows are left out and
        recorded in ``rejects``.

    Returns
    -------
    ReportBatch

    Raises
    ------
    ReportFormatError
        For an empty file, a missing or unknown header, or a row with the wrong number
        of columns, a cohort that is not an integer in ``[0, m)``, or a bit string of
        the wrong length or with characters other than ``0``/``1``; the message names
        the file and line and says what was expected and what was found.
    RapporIOError
        If the file cannot be opened or read.
    """
    batches = list(iter_reports(path, params, chunk_size=chunk_size, on_error=on_error, rejects=rejects))
    if not batches:
        return ReportBatch(params=params, cohorts=np.zeros(0, dtype=np.int64),
                           words=np.zeros((0, params.num_words), dtype=np.uint64))
    if len(batches) == 1:
        return batches[0]
    return ReportBatch(params=params, cohorts=np.concatenate([b.cohorts for b in batches]),
                       words=np.concatenate([b.words for b in batches]))


def write_reports(path: PathLike, batch: ReportBatch, client_ids: Sequence[str] | None = None) -> None:
    """Write reports as our ``client,cohort,irr`` CSV, atomically.

    Parameters
    ----------
    path : str or os.PathLike
        Target file, or ``"-"`` for standard output.
    batch : ReportBatch
    client_ids : sequence of str or None, default=None
        One identifier per report (quoted CSV-style when needed); ``None`` writes
        ``c1, c2, ...`` as google/rappor's simulator does.

    Raises
    ------
    InvalidParameterError
        If ``client_ids`` does not have one entry per report.
    """
    n = len(batch)
    if client_ids is None:
        ids: Sequence[str] = [f"c{i}" for i in range(1, n + 1)]
    else:
        ids = [str(c) for c in client_ids]
        if len(ids) != n:
            msg = f"The 'client_ids' parameter of write_reports must have {n} entries. Got {len(ids)} instead."
            raise InvalidParameterError(msg)
    with atomic_output(path) as fh:
        fh.write(HEADER)
        step = DEFAULT_CHUNK_SIZE
        for lo in range(0, n, step):
            part = ReportBatch(params=batch.params, cohorts=batch.cohorts[lo : lo + step],
                               words=batch.words[lo : lo + step])
            fh.write(report_rows(ids[lo : lo + step], part))


_SPECIAL = frozenset(',"\r\n')


def report_rows(client_ids: Sequence[str], batch: ReportBatch) -> str:
    """The data rows of ``batch`` as our reports CSV writes them: ``client,cohort,irr``, one line each.

    Parameters
    ----------
    client_ids : sequence of str
        One identifier per report, in order.
    batch : ReportBatch

    Returns
    -------
    str
        ``len(batch)`` lines, each ending with ``\n`` (no header: see :data:`HEADER`).
    """
    # Ids need quoting only if one holds a comma, quote or line break: checked once for
    # the whole batch.  csv_field then also quotes ids with white space at an edge and a
    # lone CR (which csv.writer would leave bare).
    names = client_ids if _SPECIAL.isdisjoint("".join(client_ids)) else [csv_field(c) for c in client_ids]
    return "".join(map("{},{},{}\n".format, names, batch.cohorts.tolist(), batch.bitstrings()))
