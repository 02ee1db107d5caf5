"""Engines: the client and collection steps run over files, in one process or on a cluster.

In the order a collection uses them (modules private, names listed here):

``_encode``     :func:`encode_file`: a ``client,value`` file into reports, in worker processes
                (``rappor encode``; :func:`default_jobs` of them unless told)
``_sources``    :func:`report_sources`: the paths given, checked once, as :class:`ReportSource`;
                the :class:`Engine` protocol
``_aggregate``  :func:`aggregate_files`: report files into per-cohort counts (``rappor sum-bits``),
                with the ``numpy`` engine (one process) or an adapter:
``_dask``       :class:`DaskEngine`: ``dask.dataframe.read_parquet`` partitions
``_spark``      :class:`SparkEngine`: ``spark.read.parquet(...).mapInArrow``
``_partition``  the per-partition count every engine runs, so every engine gives the same table

Dask and Spark are imported only when their engine runs, so ``import rappor`` never imports them.
See ``docs/scaling.md`` for sizing a billion-report job.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util.lazy import lazy_face

if TYPE_CHECKING:
    from ._aggregate import NumpyEngine, aggregate_files, get_engine
    from ._dask import DaskEngine
    from ._encode import default_jobs, encode_discovery_file, encode_file, encode_variables_file
    from ._sources import ENGINES, Engine, ReportSource, check_distributed_options, parquet_groups, report_sources
    from ._spark import SparkEngine
else:
    __getattr__, __dir__ = lazy_face(__name__)
    del lazy_face, TYPE_CHECKING  # plumbing, not names of the face

__all__ = [
    "ENGINES",
    "DaskEngine",
    "Engine",
    "NumpyEngine",
    "ReportSource",
    "SparkEngine",
    "aggregate_files",
    "check_distributed_options",
    "default_jobs",
    "encode_discovery_file",
    "encode_file",
    "encode_variables_file",
    "get_engine",
    "parquet_groups",
    "report_sources",
]
