"""Reports as Parquet files: this module owns the columnar layout, its readers and its writers.

It reads and writes, streams and aggregates Parquet files of packed reports; pyarrow
is needed only when one of its functions runs (``pip install 'rappor[parquet]'``;
without it a :class:`~rappor.exceptions.MissingDependencyError` names that extra).

File layout (one row per report)
--------------------------------
``cohort``
    ``int32``, dictionary-encoded in the file (at most ``m`` distinct values).
``w0 .. w{W-1}``
    ``int64``, ``W = ceil(k / 64)``: the IRR bits packed little-endian, bit ``j`` is
    ``(w[j // 64] >> (j % 64)) & 1``; bits at or above ``k`` are 0.  The 64 bits are those
    of the ``uint64`` words of :class:`~rappor.ReportBatch` reinterpreted as signed,
    because Spark and many data-lake tools have no unsigned 64-bit type.
``bits`` (alternative to the ``w`` columns)
    ``fixed_size_binary(ceil(k / 8))``: the same bits as bytes, bit ``j`` is
    ``(b[j // 8] >> (j % 8)) & 1``.  Plain ``binary`` values of that length are accepted
    too (Spark writes binary columns that way).

Compression is zstd.  The file's key-value metadata holds ``rappor.params`` (JSON with the
keys ``k, h, m, p, q, f``) and ``rappor.layout`` (JSON naming the bit layout); on read,
parameters that differ from the expected ones raise
:class:`~rappor.exceptions.IncompatibleParamsError`.  Files without that metadata (written
by other tools) are accepted when their columns fit the expected parameters.

Packed columns are what make aggregation fast: list-of-bool columns are 40-55 times slower
to read and hex or 0/1 strings 10-20 times slower (measured).

Reading is streamed in batches of rows, so a file larger than memory is aggregated with a
flat memory profile (:func:`aggregate_parquet`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from .._util.outputs import atomic_output
from .._util.paths import display_name, PathLike, STDIO
from .._util.lazy import import_optional
from .._util.validation import check_int, check_options
from ..collect._aggregate import Aggregate
from ..exceptions import IncompatibleParamsError, InvalidParameterError, RapporError, RapporIOError, ReportFormatError
from ..params import Params, check_same_params
from ..client._reports import ReportBatch

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "ParquetReportWriter",
    "aggregate_parquet",
    "iter_parquet_reports",
    "read_parquet_reports",
    "report_format",
    "write_parquet_reports",
]

#: The first (and last) four bytes of every Parquet file.
PARQUET_MAGIC = b"PAR1"
PARAMS_KEY = b"rappor.params"
LAYOUT_KEY = b"rappor.layout"
LAYOUT_VERSION = 1
DEFAULT_BATCH_SIZE = 1 << 19  # fastest in benchmarks/run.py: the bytes of a batch stay in cache
DEFAULT_ROW_GROUP_SIZE = 1 << 20

Layout = Literal["words", "bits"]


def _pyarrow() -> Any:
    """The ``pyarrow`` module, with ``pyarrow.parquet`` loaded: every use of pyarrow in rappor goes through here.

    Raises
    ------
    MissingDependencyError
        If pyarrow is not installed (an :class:`ImportError` naming the extra to install,
        :func:`rappor._util.lazy.import_optional`).
    """
    import_optional("pyarrow.parquet", "Parquet reports")
    return import_optional("pyarrow", "Parquet reports")


def word_columns(params: Params) -> list[str]:
    """Names of the packed-word columns ``w0 .. w{W-1}`` for ``params``."""
    return [f"w{j}" for j in range(params.num_words)]


def _layout_json(params: Params, layout: Layout) -> bytes:
    k = params.num_bloombits
    if layout == "words":
        desc = {
            "version": LAYOUT_VERSION,
            "columns": ["cohort", *word_columns(params)],
            "bits": f"bit j = (w[j // 64] >> (j % 64)) & 1 for j < {k}; int64 holds the uint64 bits",
        }
    else:
        desc = {
            "version": LAYOUT_VERSION,
            "columns": ["cohort", "bits"],
            "bits": f"fixed_size_binary({(k + 7) // 8}); bit j = (b[j // 8] >> (j % 8)) & 1 for j < {k}",
        }
    return json.dumps(desc, sort_keys=True).encode()


def _schema(params: Params, layout: Layout) -> pa.Schema:
    pa = _pyarrow()
    if layout == "words":
        fields = [pa.field("cohort", pa.int32(), nullable=False)]
        fields += [pa.field(name, pa.int64(), nullable=False) for name in word_columns(params)]
    else:
        nbytes = (params.num_bloombits + 7) // 8
        fields = [pa.field("cohort", pa.int32(), nullable=False), pa.field("bits", pa.binary(nbytes), nullable=False)]
    metadata = {
        PARAMS_KEY: json.dumps(params.as_dict(), sort_keys=True).encode(),
        LAYOUT_KEY: _layout_json(params, layout),
    }
    return pa.schema(fields, metadata=metadata)


def batch_to_arrow(batch: ReportBatch, *, layout: Layout = "words") -> pa.RecordBatch:
    """Convert a :class:`ReportBatch` to an Arrow record batch in the columnar layout."""
    pa = _pyarrow()
    params = batch.params
    schema = _schema(params, layout)
    n = len(batch)
    cohorts = pa.array(batch.cohorts.astype(np.int32), type=pa.int32())
    if layout == "words":
        signed = batch.words.view(np.int64)
        columns = [pa.array(np.ascontiguousarray(signed[:, j]), type=pa.int64()) for j in range(params.num_words)]
    else:
        nbytes = (params.num_bloombits + 7) // 8
        raw = np.ascontiguousarray(batch.words.astype("<u8", copy=False)).view(np.uint8).reshape(n, -1)
        data = np.ascontiguousarray(raw[:, :nbytes]).tobytes()
        columns = [pa.FixedSizeBinaryArray.from_buffers(pa.binary(nbytes), n, [None, pa.py_buffer(data)])]
    return pa.RecordBatch.from_arrays([cohorts, *columns], schema=schema)


class ParquetReportWriter:
    """Write reports to a Parquet file batch by batch; the file appears only when closed cleanly.

    Parameters
    ----------
    path : str or os.PathLike
        Output file.  It is written to a temporary file beside it and renamed into place
        when the writer is closed without error (:func:`rappor._util.outputs.atomic_output`).
    params : Params
        Parameters of every batch written.
    layout : {"words", "bits"}, default="words"
        ``"words"`` writes ``w0..w{W-1}`` int64 columns, ``"bits"`` one fixed-size binary column.
    row_group_size : int, default=1048576
        Rows per Parquet row group (the unit of streaming reads).
    compression : str, default="zstd"
        Parquet compression codec.

    Examples
    --------
    Write reports batch by batch (here two simulated days), then read them back:

    >>> from rappor import Params, Population, simulate
    >>> params = Params(k=16, h=2, m=4, p=0.5, q=0.75, f=0.5)
    >>> days = [simulate(params, Population.zipf(10), 1_000, rng=day) for day in (1, 2)]
    >>> with ParquetReportWriter("reports.parquet", params) as writer:
    ...     for day in days:
    ...         writer.write(day.reports)
    >>> writer.n_rows, len(read_parquet_reports("reports.parquet", params))
    (2000, 2000)
    """

    def __init__(
        self,
        path: PathLike,
        params: Params,
        *,
        layout: Layout = "words",
        row_group_size: int = DEFAULT_ROW_GROUP_SIZE,
        compression: str = "zstd",
    ) -> None:
        check_options(layout, "layout", "ParquetReportWriter", ("words", "bits"))
        check_int(row_group_size, "row_group_size", "ParquetReportWriter", low=1)
        self.path = path
        self.params = params
        self.layout: Layout = layout
        self.row_group_size = int(row_group_size)
        self.compression = compression
        self.n_rows = 0
        self._context: Any = None
        self._writer: Any = None

    def __enter__(self) -> ParquetReportWriter:
        pa = _pyarrow()
        self._context = atomic_output(self.path, binary=True)
        handle = self._context.__enter__()
        try:
            self._writer = pa.parquet.ParquetWriter(
                handle,
                _schema(self.params, self.layout),
                compression=self.compression,
                use_dictionary=["cohort"],
                write_statistics=["cohort"],
            )
        except BaseException as exc:
            self._context.__exit__(type(exc), exc, exc.__traceback__)
            raise
        return self

    def write(self, batch: ReportBatch) -> None:
        """Append a batch (its parameters must equal the writer's)."""
        if self._writer is None:
            raise InvalidParameterError("ParquetReportWriter.write called outside its 'with' block.")
        check_same_params(self.params, batch.params, "The report batch")
        self._writer.write_batch(batch_to_arrow(batch, layout=self.layout), row_group_size=self.row_group_size)
        self.n_rows += len(batch)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        writer, context = self._writer, self._context
        self._writer = self._context = None
        if writer is not None and exc is not None:
            # Close the Parquet writer before the temporary file is removed (else its
            # finalizer writes to a closed file); the file is discarded anyway.
            with contextlib.suppress(Exception):
                writer.close()
        elif writer is not None:
            try:
                writer.close()
            except BaseException as close_exc:
                context.__exit__(type(close_exc), close_exc, close_exc.__traceback__)
                raise
        return bool(context.__exit__(exc_type, exc, tb)) if context is not None else None


def write_parquet_reports(
    path: PathLike,
    batch: ReportBatch,
    *,
    layout: Layout = "words",
    row_group_size: int = DEFAULT_ROW_GROUP_SIZE,
    compression: str = "zstd",
) -> None:
    """Write a batch of reports to a Parquet file, atomically.

    Parameters
    ----------
    path : str or os.PathLike
        Output file; it appears complete or not at all.
    batch : ReportBatch
        The reports; its parameters go into the file's metadata.
    layout : {"words", "bits"}, default="words"
        Packed ``int64`` word columns or one fixed-size binary column (see the module docstring).
    row_group_size : int, default=1048576
        Rows per row group.
    compression : str, default="zstd"
        Parquet compression codec.
    """
    with ParquetReportWriter(
        path, batch.params, layout=layout, row_group_size=row_group_size, compression=compression
    ) as writer:
        writer.write(batch)


# --------------------------------------------------------------------------- reading


def _file_params(metadata: dict[bytes, bytes] | None, source: str) -> Params | None:
    if not metadata or PARAMS_KEY not in metadata:
        return None
    try:
        values = json.loads(metadata[PARAMS_KEY])
        return Params.from_dict(values)
    except (ValueError, KeyError, TypeError) as exc:
        msg = f"the 'rappor.params' metadata is not valid parameters: {exc}"
        raise ReportFormatError(msg, path=source) from None


def check_file_params(metadata: dict[bytes, bytes] | None, params: Params, source: str) -> None:
    """Raise :class:`IncompatibleParamsError` if the file's stored parameters differ from ``params``."""
    found = _file_params(metadata, source)
    if found is not None:
        try:
            check_same_params(params, found, source)
        except IncompatibleParamsError as exc:
            raise IncompatibleParamsError(str(exc)) from None


def report_columns(names: Sequence[str], params: Params, source: str) -> list[str]:
    """The columns to read from a table with column ``names``: cohort plus words or bits."""
    if "cohort" not in names:
        raise ReportFormatError("expected a 'cohort' column", path=source)
    words = word_columns(params)
    if all(name in names for name in words):
        extra = f"w{params.num_words}"
        if extra in names:
            msg = f"found a column {extra!r}: the file holds more than {params.num_bloombits} bits per report"
            raise IncompatibleParamsError(f"{source}: {msg}")
        return ["cohort", *words]
    if "bits" in names:
        return ["cohort", "bits"]
    msg = f"expected columns 'cohort' and {', '.join(repr(w) for w in words)} (or a 'bits' column)"
    raise ReportFormatError(msg, path=source)


def _numpy_column(column: Any, name: str, source: str, first_row: int) -> npt.NDArray[Any]:
    pa = _pyarrow()
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    if column.null_count:
        row = first_row + int(np.flatnonzero(np.asarray(column.is_null()))[0])
        raise ReportFormatError(f"row {row}: column {name!r} is null", path=source)
    if not pa.types.is_integer(column.type):
        raise ReportFormatError(f"column {name!r} must hold integers, found {column.type}", path=source)
    return np.asarray(column.to_numpy(zero_copy_only=False))


def _bytes_matrix(column: Any, nbytes: int, source: str, first_row: int) -> npt.NDArray[np.uint8]:
    """The values of a binary column as an ``(n, nbytes)`` uint8 matrix (each value must have ``nbytes``)."""
    pa = _pyarrow()
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    n = len(column)
    if column.null_count:
        row = first_row + int(np.flatnonzero(np.asarray(column.is_null()))[0])
        raise ReportFormatError(f"row {row}: column 'bits' is null", path=source)
    if pa.types.is_fixed_size_binary(column.type):
        width = column.type.byte_width
        if width != nbytes:
            msg = f"column 'bits' has {width} bytes per report, expected {nbytes}"
            raise IncompatibleParamsError(f"{source}: {msg}")
        data = np.frombuffer(column.buffers()[1], dtype=np.uint8)
        start = column.offset * nbytes
        return data[start : start + n * nbytes].reshape(n, nbytes)
    if pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type):
        offset_type = np.int32 if pa.types.is_binary(column.type) else np.int64
        offsets = np.frombuffer(column.buffers()[1], dtype=offset_type)[column.offset : column.offset + n + 1]
        lengths = np.diff(offsets)
        if (lengths != nbytes).any():
            bad = int(np.flatnonzero(lengths != nbytes)[0])
            msg = f"row {first_row + bad}: column 'bits' has {int(lengths[bad])} bytes, expected {nbytes}"
            raise ReportFormatError(msg, path=source)
        data = np.frombuffer(column.buffers()[2], dtype=np.uint8) if n else np.zeros(0, np.uint8)
        return data[int(offsets[0]) : int(offsets[0]) + n * nbytes].reshape(n, nbytes)
    raise ReportFormatError(f"column 'bits' must be binary, found {column.type}", path=source)


