"""The encoder's input, a ``client,value`` CSV: its readers and its writer own the format.

:func:`iter_client_values` and :func:`read_client_values` read it, :func:`write_client_values`
writes it.  One row per report to make (a client may appear several times): the client's id,
from which its secret is derived, and the value it reports.  This is what ``rappor
encode`` and :func:`rappor.encode_file` read.

The file is read through :func:`rappor._util.csv_blocks.iter_csv_blocks` in blocks of
:data:`BLOCK_BYTES`, so memory is bounded by the block (and the chunk of rows being
encoded), not by the input (the whole input used to be held, about
230 bytes a row).  The rows are exactly those of the csv module in strict mode on the
whole file; fields are taken exactly (RFC 4180: a space is part of a field), because
values are hashed exactly; only the header tolerates spaces and quotes around its
names.  Blocks without quotes are split at C speed; everything else goes through the
csv module, record by record.

Several variables per client (association analysis, ``docs/association.md``) use the
same format with more value columns, ``client,NAME1,NAME2,...``, read by
:func:`iter_client_variables` with the same checks, rejects and memory bound.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from .._util.csv_blocks import PlainBlock, Record, iter_csv_blocks
from .._util.excerpt import clip, excerpt
from .._util.csv_text import csv_field
from .._util.inputs import open_input_binary
from .._util.outputs import atomic_output
from .._util.paths import display_name, PathLike
from .._util.keyfile import looks_like_key_file, not_a_key_file_error
from .._util.rejects import OnError, RejectedRow, RejectSink, check_on_error
from .._util.validation import check_int
from ..exceptions import InvalidParameterError, ReportFormatError

__all__ = ["iter_client_values", "iter_client_variables", "iter_rows", "read_client_values", "write_client_values"]

#: Bytes read at a time (memory per block: about 10 times this in Python strings).
BLOCK_BYTES = 1 << 20
#: Longest row (a longer one, e.g. an unclosed quote, is an error rather than a memory blow-up).
MAX_ROW_BYTES = 1 << 26

_HEADER = ["client", "value"]

#: Rows in file order, grouped: ``(line numbers, clients, value columns)``.
_Group = tuple[Sequence[int], list[str], list[list[str]]]

_VARIABLES_HEADER = "'client,NAME1,NAME2,...'"
#: The texts of a boolean column (after stripping and lower-casing), as
#: :func:`rappor.client.encode_clients` reads them with ``boolean=True``.
BOOLEAN_TEXTS = frozenset({"1", "0", "true", "false"})


def _is_boolean(text: str) -> bool:
    return text in BOOLEAN_TEXTS or text.strip().lower() in BOOLEAN_TEXTS


def _check_header(row: list[str], raw: bytes, name: str, line: int, variables: bool) -> list[str]:
    """Check the header; return the names of its value columns."""
    cells = [cell.strip().strip('"') for cell in row]
    if variables:
        names = cells[1:]
        reserved = [n for n in names if n in ("client", "cohort")]
        if reserved:  # the reports have their own 'client' and 'cohort' columns: two columns of one name
            raise ReportFormatError(f"expected variable names other than 'client' and 'cohort' (the reports' own "
                                    f"columns), found {reserved[0]!r} in the header {excerpt(','.join(row))}",
                                    path=name, line=line)
        if cells[:1] == ["client"] and len(names) >= 2 and all(names) and len(set(names)) == len(names):
            return names
        expected = f"the header {_VARIABLES_HEADER} (two or more distinct variable names)"
    elif cells == _HEADER:
        return cells[1:]
    else:
        expected = "the header 'client,value'"
    if looks_like_key_file(raw):
        raise not_a_key_file_error(name, "a 'client,value' input file")
    raise ReportFormatError(f"expected {expected}, found {excerpt(','.join(row))}", path=name, line=line)


def _row_error(row: list[str], name: str, line: int, header: Sequence[str]) -> ReportFormatError | None:
    """The error of a parsed data row, or None if it has the header's fields and a client."""
    if len(row) != len(header):
        return ReportFormatError(f"expected {len(header)} comma-separated fields ({clip(','.join(header))}), "
                                 f"found {len(row)}", path=name, line=line)
    if not row[0]:
        return ReportFormatError("expected a client id, found an empty field", path=name, line=line)
    return None


def _utf8_error(raw: bytes, name: str, line: int) -> ReportFormatError | None:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return ReportFormatError(f"expected UTF-8 text, found the byte 0x{raw[exc.start]:02x}", path=name, line=line)
    return None


