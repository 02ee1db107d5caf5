"""Spark adapter: count Parquet partitions with ``mapInArrow`` and sum them on the cluster.

``spark.read.parquet(...)`` gives one Arrow stream per partition; the ``mapInArrow``
function :func:`rappor.engines._partition.spark_arrow_partition` (the embedded counting
code, importable on the workers from the installed package) turns each partition into at
most ``num_cohorts * (num_bloombits + 1)`` rows ``(cohort, column, count)`` (its partial
table in long format); ``groupBy("cohort", "column").sum("count")`` adds them up on the
cluster and the driver collects one table's worth of rows.  CSV files
are counted one file per task (they must be readable at the same path on the workers).

Works with any ``SparkSession`` passed in: a cluster, local mode or Spark Connect.
Needs ``pip install 'rappor[spark]'`` (``pyspark[sql]``) and Java 17+.  In local mode
the workers must run this interpreter: when no session is passed, ``PYSPARK_PYTHON``
is set to :data:`sys.executable` unless it is already set.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Sequence
from typing import Any

from .._util.lazy import import_optional
from .._util.rejects import OnError, RejectSink
from .._util.validation import check_int
from ..collect._aggregate import Aggregate
from ..exceptions import InvalidParameterError, RapporError, ReportFormatError
from ..formats._arrow import report_columns
from ..params import Params
from ._sources import Progress, ReportSource, check_distributed_options, parquet_groups
from ._partition import empty_counts, spark_arrow_partition, spark_file_partition, spark_schema

__all__ = ["SparkEngine"]


def _import_pyspark() -> Any:
    return import_optional("pyspark.sql", "the spark engine", note=" (and Java 17 or later)")


class SparkEngine:
    """Aggregate with Spark.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession or None, default=None
        A session to run on (not stopped afterwards).
    master : str or None, default=None
        Used when ``spark`` is None: the master URL of a session created for this
        aggregation and stopped afterwards (``"local[*]"`` when None).
    max_records_per_batch : int, default=1048576
        ``spark.sql.execution.arrow.maxRecordsPerBatch`` for a session created here (the
        default of 10,000 makes many small Arrow batches).  A session passed in keeps its
        own setting.
    """

    name = "spark"

    def __init__(self, *, spark: Any = None, master: str | None = None, max_records_per_batch: int = 1 << 20) -> None:
        if spark is not None and master is not None:
            raise InvalidParameterError("Give the spark engine a 'spark' session or a 'master' URL, not both.")
        self.spark = spark
        self.master = master
        self.max_records_per_batch = check_int(max_records_per_batch, "max_records_per_batch", "SparkEngine", low=1)

    def _session(self) -> tuple[Any, bool]:
        if self.spark is not None:
            return self.spark, False
        sql = _import_pyspark()
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        builder = (
            sql.SparkSession.builder.master(self.master or "local[*]")
            .appName("rappor sum-bits")
            .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(self.max_records_per_batch))
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
        )
        session = builder.getOrCreate()
        # Our own errors carry the message; Spark's executor stack traces would only bury it.
        session.sparkContext.setLogLevel("OFF")
        return session, True

    def aggregate(self, sources: Sequence[ReportSource], params: Params, *, progress: Progress | None = None,
                  on_error: OnError = "raise", rejects: RejectSink | None = None) -> Aggregate:
        """Count the reports of ``sources`` on the Spark cluster.

        ``progress`` is not called (the executors read the files); ``on_error`` must be
        ``"raise"`` (see :func:`rappor.engines.check_distributed_options`).

        A failure inside Spark (an unreadable file, a bad row found by a worker) is raised
        as a :class:`~rappor.exceptions.ReportFormatError` carrying the worker's
        ``rappor`` message, or the first line of the Java cause, instead of a Py4J
        stack trace.
        """
        check_distributed_options(self.name, on_error)
        try:
            return self._aggregate(sources, params)
        except RapporError:
            raise
        except Exception as exc:
            if not _is_spark_error(exc):
                raise
            raise _report_error(exc, sources) from None

    def _aggregate(self, sources: Sequence[ReportSource], params: Params) -> Aggregate:
        spark, owned = self._session()
        try:
            frames = []
            schema = spark_schema(params)
            count_partition = functools.partial(spark_arrow_partition, params=params)
            for columns, paths in parquet_groups(sources):
                reports = spark.read.parquet(*paths)
                reports = reports.select(*(columns or report_columns(reports.columns, params, paths[0])))
                frames.append(reports.mapInArrow(count_partition, schema))
            csv = [(s.path, s.kind) for s in sources if s.kind == "csv"]
            if csv:
                files = spark.createDataFrame(csv, "path STRING, kind STRING")
                frames.append(files.mapInArrow(functools.partial(spark_file_partition, params=params), schema))
            counts = empty_counts(params)
            if frames:
                partial = functools.reduce(lambda a, b: a.unionByName(b), frames)
                rows = partial.groupBy("cohort", "column").sum("count").collect()
                for cohort, column, count in rows:
                    counts[int(cohort), int(column)] = int(count)
        finally:
            if owned:
                spark.stop()
        return Aggregate(params=params, counts=counts)


def _is_spark_error(exc: BaseException) -> bool:
    """Whether ``exc`` comes from PySpark or the JVM (Py4J), by its class's module."""
    return any(cls.__module__.split(".")[0] in ("pyspark", "py4j") for cls in type(exc).__mro__)


def _report_error(exc: BaseException, sources: Sequence[ReportSource]) -> ReportFormatError:
    """A short :class:`ReportFormatError` from a Spark failure: the worker's own message if any."""
    text = str(exc)
    message = ""
    for line in text.splitlines():
        for marker in ("ReportFormatError: ", "IncompatibleParamsError: ", "RapporError: "):
            if marker in line:
                message = line.split(marker, 1)[1].strip()
                break
        if message:
            return ReportFormatError(message[:2000])  # already "FILE:LINE: ..." from the worker
    if not message:
        causes = [line.strip() for line in text.splitlines() if line.strip().startswith("Caused by:")]
        first = next((line.strip() for line in text.splitlines() if line.strip()), type(exc).__name__)
        message = "Spark could not read the input: " + (causes[-1][len("Caused by:"):].strip() if causes else first)
    paths = [s.path for s in sources]
    where = paths[0] if len(paths) == 1 else None
    return ReportFormatError(message[:2000], path=where)