def arrow_to_batch(table: Any, params: Params, *, source: str = "<arrow>", first_row: int = 0) -> ReportBatch:
    """Convert an Arrow table or record batch in the columnar layout to a :class:`ReportBatch`.

    Parameters
    ----------
    table : pyarrow.Table or pyarrow.RecordBatch
        Columns ``cohort`` and ``w0..w{W-1}`` (int64 or uint64), or ``cohort`` and ``bits``.
    params : Params
        Expected parameters.
    source : str, default="<arrow>"
        Name used in error messages.
    first_row : int, default=0
        0-based row number of the first row in the whole file, for error messages.

    Raises
    ------
    ReportFormatError
        Missing columns, nulls, non-integer cohorts, cohorts out of range, bits at or above ``k``.
    IncompatibleParamsError
        The columns hold a different number of bits than ``params`` says.
    """
    names = list(table.schema.names)
    columns = report_columns(names, params, source)
    n, w = table.num_rows, params.num_words
    cohorts = _numpy_column(table.column("cohort"), "cohort", source, first_row)
    outside = (cohorts < 0) | (cohorts >= params.num_cohorts)
    if outside.any():  # named by its row (ReportBatch's own check can only name the whole batch)
        bad = int(np.flatnonzero(outside)[0])
        msg = (f"row {first_row + bad}: expected a cohort, an integer in [0, {params.num_cohorts - 1}], "
               f"found {int(cohorts[bad])}")
        raise ReportFormatError(msg, path=source)
    if columns[1] == "bits":
        nbytes = (params.num_bloombits + 7) // 8
        raw = _bytes_matrix(table.column("bits"), nbytes, source, first_row)
        if nbytes == 8 * w:  # k a multiple of 64: the bytes are the words, no padding
            padded = np.ascontiguousarray(raw)
        else:
            padded = np.zeros((n, 8 * w), dtype=np.uint8)
            padded[:, :nbytes] = raw
        words = padded.view("<u8").reshape(n, w).astype(np.uint64, copy=False)
    else:
        words = np.empty((n, w), dtype=np.uint64)
        for j, name in enumerate(columns[1:]):
            words[:, j] = _numpy_column(table.column(name), name, source, first_row).view(np.uint64)
    try:
        return ReportBatch(params=params, cohorts=cohorts, words=words)
    except InvalidParameterError as exc:
        rows = f"rows {first_row}..{first_row + n - 1}" if n > 1 else f"row {first_row}"
        raise ReportFormatError(f"{rows}: {_strip_parameter_prefix(str(exc))}", path=source) from None