class _Reader:
    """The state of one pass over the input: header seen or not, where bad rows go."""

    def __init__(self, name: str, rejects: RejectSink | None, variables: bool = False,
                 booleans: Sequence[str] = ()) -> None:
        self.name = name
        self.rejects = rejects
        self.variables = variables
        self.booleans = list(booleans)
        self.boolean_fields: list[int] = []  # field index of every boolean column
        self.header_seen = False
        self.header: list[str] = list(_HEADER)

    def set_header(self, row: list[str], raw: bytes, line: int) -> None:
        """Check the header row and take its names."""
        self.header = ["client", *_check_header(row, raw, self.name, line, self.variables)]
        unknown = [b for b in self.booleans if b not in self.header[1:]]
        if unknown:
            raise ReportFormatError(f"the boolean column {unknown[0]!r} is not in the header "
                                    f"({','.join(self.header)})", path=self.name, line=line)
        self.boolean_fields = [self.header.index(b, 1) for b in self.booleans]
        self.header_seen = True

    def boolean_error(self, row: list[str], line: int) -> ReportFormatError | None:
        """The error of a row whose boolean column does not hold a boolean, or None."""
        for j in self.boolean_fields:
            if not _is_boolean(row[j]):
                return ReportFormatError(f"expected a boolean (1, 0, true or false) for {self.header[j]!r}, found "
                                         f"{excerpt(row[j])}", path=self.name, line=line)
        return None

    def booleans_ok(self, group: _Group) -> bool:
        """Whether every boolean column of a group holds booleans."""
        return all(all(map(_is_boolean, group[2][j - 1])) for j in self.boolean_fields)

    @property
    def width(self) -> int:
        """Fields per row (the header's)."""
        return len(self.header)

    def bad(self, error: ReportFormatError, text: str) -> None:
        """Reject the row when skipping (and past the header); raise otherwise."""
        if self.rejects is None or not self.header_seen:
            raise error
        self.rejects.append(RejectedRow(path=self.name, line=error.line or 0, reason=error.message, text=text))

    def record(self, rec: Record) -> tuple[int, list[str]] | None:
        """The row of a record parsed by the csv module, or None (blank, header or rejected)."""
        if rec.error is not None:
            self.bad(ReportFormatError(f"malformed CSV: {rec.error}", path=self.name, line=rec.line), rec.text)
            return None
        if not rec.cells or rec.cells == [""]:
            return None
        try:
            rec.raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = rec.line_of(exc.start)
            msg = f"expected UTF-8 text, found the byte 0x{rec.raw[exc.start]:02x}"
            self.bad(ReportFormatError(msg, path=self.name, line=line), rec.text)
            return None
        return self.cells(rec.cells, rec.line, rec.text, rec.raw)

    def cells(self, row: list[str], line: int, text: str, raw: bytes) -> tuple[int, list[str]] | None:
        if not self.header_seen:
            self.set_header(row, raw, line)
            return None
        error = _row_error(row, self.name, line, self.header) or self.boolean_error(row, line)
        if error is not None:
            self.bad(error, text)
            return None
        return line, row

    def empty(self) -> tuple[list[int], list[str], list[list[str]]]:
        """A group without rows, with one value column per variable."""
        return [], [], [[] for _ in range(self.width - 1)]

    def plain_lines(self, block: PlainBlock) -> _Group:
        """The rows of a plain block, line by line (blank lines, bad rows, bad bytes, the header)."""
        lines, clients, columns = self.empty()
        data = block.data()
        for number, raw in enumerate(data.split(b"\n")[:-1], start=block.first_line):
            raw = raw[:-1] if raw.endswith(b"\r") else raw
            if not raw:
                continue
            text = raw.decode("utf-8", errors="replace")
            error = _utf8_error(raw, self.name, number)
            if error is not None:
                self.bad(error, text)
                continue
            row = self.cells(text.split(","), number, text, raw)
            if row is not None:
                if len(columns) != self.width - 1:  # the header has just been read
                    columns[:] = [[] for _ in range(self.width - 1)]
                lines.append(row[0])
                clients.append(row[1][0])
                for column, value in zip(columns, row[1][1:]):
                    column.append(value)
        return lines, clients, columns


def _plain_columns(block: PlainBlock, width: int = 2) -> _Group | None:
    """The rows of a plain block split at C speed, if it has no special case; else None.

    "No special case": valid UTF-8, no blank line, and every line ``width - 1`` commas,
    the first after a non-empty client.  Then the rows are the lines, in order, with
    nothing to reject.
    """
    raw = block.data()
    data = np.frombuffer(raw, dtype=np.uint8)
    ends = np.flatnonzero(data == ord("\n"))
    commas = np.flatnonzero(data == ord(","))
    per_line = width - 1
    if commas.size != per_line * ends.size:
        return None
    starts = np.append(0, ends[:-1] + 1)
    # width - 1 commas in every line, strictly inside it (the count of commas before each
    # line's end), the first after a non-empty client (a blank line has no room for one).
    inside = np.searchsorted(commas, ends) == per_line * np.arange(1, ends.size + 1)
    if not (inside.all() and (commas[::per_line] > starts).all()):
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if "\r" in text:
        text = text.replace("\r\n", "\n")  # a plain block has no lone CR
    fields = text[:-1].replace("\n", ",").split(",")
    return (range(block.first_line, block.first_line + ends.size), fields[0::width],
            [fields[j::width] for j in range(1, width)])


