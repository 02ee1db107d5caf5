"""Aggregation engines: count reports in one process (numpy) or on a Dask or Spark cluster.

Every engine computes exactly the same table as the embedded path,
:meth:`rappor.Aggregate.from_reports` applied chunk by chunk, because the per-partition
function *is* that code (:mod:`rappor.engines._partition`); an engine only distributes
it over partitions and adds up the ``(num_cohorts, num_bloombits + 1)`` partial tables
with exact int64 arithmetic.  So ``counts.csv`` is byte-identical whichever engine
made it.

=========  =====================================================================
``numpy``  one process, streamed in chunks (the default; no extra dependency)
``dask``   :mod:`rappor.engines._dask`: ``dask.dataframe.read_parquet`` partitions,
           a ``distributed.Client`` passed in, a scheduler address, or local threads
``spark``  :mod:`rappor.engines._spark`: ``spark.read.parquet(...).mapInArrow``, a
           ``SparkSession`` passed in (cluster, local or Spark Connect) or a local one
=========  =====================================================================

Engine packages are imported only inside their adapter modules, so ``import rappor``
and the numpy engine never import Dask or Spark.  Reports may be CSV (``rappor encode``
or google/rappor layout, :mod:`rappor.formats`) or Parquet
(:mod:`rappor.formats`); Parquet is split into partitions by the engine, CSV
files are counted one file per task.  :func:`aggregate_files` is what ``rappor
sum-bits`` runs, whatever the engine.  See ``docs/scaling.md`` for sizing a
billion-report job.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from .._util.paths import PathLike, STDIO
from .._util.rejects import OnError, RejectSink, check_on_error
from .._util.validation import check_options
from ..collect._aggregate import Aggregate, add_counts
from ..exceptions import InvalidParameterError, ReportFormatError
from ..params import Params
from ._partition import empty_counts, file_counts
from ._sources import ENGINES, Engine, EngineName, Progress, ReportSource, _is_url, report_sources

__all__ = ["NumpyEngine", "aggregate_files", "get_engine"]


class NumpyEngine:
    """The embedded engine: one process, each file streamed in bounded-memory chunks."""

    name = "numpy"

    def aggregate(self, sources: Sequence[ReportSource], params: Params, *, progress: Progress | None = None,
                  on_error: OnError = "raise", rejects: RejectSink | None = None) -> Aggregate:
        """Count the reports of ``sources`` one after the other (see :func:`aggregate_files`)."""
        for s in sources:
            if _is_url(s.path):
                msg = f"The numpy engine reads local files; use the dask or spark engine for {s.path!r}."
                raise InvalidParameterError(msg)
        counts = empty_counts(params)
        for s in sources:
            add_counts(counts, file_counts(s.path, s.kind, params, progress=progress, on_error=on_error,
                                           rejects=rejects))
        return Aggregate(params=params, counts=counts)


def get_engine(name: EngineName = "numpy", **options: Any) -> Engine:
    """Build the engine called ``name`` with adapter ``options``.

    Parameters
    ----------
    name : {"numpy", "dask", "spark"}, default="numpy"
    **options
        ``dask``: ``client`` (a ``distributed.Client``) or ``scheduler`` (an address such
        as ``"tcp://host:8786"``, or ``"threads"``/``"processes"``/``"synchronous"``).
        ``spark``: ``spark`` (a ``SparkSession``) or ``master`` (a master URL such as
        ``"local[2]"`` or ``"spark://host:7077"``), ``max_records_per_batch``.
    """
    check_options(name, "engine", "get_engine", ENGINES)
    if name == "numpy":
        if options:
            msg = f"The numpy engine takes no options. Got {sorted(options)} instead."
            raise InvalidParameterError(msg)
        return NumpyEngine()
    if name == "dask":
        from ._dask import DaskEngine

        return DaskEngine(**options)
    from ._spark import SparkEngine

    return SparkEngine(**options)


def aggregate_files(
    paths: Sequence[PathLike],
    params: Params,
    *,
    engine: EngineName | Engine = "numpy",
    progress: Progress | None = None,
    on_error: OnError = "raise",
    rejects: RejectSink | None = None,
    **options: Any,
) -> Aggregate:
    """Aggregate report files (CSV or Parquet, mixed) with the chosen engine.

    This is what ``rappor sum-bits`` runs, with any ``--engine``.

    Parameters
    ----------
    paths : sequence of str or os.PathLike
        Report files: CSV (``rappor encode`` or google/rappor layout; ``"-"`` is standard
        input, numpy engine only), Parquet files, or directories of Parquet files.
    params : Params
        Parameters every report must have been made with.
    engine : {"numpy", "dask", "spark"} or Engine, default="numpy"
        The engine, by name or as an already built object.
    progress : callable or None, default=None
        Called with the number of bytes read of a CSV input after each block (for a
        progress bar), by the engines that read in this process (numpy); the
        distributed engines do not call it.
    on_error : {"raise", "skip"}, default="raise"
        ``"raise"`` stops at the first bad row.  ``"skip"`` leaves bad rows of CSV inputs
        out and appends each, as a :class:`rappor._util.rejects.RejectedRow`, to ``rejects``
        (numpy engine only; a bad header, or a bad Parquet file, still raises).
    rejects : list or None, default=None
        Where skipped rows go (anything with ``append``); required with ``"skip"``.
    **options
        Passed to :func:`get_engine` (``client``/``scheduler`` for Dask,
        ``spark``/``master`` for Spark).

    Returns
    -------
    Aggregate
        Identical, count for count, whichever engine computed it.

    Raises
    ------
    ReportFormatError, RapporIOError, IncompatibleParamsError
        For a bad, unreadable or mismatched input (naming the file and line).
    CountOverflowError
        If a count would exceed ``2**63 - 1``.
    InvalidParameterError
        For ``on_error="skip"`` with a distributed engine, or bad engine options.

    Examples
    --------
    Count a Parquet file on Dask (local threads here; a ``client`` or ``scheduler`` for a
    cluster) and get the table the embedded numpy path gives:

    >>> from rappor import Params, Population, simulate
    >>> from rappor.formats._parquet import write_parquet_reports
    >>> params = Params(k=16, h=2, m=4, p=0.5, q=0.75, f=0.5)
    >>> sim = simulate(params, Population.zipf(10), 1_000, rng=0)
    >>> write_parquet_reports("reports.parquet", sim.reports)
    >>> agg = aggregate_files(["reports.parquet"], params, engine="dask")
    >>> bool((agg.counts == sim.aggregate.counts).all())
    True
    """
    sink = check_on_error(on_error, rejects, "aggregate_files")
    built = get_engine(engine, **options) if isinstance(engine, str) else engine
    sources = report_sources(paths, params)
    if built.name != "numpy" and any(s.path == STDIO for s in sources):
        msg = f"The {built.name} engine cannot read standard input; give report files."
        raise ReportFormatError(msg, path="<stdin>")
    return built.aggregate(sources, params, progress=progress, on_error=on_error, rejects=sink)