def _strip_parameter_prefix(message: str) -> str:
    for prefix in ("The 'cohorts' parameter of ReportBatch ", "The 'words' parameter of ReportBatch "):
        if message.startswith(prefix):
            what = "cohort" if "cohorts" in prefix else "bits"
            return f"{what}: {message[len(prefix):]}"
    return message


def parquet_files(path: PathLike) -> list[Path]:
    """The Parquet files of ``path``: the file itself, or the ``*.parquet`` files under a directory.

    Under a directory, names starting with ``.`` or ``_`` are skipped at every level, as
    Spark, Hive and pyarrow's datasets skip them (``_SUCCESS``, ``.part.crc``, and the
    ``_temporary/`` directory of a job still running, whose parts are not final).
    Symbolic links to directories are not followed.  A subdirectory that cannot be
    listed is an error: its files would otherwise be left out of the count unnoticed.

    Raises
    ------
    RapporIOError
        If ``path`` does not exist, is a directory without Parquet files, or holds a
        directory that cannot be read.
    """
    p = Path(path)
    if p.is_dir():

        def refuse(exc: OSError) -> None:
            where = exc.filename if exc.filename is not None else os.fspath(path)
            reason = "permission denied" if isinstance(exc, PermissionError) else (exc.strerror or str(exc))
            msg = f"cannot read the directory of Parquet files: {reason} (its files would be left out of the count)"
            raise RapporIOError(msg, path=os.fspath(where), errno=exc.errno)

        files: list[Path] = []
        for top, dirs, names in os.walk(p, onerror=refuse):
            dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]
            files.extend(Path(top) / name for name in names
                         if name.endswith(".parquet") and not name.startswith((".", "_"))
                         and (Path(top) / name).is_file())
        if not files:
            raise RapporIOError("is a directory, expected a file (or a directory of Parquet files; found none)",
                                path=os.fspath(path), errno=errno.EISDIR)
        return sorted(files)
    if not p.exists():
        raise RapporIOError("cannot read file: no such file", path=os.fspath(path), errno=errno.ENOENT)
    return [p]