def _groups(path: PathLike, rejects: RejectSink | None, reader: _Reader | None = None) -> Iterator[_Group]:
    name = display_name(path)
    reader = _Reader(name, rejects) if reader is None else reader
    lines, clients, columns = reader.empty()  # rows parsed by the csv module, not yet yielded
    with open_input_binary(path) as fh:
        items = iter_csv_blocks(fh, name, strict=True,
                                block_bytes=BLOCK_BYTES, max_record_bytes=MAX_ROW_BYTES)
        for item in items:
            if isinstance(item, Record):
                row = reader.record(item)
                if row is not None:
                    if len(columns) != reader.width - 1:  # the header has just been read
                        columns = [[] for _ in range(reader.width - 1)]
                    lines.append(row[0])
                    clients.append(row[1][0])
                    for column, value in zip(columns, row[1][1:]):
                        column.append(value)
                continue
            if clients:
                yield lines, clients, columns
                lines, clients, columns = reader.empty()
            fast = _plain_columns(item, reader.width) if reader.header_seen else None
            if fast is not None and not reader.booleans_ok(fast):
                fast = None  # a bad boolean: line by line, to name (or reject) its row
            group = fast if fast is not None else reader.plain_lines(item)
            if group[1]:
                yield group
    if not reader.header_seen:
        expected = _VARIABLES_HEADER if reader.variables else "'client,value'"
        raise ReportFormatError(f"expected the header {expected}, found an empty file", path=name)
    if clients:
        yield lines, clients, columns


def iter_rows(path: PathLike, rejects: RejectSink | None = None) -> Iterator[tuple[int, str, str]]:
    """Yield ``(line, client, value)`` for each data row; errors name the file and line.

    With a ``rejects`` sink (``--on-error skip``) a bad data row is appended there as a
    :class:`rappor._util.rejects.RejectedRow` and left out; a bad header is always fatal.
    """
    for lines, clients, (values,) in _groups(path, rejects):
        yield from zip(lines, clients, values)


#: Rows per chunk of :func:`iter_client_values` by default.
DEFAULT_CHUNK_ROWS = 65536


def iter_client_values(path: PathLike, *, chunk_size: int = DEFAULT_CHUNK_ROWS, on_error: OnError = "raise",
                       rejects: RejectSink | None = None) -> Iterator[tuple[list[str], list[str]]]:
    """Read a ``client,value`` CSV in chunks: ``(clients, values)`` of at most ``chunk_size`` rows, in file order.

    The header must be ``client,value`` (spaces or quotes around the names are
    accepted); data fields are taken exactly as the csv module reads them (a space is
    part of a value; quote fields holding commas, quotes or line breaks); every client
    id must be non-empty.  A UTF-8 byte-order mark, CRLF line endings and blank lines
    are accepted.  Memory is bounded by a read block and the chunk, not by the file.

    Parameters
    ----------
    path : str or os.PathLike
        The file, or ``"-"`` for standard input (read once, front to back).
    chunk_size : int, default=65536
        Largest number of rows per chunk.
    on_error : {"raise", "skip"}, default="raise"
        ``"raise"`` stops at the first bad data row.  ``"skip"`` leaves bad data rows out
        and appends a :class:`rappor._util.rejects.RejectedRow` (file, line, reason, text) for
        each to ``rejects``; a bad header still raises.
    rejects : list or None, default=None
        Where skipped rows go (anything with ``append``); required with ``"skip"``.

    Yields
    ------
    (list of str, list of str)
        The clients and the values of the next rows.

    Raises
    ------
    ReportFormatError
        For a missing or wrong header, or (with ``on_error="raise"``) a row without
        exactly two fields, an empty client or bytes that are not UTF-8; the message
        names the file and line.
    RapporIOError
        If the file cannot be opened or read.
    """
    size = check_int(chunk_size, "chunk_size", "iter_client_values", low=1)
    sink = check_on_error(on_error, rejects, "iter_client_values")
    for clients, (values,) in _chunks(_groups(path, sink), size):
        yield clients, values


