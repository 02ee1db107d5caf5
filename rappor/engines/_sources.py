"""What an engine counts and what an engine is: report sources, the ``Engine`` protocol (private).

:func:`report_sources` turns the paths given to ``rappor sum-bits`` into :class:`ReportSource`
objects (CSV or Parquet, local or remote, checked once); every engine, the embedded numpy one
(:mod:`rappor.engines._aggregate`) and the Dask and Spark adapters, takes them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from .._util.lazy import import_optional
from .._util.paths import PathLike, check_distinct_files
from .._util.rejects import OnError, RejectSink
from ..collect._aggregate import Aggregate
from ..exceptions import InvalidParameterError, ReportFormatError
from ..formats._parquet import check_parquet_file, parquet_files, report_format
from ..params import Params

__all__ = ["ENGINES", "Engine", "ReportSource", "check_distributed_options", "parquet_groups", "report_sources"]

ENGINES = ("numpy", "dask", "spark")
EngineName = Literal["numpy", "dask", "spark"]
#: Called with the number of bytes read so far of a CSV input, after each block.
Progress = Callable[[int], None]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReportSource:
    """One input of an aggregation: a file and its format.

    Parameters
    ----------
    path : str
        A file, ``"-"`` for standard input (CSV, numpy engine only), for Parquet a
        single file (directories are expanded by :func:`report_sources`) or a URL the
        engine reads itself (``s3a://...``; Dask and Spark only).
    kind : {"csv", "parquet"}
    columns : tuple of str, default=()
        For Parquet, the report columns to read (``cohort`` and ``w0..`` or ``bits``);
        empty for a URL, whose columns the engine resolves when it opens the dataset.
    """

    path: str
    kind: Literal["csv", "parquet"]
    columns: tuple[str, ...] = ()


def parquet_groups(sources: Sequence[ReportSource]) -> list[tuple[tuple[str, ...], list[str]]]:
    """Parquet sources grouped by the columns to read (``w0..`` or ``bits``), in input order."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for s in sources:
        if s.kind == "parquet":
            groups.setdefault(s.columns, []).append(s.path)
    return list(groups.items())


def _is_url(path: PathLike) -> bool:
    return "://" in os.fspath(path)


def report_sources(paths: Sequence[PathLike], params: Params) -> list[ReportSource]:
    """Classify input paths as CSV or Parquet (by content) and check Parquet metadata.

    A directory stands for the Parquet files under it.  Each Parquet file's stored
    parameters and columns are checked here, on the driver, before any work is
    distributed.

    Raises
    ------
    IncompatibleParamsError
        A Parquet file was written with other parameters.
    InvalidParameterError
        A file is reached twice (see :func:`rappor._util.paths.check_distinct_files`).
    ReportFormatError
        A Parquet file cannot be read or lacks the report columns.
    RapporIOError
        A path to Parquet files does not exist, or is a directory without any.
    MissingDependencyError
        If an input is Parquet and pyarrow is not installed.
    """
    sources: list[ReportSource] = []
    for path in paths:
        if _is_url(path):
            # A data-lake dataset (s3a://, hdfs://, gs:// ...): read by the engine itself;
            # its columns are resolved and checked there, its metadata is not read here.
            sources.append(ReportSource(path=os.fspath(path), kind="parquet"))
            continue
        if report_format(path) == "csv":
            sources.append(ReportSource(path=os.fspath(path), kind="csv"))
            continue
        files = parquet_files(path)  # a directory without Parquet files is an error, with or without pyarrow
        import_optional("pyarrow.parquet", "Parquet reports")  # then the missing extra, before reading any
        for file in files:
            columns = tuple(check_parquet_file(file, params))
            sources.append(ReportSource(path=os.fspath(file), kind="parquet", columns=columns))
    # A file reached twice (given twice, alone and in its directory, or through a link) would be counted twice.
    check_distinct_files((), (), summed=[("REPORTS", s.path) for s in sources if not _is_url(s.path)])
    return sources


@runtime_checkable
class Engine(Protocol):
    """What an aggregation engine provides.

    ``aggregate(sources, params, progress=..., on_error=..., rejects=...)`` returns the
    exact :class:`~rappor.Aggregate` of every report in ``sources``; partial tables are
    combined with exact int64 addition (:meth:`Aggregate.merge` is associative and
    commutative, so any partitioning and any order of combination gives the same
    table).  ``progress`` and ``on_error``/``rejects`` are those of
    :func:`aggregate_files`.
    """

    name: str

    def aggregate(self, sources: Sequence[ReportSource], params: Params, *, progress: Progress | None = None,
                  on_error: OnError = "raise", rejects: RejectSink | None = None) -> Aggregate:
        """Count the reports of ``sources``."""
        ...


def check_distributed_options(engine: str, on_error: OnError) -> None:
    """Refuse ``on_error="skip"`` on an engine whose workers cannot hand rejected rows back to this process."""
    if on_error != "raise":
        msg = (f"The {engine} engine stops at the first bad row (on_error='raise'): skipping bad rows and "
               f"collecting them in a rejects file needs the numpy engine.")
        raise InvalidParameterError(msg)