def report_format(path: PathLike) -> Literal["csv", "parquet"]:
    """``"parquet"`` for a Parquet file (by its magic bytes or a ``.parquet``/``.pq`` name) or a directory, else ``"csv"``.

    A URL (``s3a://...``) is Parquet (read by a distributed engine).  Only a regular file
    is opened to look at its first bytes.  Standard input, a pipe, a FIFO or a device
    (``<(cat r.csv)``, ``/dev/stdin``) is never opened here: a second open would find
    the bytes already taken (or wait for a writer that is gone), so such an input is
    CSV, read once by :func:`rappor.formats.iter_reports`, whose header check
    names a Parquet file that arrives that way (Parquet needs seeking).
    """
    if str(path) == STDIO:
        return "csv"
    if "://" in os.fspath(path):
        return "parquet"
    p = Path(path)
    if p.suffix.lower() in (".parquet", ".pq"):
        return "parquet"
    try:
        mode = os.stat(p).st_mode
    except OSError:
        return "csv"  # the CSV reader reports the error with the file's name
    if stat.S_ISDIR(mode):
        return "parquet"
    if not stat.S_ISREG(mode):
        return "csv"
    try:
        with open(p, "rb") as fh:
            head = fh.read(4)
    except OSError:
        return "csv"  # the CSV reader reports the error with the file's name
    return "parquet" if head == PARQUET_MAGIC else "csv"


