"""Dask adapter: count Parquet partitions with ``dask.dataframe.read_parquet``.

Each partition (one Parquet row group, as a pandas frame of ``cohort`` and ``w0..w{W-1}`` or ``bits``) is counted
by :func:`rappor.engines._partition.pandas_counts`, which is the embedded counting
code; the ``(num_cohorts, num_bloombits + 1)`` partial tables are then added in a tree
(fan-in :attr:`DaskEngine.fan_in`), so no task ever holds more than a few dozen of them.
CSV files are counted one file per task by the embedded reader.

Needs ``pip install 'rappor[dask]'`` (``dask[dataframe,distributed]``).
"""

from __future__ import annotations

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
from ._partition import empty_counts, file_counts, pandas_counts, sum_counts

__all__ = ["DaskEngine"]

_LOCAL_SCHEDULERS = ("threads", "processes", "synchronous", "sync", "single-threaded")


def _import_dask() -> Any:
    import_optional("dask.dataframe", "the dask engine")
    return import_optional("dask", "the dask engine")


class DaskEngine:
    """Aggregate with Dask.

    Parameters
    ----------
    client : distributed.Client or None, default=None
        A connected client; the computation runs on its cluster.  Not closed.
    scheduler : str or None, default=None
        Used when ``client`` is None: a scheduler address (``"tcp://host:8786"``), for
        which a client is opened and closed again, or a local scheduler name
        (``"threads"``, ``"processes"``, ``"synchronous"``).  None means local threads.
    fan_in : int, default=32
        How many partial tables one reduction task adds up.
    """

    name = "dask"

    def __init__(self, *, client: Any = None, scheduler: str | None = None, fan_in: int = 32) -> None:
        if client is not None and scheduler is not None:
            raise InvalidParameterError("Give the dask engine a 'client' or a 'scheduler', not both.")
        self.client = client
        self.scheduler = scheduler
        self.fan_in = check_int(fan_in, "fan_in", "DaskEngine", low=2)

    def _graph(self, sources: Sequence[ReportSource], params: Params) -> Any:
        dask = _import_dask()
        delayed = dask.delayed
        parts: list[Any] = []
        count = delayed(pandas_counts, pure=True)
        for columns, paths in parquet_groups(sources):
            # One partition per row group: memory per task is one row group (about a
            # million reports with ParquetReportWriter's default), not one whole file.
            if columns:
                frame = dask.dataframe.read_parquet(paths, columns=list(columns), index=False, split_row_groups=True)
            else:  # a URL: resolve the columns from the dataset's schema
                frame = dask.dataframe.read_parquet(paths, index=False, split_row_groups=True)
                frame = frame[report_columns(list(frame.columns), params, paths[0])]
            parts += [count(part, params) for part in frame.to_delayed()]
        count_file = delayed(file_counts, pure=True)
        parts += [count_file(s.path, s.kind, params) for s in sources if s.kind == "csv"]
        if not parts:
            return delayed(empty_counts)(params)
        add = delayed(sum_counts, pure=True)
        while len(parts) > 1:
            parts = [add(parts[i : i + self.fan_in]) for i in range(0, len(parts), self.fan_in)]
        return parts[0]

    def aggregate(self, sources: Sequence[ReportSource], params: Params, *, progress: Progress | None = None,
                  on_error: OnError = "raise", rejects: RejectSink | None = None) -> Aggregate:
        """Count the reports of ``sources`` on the Dask scheduler.

        ``progress`` is not called (the workers read the files); ``on_error`` must be
        ``"raise"`` (see :func:`rappor.engines.check_distributed_options`).
        """
        check_distributed_options(self.name, on_error)
        try:
            counts = self._compute(sources, params)
        except RapporError:
            raise
        except (OSError, ValueError) as exc:  # pyarrow: corrupt Parquet pages or footers
            parquet = [s.path for s in sources if s.kind == "parquet"]
            if not parquet:
                raise
            where = parquet[0] if len(parquet) == 1 else f"one of {len(parquet)} Parquet inputs ({parquet[0]}, ...)"
            raise ReportFormatError(f"cannot read Parquet data: {exc}", path=where) from None
        return Aggregate(params=params, counts=counts)

    def _compute(self, sources: Sequence[ReportSource], params: Params) -> Any:
        graph = self._graph(sources, params)
        if self.client is not None:
            counts = self.client.compute(graph).result()
        elif self.scheduler is None or self.scheduler in _LOCAL_SCHEDULERS:
            counts = graph.compute(scheduler=self.scheduler or "threads")
        else:
            distributed = import_optional("distributed", "a Dask scheduler address")
            with distributed.Client(self.scheduler) as client:
                counts = client.compute(graph).result()
        return counts
