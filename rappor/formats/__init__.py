"""File formats: one private module per kind of file rappor reads or writes, each owning its reader and writer.

=========================  ===================================================================
``_keys``                  a collection's key as hex text (``rappor keygen``): :func:`read_key_file`,
                           :func:`write_key_file`
``_params``                google/rappor ``params.csv``: :func:`read_params`, :func:`write_params`
``_client_values``         the encoder's input ``client,value``: :func:`iter_client_values`,
                           :func:`read_client_values`, :func:`write_client_values`
``_reports_csv``           reports CSV, ours ``client,cohort,irr`` or google/rappor's
                           ``client,cohort,bloom,prr,irr``: :func:`iter_reports`,
                           :func:`read_reports`, :func:`write_reports`
``_arrow``                 the columnar layout of reports (Parquet files, the engines' tables;
                           needs pyarrow): ReportBatch <-> Arrow
``_parquet``               reports as Parquet files (needs pyarrow): :func:`read_parquet_reports`,
                           :func:`write_parquet_reports`, streaming (:class:`ParquetReportWriter`)
                           and aggregation (:func:`aggregate_parquet`)
``_counts``                google/rappor ``counts.csv``: :func:`read_counts`, :func:`write_counts`
``_candidates``            candidate lists, one string per line: :func:`read_candidates`,
                           :func:`write_candidates`
``_map``                   google/rappor ``map.csv``: :func:`read_map`, :func:`write_map`,
                           :func:`write_map_positions`
``_population``            the truth of a simulation, ``string,count``: :func:`read_population`
``_results``               google/rappor ``results.csv``, a decode's estimates: :func:`write_results`,
                           :func:`read_results`
``_association``           multi-variable reports (CSV or Parquet) and google/rappor's variable
                           schema: :func:`read_assoc_reports`, :func:`write_assoc_reports`,
                           :func:`write_assoc_parquet`, :func:`read_schema`
``_assoc_results``         an association analysis's table, ours or google/rappor's
                           ``assoc-results.csv``: :func:`write_assoc_results`
``_found``                 the values ``rappor discover`` found, ``found.csv``: :func:`write_found`,
                           :func:`read_found_rows` (:class:`FoundRow`), :func:`read_found`
=========================  ===================================================================

The modules are listed in the order a collection meets its files.  A reader names the
file and the line of any content that is not its format
(:class:`~rappor.exceptions.ReportFormatError`) and the file it cannot open or read
(:class:`~rappor.exceptions.RapporIOError`); a writer writes atomically (the file
appears complete or not at all; ``"-"`` is standard output).  Not here: rejected rows (``--rejects``,
``rappor._util.rejects``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util.lazy import lazy_face

if TYPE_CHECKING:
    from ._assoc_results import write_assoc_results
    from ._association import read_assoc_reports, read_schema, write_assoc_parquet, write_assoc_reports
    from ._candidates import read_candidates, write_candidates
    from ._client_values import iter_client_values, read_client_values, write_client_values
    from ._counts import read_counts, write_counts
    from ._found import FoundRow, is_found_file, read_found, read_found_rows, read_found_shares, write_found
    from ._keys import read_key_file, write_key_file
    from ._map import read_map, write_map, write_map_positions
    from ._params import read_discovery_params, read_params, write_discovery_params, write_params
    from ._population import read_population
    from ._parquet import (
        ParquetReportWriter,
        aggregate_parquet,
        iter_parquet_reports,
        parquet_files,
        read_parquet_reports,
        write_parquet_reports,
    )
    from ._results import read_results, write_results
    from ._reports_csv import iter_reports, read_reports, write_reports
else:
    __getattr__, __dir__ = lazy_face(__name__)
    del lazy_face, TYPE_CHECKING  # plumbing, not names of the face

__all__ = [
    "FoundRow",
    "ParquetReportWriter",
    "aggregate_parquet",
    "is_found_file",
    "iter_client_values",
    "iter_parquet_reports",
    "iter_reports",
    "parquet_files",
    "read_assoc_reports",
    "read_candidates",
    "read_client_values",
    "read_counts",
    "read_found",
    "read_found_rows",
    "read_found_shares",
    "read_key_file",
    "read_map",
    "read_discovery_params",
    "read_params",
    "read_parquet_reports",
    "read_population",
    "read_reports",
    "read_results",
    "read_schema",
    "write_assoc_parquet",
    "write_assoc_reports",
    "write_assoc_results",
    "write_candidates",
    "write_client_values",
    "write_counts",
    "write_found",
    "write_key_file",
    "write_map",
    "write_map_positions",
    "write_discovery_params",
    "write_params",
    "write_parquet_reports",
    "write_reports",
    "write_results",
]