def check_parquet_file(path: PathLike, params: Params) -> list[str]:
    """Check a Parquet file's stored parameters and columns (reading its footer only); return the columns to read.

    Raises
    ------
    IncompatibleParamsError
        If the file was written with other parameters.
    ReportFormatError
        If it is not a readable Parquet file or lacks the report columns.
    """
    pa = _pyarrow()
    name = display_name(path)
    try:
        schema = pa.parquet.read_schema(path)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for bad files
        raise ReportFormatError(f"not a readable Parquet file: {exc}", path=name) from None
    check_file_params(schema.metadata, params, name)
    return report_columns(schema.names, params, name)


def _open(path: Path) -> tuple[Any, Any]:
    """The ``ParquetFile`` and its Arrow schema; a corrupt file is a :class:`ReportFormatError`."""
    pa = _pyarrow()
    try:
        # pre_buffer=False: with pre-buffering, iter_batches keeps every column chunk it has
        # read (memory grows with the file: 1.9 GB for 100 million reports); without, it is flat.
        pf = pa.parquet.ParquetFile(path, pre_buffer=False)
        return pf, pf.schema_arrow
    # pyarrow reports corruption as OSError, ArrowException or (bad UTF-8 in the footer) ValueError.
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise ReportFormatError(f"not a readable Parquet file: {exc}", path=display_name(path)) from None


