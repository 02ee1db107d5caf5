"""Per-partition counting functions shared by every engine (private; no engine imports).

Every engine counts with exactly the code of the embedded path: a partition's Arrow
data goes through :func:`rappor.formats._arrow.arrow_to_batch` and
:meth:`rappor.Aggregate.from_reports`, a CSV file through
:func:`rappor.formats.iter_reports`.  Engines only distribute these functions and add
up their ``(num_cohorts, num_bloombits + 1)`` partial tables, so their counts equal the
embedded ones exactly.  The functions live in the installed package so that Spark and
Dask workers import them by name instead of shipping pickled code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from .._util.lazy import lazy_module
from .._util.rejects import OnError, RejectSink
from ..collect._aggregate import Aggregate, add_counts, zero_counts
from ..formats._arrow import arrow_to_batch
from ..formats._parquet import aggregate_parquet
from ..formats._reports_csv import iter_reports
from ..params import Params

pa = lazy_module("pyarrow", "Parquet reports")

__all__ = [
    "arrow_counts",
    "empty_counts",
    "file_counts",
    "pandas_counts",
    "spark_arrow_partition",
    "spark_file_partition",
    "spark_schema",
    "sum_counts",
]


def empty_counts(params: Params) -> npt.NDArray[np.int64]:
    """A zero ``(num_cohorts, num_bloombits + 1)`` table (refused first if it cannot fit in memory)."""
    return zero_counts(params)


def arrow_counts(table: Any, params: Params, *, source: str = "<partition>") -> npt.NDArray[np.int64]:
    """Counts of an Arrow table or record batch in the columnar report layout."""
    return Aggregate.from_reports(arrow_to_batch(table, params, source=source)).counts


def file_counts(path: str, kind: str, params: Params, *, progress: Callable[[int], None] | None = None,
                on_error: OnError = "raise", rejects: RejectSink | None = None) -> npt.NDArray[np.int64]:
    """Counts of one reports file (``kind`` is ``"csv"`` or ``"parquet"``), streamed in chunks.

    ``progress``, ``on_error`` and ``rejects`` apply to CSV files, as in
    :func:`rappor.formats.iter_reports` (a Parquet file has no rows to skip:
    it is read whole or refused).
    """
    if kind == "parquet":
        return aggregate_parquet(path, params).counts
    chunks = iter_reports(path, params, progress=progress, on_error=on_error, rejects=rejects)
    return Aggregate.from_report_chunks(chunks, params).counts


def pandas_counts(frame: Any, params: Params, source: str = "<dask partition>") -> npt.NDArray[np.int64]:
    """Counts of a pandas partition (Dask) holding the columnar layout."""
    table = pa.Table.from_pandas(frame, preserve_index=False)
    return arrow_counts(table, params, source=source)


def sum_counts(tables: Iterable[npt.NDArray[np.int64]]) -> npt.NDArray[np.int64]:
    """Exact int64 sum of partial tables (an error rather than a wrap-around beyond ``2**63 - 1``)."""
    total: npt.NDArray[np.int64] | None = None
    for table in tables:
        if total is None:
            total = table.copy()
        else:
            add_counts(total, table)
    if total is None:
        msg = "sum_counts needs at least one table"
        raise ValueError(msg)
    return total


# ----------------------------------------------------------------------------- Spark


def spark_schema(params: Params) -> str:
    """DDL of the partial-count rows: ``(cohort, column, count)``, one row per non-zero table entry.

    ``column`` 0 is the number of reports, ``1 + j`` the ones of bit ``j`` (the layout of
    :class:`~rappor.Aggregate`).  A narrow long format keeps Spark's ``groupBy().sum()``
    cheap whatever ``k`` is.
    """
    return "cohort INT, column INT, count LONG"


def _counts_to_arrow(counts: npt.NDArray[np.int64], params: Params) -> Any:
    cohort, column = np.nonzero(counts)
    return pa.RecordBatch.from_arrays(
        [
            pa.array(cohort.astype(np.int32), type=pa.int32()),
            pa.array(column.astype(np.int32), type=pa.int32()),
            pa.array(counts[cohort, column], type=pa.int64()),
        ],
        names=["cohort", "column", "count"],
    )


def spark_arrow_partition(batches: Iterator[Any], params: Params) -> Iterator[Any]:
    """``mapInArrow`` function over report rows: yields the partition's partial counts."""
    total = empty_counts(params)
    for batch in batches:
        if batch.num_rows:
            add_counts(total, arrow_counts(batch, params, source="<spark partition>"))
    yield _counts_to_arrow(total, params)


def spark_file_partition(batches: Iterator[Any], params: Params) -> Iterator[Any]:
    """``mapInArrow`` function over rows ``(path, kind)``: counts each file with the embedded path."""
    total = empty_counts(params)
    for batch in batches:
        for path, kind in zip(batch.column("path").to_pylist(), batch.column("kind").to_pylist()):
            add_counts(total, file_counts(path, kind, params))
    yield _counts_to_arrow(total, params)
