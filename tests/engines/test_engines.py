"""rappor.engines._aggregate: the numpy engine, aggregate_files' progress and on_error, and sum-bits running through them.

The Dask and Spark adapters are tested in tests/engines/test_engines_dask.py and
tests/engines/test_engines_spark.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import rappor.engines._aggregate
from rappor import (
    Aggregate,
    InvalidParameterError,
    MissingDependencyError,
    Params,
    ReportBatch,
    ReportFormatError,
)
from rappor.formats import write_parquet_reports, write_reports
from rappor.cli._main import main
from rappor.engines import NumpyEngine, aggregate_files, check_distributed_options, report_sources
from rappor.formats._params import params_text

PARAMS = Params(k=8, h=2, m=4, p=0.5, q=0.75, f=0.5)


def _batch(n: int, seed: int) -> ReportBatch:
    rng = np.random.default_rng(seed)
    return ReportBatch.from_bits(PARAMS, rng.integers(0, 4, n), rng.integers(0, 2, (n, 8)))


@pytest.fixture
def inputs(tmp_path: Path) -> tuple[Path, Path, Path, np.ndarray]:
    """A CSV and a Parquet reports file, a params file, and the counts of both together."""
    pytest.importorskip("pyarrow", reason="writes a Parquet file: needs the parquet extra")
    a, b = _batch(300, 1), _batch(200, 2)
    write_reports(tmp_path / "a.csv", a)
    write_parquet_reports(tmp_path / "b.parquet", b)
    (tmp_path / "params.csv").write_text(params_text(PARAMS))
    expected = Aggregate.from_reports(a).merge(Aggregate.from_reports(b)).counts
    return tmp_path / "a.csv", tmp_path / "b.parquet", tmp_path / "params.csv", expected


def test_aggregate_files_mixed_csv_and_parquet(inputs: tuple[Path, Path, Path, np.ndarray]) -> None:
    csv_path, parquet_path, _, expected = inputs
    assert np.array_equal(aggregate_files([csv_path, parquet_path], PARAMS).counts, expected)


def test_aggregate_files_progress_counts_the_csv_bytes(inputs: tuple[Path, Path, Path, np.ndarray]) -> None:
    csv_path, parquet_path, _, _ = inputs
    seen: list[int] = []
    aggregate_files([csv_path, parquet_path], PARAMS, progress=seen.append)
    assert sum(seen) == csv_path.stat().st_size  # the CSV's bytes; Parquet has no byte progress


def test_aggregate_files_skip_collects_bad_rows(tmp_path: Path, inputs: tuple[Path, Path, Path, np.ndarray]) -> None:
    csv_path, parquet_path, _, expected = inputs
    lines = csv_path.read_text().splitlines(keepends=True)
    bad = tmp_path / "bad.csv"
    bad.write_text("".join(lines[:3]) + "x,9,01010101\n" + "".join(lines[3:]))
    with pytest.raises(ReportFormatError, match="bad.csv:4: expected a cohort"):
        aggregate_files([bad, parquet_path], PARAMS)
    rejects: list[object] = []
    agg = aggregate_files([bad, parquet_path], PARAMS, on_error="skip", rejects=rejects)
    assert np.array_equal(agg.counts, expected)
    assert [(r.line, r.text) for r in rejects] == [(4, "x,9,01010101")]  # type: ignore[attr-defined]


def test_aggregate_files_fail_skip_without_rejects(inputs: tuple[Path, Path, Path, np.ndarray]) -> None:
    with pytest.raises(InvalidParameterError, match="'rejects' parameter of aggregate_files"):
        aggregate_files([inputs[0]], PARAMS, on_error="skip")


def test_distributed_engines_refuse_skip() -> None:
    check_distributed_options("dask", "raise")
    with pytest.raises(InvalidParameterError, match="The spark engine stops at the first bad row"):
        check_distributed_options("spark", "skip")


def test_numpy_engine_empty_sources_is_the_empty_aggregate() -> None:
    assert np.array_equal(NumpyEngine().aggregate([], PARAMS).counts, Aggregate.empty(PARAMS).counts)


def test_sum_bits_runs_through_the_engine(inputs: tuple[Path, Path, Path, np.ndarray],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # Every sum-bits run, a plain CSV one included, is an engine's aggregate() (issue 15:
    # it used to count CSV files itself, bypassing the engines).
    csv_path, _, params_path, _ = inputs
    calls: list[tuple[str, str]] = []
    real = NumpyEngine.aggregate

    def spy(self, sources, params, **kwargs):  # type: ignore[no-untyped-def]
        calls.append((sources[0].kind, kwargs["on_error"]))
        return real(self, sources, params, **kwargs)

    monkeypatch.setattr(NumpyEngine, "aggregate", spy)
    out = csv_path.parent / "counts.csv"
    assert main(["sum-bits", "--params", str(params_path), str(csv_path), "-o", str(out)]) == 0
    assert main(["sum-bits", "--params", str(params_path), str(csv_path), "-o", str(out), "--on-error", "skip"]) == 0
    assert calls == [("csv", "raise"), ("csv", "skip")]


def test_sum_bits_skip_reads_parquet_too(inputs: tuple[Path, Path, Path, np.ndarray],
                                         capsys: pytest.CaptureFixture[str]) -> None:
    csv_path, parquet_path, params_path, expected = inputs
    out = csv_path.parent / "counts.csv"
    assert main(["sum-bits", "--params", str(params_path), str(csv_path), str(parquet_path), "-o", str(out),
                 "--on-error", "skip"]) == 0
    assert out.read_text() == "".join(",".join(map(str, row)) + "\n" for row in expected.tolist())
    assert "skipped 0 bad row(s); 500 reports counted" in capsys.readouterr().err


def test_sum_bits_fail_skip_with_a_distributed_engine(inputs: tuple[Path, Path, Path, np.ndarray],
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    csv_path, _, params_path, _ = inputs
    assert main(["sum-bits", "--params", str(params_path), str(csv_path), "-o", str(csv_path.parent / "c.csv"),
                 "--on-error", "skip", "--engine", "dask"]) == 1
    assert "skipping bad rows and collecting them in a rejects file needs the numpy engine" in capsys.readouterr().err


def test_parquet_without_pyarrow_names_the_extra(inputs: tuple[Path, Path, Path, np.ndarray],
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 15: `rappor sum-bits DIR` without pyarrow was a traceback from an unguarded
    # import in rappor.engines._aggregate; it is an ImportError naming the extra, one line on the CLI.
    _, parquet_path, params_path, _ = inputs
    for name in ("pyarrow", "pyarrow.parquet"):
        monkeypatch.setitem(sys.modules, name, None)  # `import pyarrow` now raises ImportError
    with pytest.raises(ImportError, match=r"pip install 'rappor\[parquet\]'") as info:
        report_sources([parquet_path.parent], PARAMS)
    assert isinstance(info.value, MissingDependencyError) and info.value.name == "pyarrow.parquet"
    assert main(["sum-bits", "--params", str(params_path), str(parquet_path.parent)]) == 1
    assert capsys.readouterr().err == ("rappor: error: pyarrow is needed for Parquet reports: "
                                       "pip install 'rappor[parquet]'.\n")
