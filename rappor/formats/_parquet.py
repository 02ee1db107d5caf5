"""Reports as Parquet files: writing, finding, streaming and counting them.

One row per report, in the columnar layout of :mod:`rappor.formats._arrow` (packed
``int64`` words or one binary column, zstd, the parameters in the file's metadata); pyarrow
is needed only when one of these functions runs (``pip install 'rappor[parquet]'``;
without it a :class:`~rappor.exceptions.MissingDependencyError` names that extra).

Reading is streamed in batches of rows, so a file larger than memory is aggregated with a
flat memory profile (:func:`aggregate_parquet`).  A directory is read as the ``*.parquet``
files under it (:func:`parquet_files`), as Spark and Hive write them.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

import numpy as np

from .._util.outputs import atomic_output
from .._util.paths import display_name, PathLike, STDIO
from .._util.validation import check_int, check_options
from ..collect._aggregate import Aggregate
from ..exceptions import InvalidParameterError, RapporError, RapporIOError, ReportFormatError
from ..params import Params, check_same_params
from ..client._reports import ReportBatch
from ._arrow import Layout, _pyarrow, _schema, arrow_to_batch, batch_to_arrow, check_file_params, report_columns

__all__ = [
    "ParquetReportWriter",
    "aggregate_parquet",
    "iter_parquet_reports",
    "parquet_files",
    "read_parquet_reports",
    "report_format",
    "write_parquet_reports",
]

#: The first (and last) four bytes of every Parquet file.
PARQUET_MAGIC = b"PAR1"
DEFAULT_BATCH_SIZE = 1 << 19  # fastest in benchmarks/run.py: the bytes of a batch stay in cache
DEFAULT_ROW_GROUP_SIZE = 1 << 20


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
