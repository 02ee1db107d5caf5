"""The Spark engine (local[2]) gives exactly the embedded counts, for Parquet and CSV inputs."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rappor import Aggregate, Params, ReportBatch
from rappor.engines._aggregate import aggregate_files
from rappor.exceptions import IncompatibleParamsError
from rappor.formats._parquet import ParquetReportWriter, write_parquet_reports
from rappor.formats._reports_csv import write_reports

pytest.importorskip("pyspark.sql")
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip("Spark needs Java", allow_module_level=True)

pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings("ignore::FutureWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning"), pytest.mark.filterwarnings("ignore::ResourceWarning")]

PARAMS = Params(num_bloombits=130, num_hashes=2, num_cohorts=7, prob_p=0.5, prob_q=0.75, prob_f=0.5)


def _batch(n: int, seed: int) -> ReportBatch:
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2, (n, PARAMS.num_bloombits), dtype=np.uint8)
    return ReportBatch.from_bits(PARAMS, rng.integers(0, PARAMS.num_cohorts, n), bits)


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .appName("rappor-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "700")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def test_spark_engine_equals_embedded(spark: Any, tmp_path: Path) -> None:
    # Words layout in several row groups (several Arrow batches per partition with
    # maxRecordsPerBatch=700), the bits layout (read by Spark as plain binary), and CSV.
    batches = [_batch(3000, 1), _batch(1200, 2), _batch(250, 3)]
    with ParquetReportWriter(tmp_path / "a.parquet", PARAMS, row_group_size=1000) as writer:
        writer.write(batches[0])
    write_parquet_reports(tmp_path / "b.parquet", batches[1], layout="bits")
    write_reports(tmp_path / "c.csv", batches[2])
    expected = Aggregate.empty(PARAMS)
    for batch in batches:
        expected = expected.merge(Aggregate.from_reports(batch))
    # a.parquet given as a URL: Spark resolves its columns itself (as for s3a:// data).
    paths = [(tmp_path / "a.parquet").as_uri(), tmp_path / "b.parquet", tmp_path / "c.csv"]
    got = aggregate_files(paths, PARAMS, engine="spark", spark=spark)
    np.testing.assert_array_equal(got.counts, expected.counts)


def test_spark_engine_fail_params_mismatch(spark: Any, tmp_path: Path) -> None:
    write_parquet_reports(tmp_path / "a.parquet", _batch(10, 4))
    other = Params(num_bloombits=130, num_hashes=2, num_cohorts=7, prob_p=0.5, prob_q=0.8, prob_f=0.5)
    with pytest.raises(IncompatibleParamsError, match="q=0.75 \\(expected 0.8\\)"):
        aggregate_files([tmp_path / "a.parquet"], other, engine="spark", spark=spark)


def test_spark_engine_corrupt_parquet_is_a_clean_error(spark: Any, tmp_path: Path) -> None:
    """A damaged data page: a short ReportFormatError naming the file, not a Py4J stack trace."""
    from rappor.exceptions import ReportFormatError

    path = tmp_path / "bad.parquet"
    write_parquet_reports(path, _batch(200, 5))
    raw = bytearray(path.read_bytes())
    raw[4] ^= 0xFF
    raw[10] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(ReportFormatError, match="Spark could not read the input") as info:
        aggregate_files([path], PARAMS, engine="spark", spark=spark)
    assert info.value.path is not None and info.value.path.endswith("bad.parquet")
    assert "\n\tat " not in str(info.value)  # no Java stack frames


def test_spark_engine_bad_csv_row_gives_the_embedded_message(spark: Any, tmp_path: Path) -> None:
    from rappor.exceptions import ReportFormatError

    path = tmp_path / "bad.csv"
    write_reports(path, _batch(5, 6))
    lines = path.read_text().splitlines()
    client, _, irr = lines[3].split(",")
    lines[3] = f"{client},99,{irr}"  # cohort 99 of 7
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ReportFormatError) as embedded:
        aggregate_files([path], PARAMS)
    with pytest.raises(ReportFormatError) as distributed:
        aggregate_files([path], PARAMS, engine="spark", spark=spark)
    assert str(distributed.value) == str(embedded.value)
    assert ":4:" in str(embedded.value)
