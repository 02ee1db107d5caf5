"""The Dask engine gives exactly the embedded counts, for Parquet, CSV and mixed inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rappor import Aggregate, Params, ReportBatch
from rappor.engines import NumpyEngine, aggregate_files, get_engine, report_sources
from rappor.exceptions import IncompatibleParamsError, InvalidParameterError
from rappor.formats._parquet import ParquetReportWriter, write_parquet_reports
from rappor.formats._reports_csv import write_reports
from rappor.formats._params import params_text

pytest.importorskip("dask.dataframe")
pytestmark = pytest.mark.dask

PARAMS = Params(num_bloombits=70, num_hashes=2, num_cohorts=6, prob_p=0.5, prob_q=0.75, prob_f=0.5)


def _batch(n: int, seed: int) -> ReportBatch:
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2, (n, PARAMS.num_bloombits), dtype=np.uint8)
    return ReportBatch.from_bits(PARAMS, rng.integers(0, PARAMS.num_cohorts, n), bits)


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[list[Path], Aggregate]:
    """Two Parquet files (words and bits layouts, several row groups) and one CSV file."""
    batches = [_batch(2000, 1), _batch(1500, 2), _batch(300, 3)]
    with ParquetReportWriter(tmp_path / "a.parquet", PARAMS, row_group_size=500) as writer:
        writer.write(batches[0])
    write_parquet_reports(tmp_path / "b.parquet", batches[1], layout="bits")
    write_reports(tmp_path / "c.csv", batches[2])
    expected = Aggregate.empty(PARAMS)
    for batch in batches:
        expected = expected.merge(Aggregate.from_reports(batch))
    return [tmp_path / "a.parquet", tmp_path / "b.parquet", tmp_path / "c.csv"], expected


def test_dask_engine_equals_embedded(inputs: tuple[list[Path], Aggregate]) -> None:
    paths, expected = inputs
    got = aggregate_files(paths, PARAMS, engine="dask")
    np.testing.assert_array_equal(got.counts, expected.counts)
    np.testing.assert_array_equal(aggregate_files(paths, PARAMS).counts, expected.counts)


def test_dask_engine_small_fan_in_and_sync_scheduler(inputs: tuple[list[Path], Aggregate]) -> None:
    # fan_in=2 forces a multi-level reduction tree.
    paths, expected = inputs
    engine = get_engine("dask", scheduler="synchronous", fan_in=2)
    got = aggregate_files(paths, PARAMS, engine=engine)
    np.testing.assert_array_equal(got.counts, expected.counts)


def test_dask_engine_distributed_client(inputs: tuple[list[Path], Aggregate]) -> None:
    distributed = pytest.importorskip("distributed")
    paths, expected = inputs
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=None) as client:
        got = aggregate_files(paths, PARAMS, engine="dask", client=client)
    np.testing.assert_array_equal(got.counts, expected.counts)


def test_dask_engine_fail_params_mismatch(inputs: tuple[list[Path], Aggregate]) -> None:
    paths, _ = inputs
    other = Params(num_bloombits=70, num_hashes=2, num_cohorts=6, prob_p=0.25, prob_q=0.75, prob_f=0.5)
    with pytest.raises(IncompatibleParamsError, match="a.parquet"):
        aggregate_files(paths, other, engine="dask")


def test_engines_fail_bad_options() -> None:
    with pytest.raises(InvalidParameterError, match="'engine' parameter"):
        get_engine("beam")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="not both"):
        get_engine("dask", client=object(), scheduler="threads")
    with pytest.raises(InvalidParameterError, match="no options"):
        get_engine("numpy", scheduler="threads")


def test_engines_report_sources_detects_format(inputs: tuple[list[Path], Aggregate], tmp_path: Path) -> None:
    paths, _ = inputs
    renamed = tmp_path / "reports.bin"
    renamed.write_bytes(paths[0].read_bytes())  # Parquet found by its magic bytes, not its name
    kinds = [s.kind for s in report_sources([*paths, renamed], PARAMS)]
    assert kinds == ["parquet", "parquet", "csv", "parquet"]
    assert isinstance(get_engine("numpy"), NumpyEngine)


def test_dask_engine_reads_url(inputs: tuple[list[Path], Aggregate]) -> None:
    # A file:// URL goes to the engine's own reader (as s3a:// or gs:// would); the numpy engine refuses it.
    paths, _ = inputs
    url = paths[0].resolve().as_uri()
    sources = report_sources([url], PARAMS)
    assert [(s.kind, s.columns) for s in sources] == [("parquet", ())]
    expected = aggregate_files([paths[0]], PARAMS)
    np.testing.assert_array_equal(aggregate_files([url], PARAMS, engine="dask").counts, expected.counts)
    with pytest.raises(InvalidParameterError, match="dask or spark engine"):
        aggregate_files([url], PARAMS)


def test_sum_bits_cli_engines_byte_identical(inputs: tuple[list[Path], Aggregate], tmp_path: Path) -> None:
    # rappor sum-bits --engine numpy|dask over Parquet and CSV: byte-identical counts.csv.
    from rappor.cli._main import main

    paths, _ = inputs
    params_path = tmp_path / "params.csv"
    params_path.write_text(params_text(PARAMS))
    outputs = []
    for engine in ("numpy", "dask"):
        out = tmp_path / f"counts-{engine}.csv"
        try:
            code = main(["sum-bits", "--engine", engine, "--params", str(params_path), *map(str, paths), "-o", str(out)])
        except SystemExit as exc:  # argparse: unknown option
            if exc.code == 2:
                pytest.skip("sum-bits has no --engine option yet")
            raise
        assert code == 0
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    assert outputs[0].count(b"\n") == PARAMS.num_cohorts


@pytest.mark.parametrize("engine", ["numpy", "dask"])
def test_corrupt_parquet_page_is_a_clean_error(tmp_path: Path, engine: str) -> None:
    """A damaged data page (footer intact): pyarrow raises OSError; both engines name the file."""
    from rappor.exceptions import ReportFormatError

    path = tmp_path / "bad.parquet"
    write_parquet_reports(path, _batch(200, 4))
    raw = bytearray(path.read_bytes())
    raw[4] ^= 0xFF  # the first page header, just after the 4-byte magic
    raw[10] ^= 0xFF
    path.write_bytes(bytes(raw))
    with pytest.raises(ReportFormatError, match="Parquet") as info:
        aggregate_files([path], PARAMS, engine=engine)
    assert info.value.path is not None and "bad.parquet" in info.value.path