def _chunks(groups: Iterator[_Group], size: int) -> Iterator[tuple[list[str], list[list[str]]]]:
    """Regroup the rows of ``groups`` into chunks of ``size`` rows (the last one shorter)."""
    clients: list[str] = []
    columns: list[list[str]] = []
    for _, group_clients, group_columns in groups:
        if not columns:
            columns = [[] for _ in group_columns]
        start = 0
        while start < len(group_clients):
            take = min(size - len(clients), len(group_clients) - start)
            clients.extend(group_clients[start:start + take])
            for column, group_column in zip(columns, group_columns):
                column.extend(group_column[start:start + take])
            start += take
            if len(clients) == size:
                yield clients, columns
                clients, columns = [], [[] for _ in group_columns]
    if clients:
        yield clients, columns


def iter_client_variables(path: PathLike, header: list[str], *, booleans: Sequence[str] = (),
                          chunk_size: int = DEFAULT_CHUNK_ROWS, on_error: OnError = "raise",
                          rejects: RejectSink | None = None) -> Iterator[tuple[list[str], list[list[str]]]]:
    """Read a ``client,NAME1,NAME2,...`` CSV (several variables per client) in chunks.

    The same format, checks and memory bound as :func:`iter_client_values`, with two or
    more value columns named by distinct variable names in the header.

    Parameters
    ----------
    path : str or os.PathLike
        The file, or ``"-"`` for standard input.
    header : list
        Receives the variable names (``NAME1``, ``NAME2``, ...) once the header has
        been read: before the first chunk is yielded, or, for a file without data
        rows, when the iterator is exhausted.
    booleans : sequence of str, default=()
        Header names of boolean columns: their values must be ``1``, ``0``, ``true`` or
        ``false`` (any case, spaces around accepted), else the row is bad.
    chunk_size, on_error, rejects
        As :func:`iter_client_values`.

    Yields
    ------
    (list of str, list of list of str)
        The clients of the next rows and one list of values per variable.

    Raises
    ------
    ReportFormatError
        For a missing or bad header (or one without a ``booleans`` name), or (with
        ``on_error="raise"``) a row without one field per header name, an empty client,
        a bad boolean or bytes that are not UTF-8, naming the file and line.
    RapporIOError
        If the file cannot be opened or read.
    """
    size = check_int(chunk_size, "chunk_size", "iter_client_variables", low=1)
    sink = check_on_error(on_error, rejects, "iter_client_variables")
    reader = _Reader(display_name(path), sink, variables=True, booleans=booleans)

    def groups() -> Iterator[_Group]:
        for group in _groups(path, sink, reader):
            if not header:
                header.extend(reader.header[1:])
            yield group
        if not header:
            header.extend(reader.header[1:])

    yield from _chunks(groups(), size)


def read_client_values(path: PathLike, *, on_error: OnError = "raise",
                       rejects: RejectSink | None = None) -> tuple[list[str], list[str]]:
    """Read a whole ``client,value`` CSV: ``(clients, values)``, one entry per row (see :func:`iter_client_values`)."""
    clients: list[str] = []
    values: list[str] = []
    for chunk_clients, chunk_values in iter_client_values(path, on_error=on_error, rejects=rejects):
        clients += chunk_clients
        values += chunk_values
    return clients, values


def write_client_values(path: PathLike, clients: Sequence[str], values: Sequence[str]) -> None:
    """Write a ``client,value`` CSV, atomically (``"-"`` for standard output).

    Fields are quoted where the csv module, and :func:`iter_client_values`, need it to
    read them back exactly (a comma, a quote, a line break, white space at an edge).

    Raises
    ------
    InvalidParameterError
        If the lengths differ, a client id is empty or not a str, or a field cannot be
        written as UTF-8 (a lone surrogate): such a file could not be read back.
    """
    if len(clients) != len(values):
        msg = (f"The 'values' parameter of write_client_values must have the length of clients ({len(clients)}). "
               f"Got {len(values)} instead.")
        raise InvalidParameterError(msg)
    for name, column in (("clients", clients), ("values", values)):
        for i, field in enumerate(column):
            if not isinstance(field, str) or (name == "clients" and not field):
                what = "a non-empty str" if name == "clients" else "a str"
                msg = f"The {name!r} parameter of write_client_values must hold {what}. Got {field!r} at index {i}."
                raise InvalidParameterError(msg)
            try:
                field.encode("utf-8")
            except UnicodeEncodeError:
                msg = (f"The {name!r} parameter of write_client_values must hold text encodable as UTF-8. "
                       f"Got {excerpt(field)} at index {i}.")
                raise InvalidParameterError(msg) from None
    with atomic_output(path) as fh:
        fh.write(",".join(_HEADER) + "\n")
        fh.write("".join(f"{csv_field(c)},{csv_field(v)}\n" for c, v in zip(clients, values)))