def iter_parquet_reports(
    path: PathLike, params: Params, *, batch_size: int = DEFAULT_BATCH_SIZE
) -> Iterator[ReportBatch]:
    """Stream the reports of a Parquet file (or a directory of them) in batches.

    Parameters
    ----------
    path : str or os.PathLike
        A Parquet file, or a directory whose ``*.parquet`` files are read in sorted order.
    params : Params
        Expected parameters; checked against the file metadata when present.
    batch_size : int, default=524288
        Maximum rows per yielded batch; memory use is bounded by a few batches.

    Yields
    ------
    ReportBatch

    Raises
    ------
    IncompatibleParamsError
        The file was written with other parameters.
    ReportFormatError
        The file is not Parquet or its columns do not hold reports.
    RapporIOError
        The path does not exist, or is a directory without Parquet files.
    MissingDependencyError
        If pyarrow is not installed.
    """
    check_int(batch_size, "batch_size", "iter_parquet_reports", low=1)
    pa = _pyarrow()
    for file in parquet_files(path):
        source = display_name(file)
        pf, schema = _open(file)
        check_file_params(schema.metadata, params, source)
        columns = report_columns(schema.names, params, source)
        first_row = 0
        try:
            for record_batch in pf.iter_batches(batch_size=int(batch_size), columns=columns):
                yield arrow_to_batch(record_batch, params, source=source, first_row=first_row)
                first_row += record_batch.num_rows
        except RapporError:
            raise  # our own, precise errors (bad bits, cohorts) pass through unchanged
        except (pa.ArrowException, OSError, ValueError) as exc:  # corrupt pages: OSError or ValueError
            raise ReportFormatError(f"cannot read Parquet data: {exc}", path=source) from None


def read_parquet_reports(path: PathLike, params: Params) -> ReportBatch:
    """Read every report of a Parquet file (or directory) into one :class:`ReportBatch`."""
    batches = list(iter_parquet_reports(path, params))
    if not batches:
        return ReportBatch(params=params, cohorts=np.zeros(0, np.int64), words=np.zeros((0, params.num_words), np.uint64))
    return ReportBatch(
        params=params,
        cohorts=np.concatenate([b.cohorts for b in batches]),
        words=np.concatenate([b.words for b in batches]),
    )


def aggregate_parquet(path: PathLike, params: Params, *, batch_size: int = DEFAULT_BATCH_SIZE) -> Aggregate:
    """Count the reports of a Parquet file (or directory) in bounded memory.

    The file is read ``batch_size`` rows at a time and each batch is counted with
    :meth:`Aggregate.from_reports` (the same code the distributed engines run per
    partition), so memory stays flat however large the file is.

    Parameters
    ----------
    path : str or os.PathLike
    params : Params
    batch_size : int, default=524288

    Returns
    -------
    Aggregate
    """
    total = Aggregate.empty(params)
    for batch in iter_parquet_reports(path, params, batch_size=batch_size):
        total = total.merge(Aggregate.from_reports(batch))
    return total
