"""Parquet report files: the file layout, round trips, parameter checks, streaming aggregation, bad files.

The columnar layout's conversions alone (tables another tool wrote) are in ``test_arrow.py``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rappor import Aggregate, Params, RapporIOError, ReportBatch
from rappor.exceptions import IncompatibleParamsError, InvalidParameterError, ReportFormatError
from rappor.formats._parquet import (
    ParquetReportWriter,
    aggregate_parquet,
    iter_parquet_reports,
    read_parquet_reports,
    write_parquet_reports,
)

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

K130 = Params(num_bloombits=130, num_hashes=2, num_cohorts=5, prob_p=0.5, prob_q=0.75, prob_f=0.5)


def _batch(params: Params, n: int, seed: int = 0) -> ReportBatch:
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2, (n, params.num_bloombits), dtype=np.uint8)
    return ReportBatch.from_bits(params, rng.integers(0, params.num_cohorts, n), bits)


def _same(a: ReportBatch, b: ReportBatch) -> None:
    np.testing.assert_array_equal(a.cohorts, b.cohorts)
    np.testing.assert_array_equal(a.words, b.words)


@pytest.mark.parametrize("layout", ["words", "bits"])
@pytest.mark.parametrize("k", [1, 8, 63, 64, 65, 130])
def test_parquet_round_trip(tmp_path: Path, layout: str, k: int) -> None:
    params = Params(num_bloombits=k, num_hashes=1, num_cohorts=3, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    batch = _batch(params, 257, seed=k)
    path = tmp_path / "r.parquet"
    write_parquet_reports(path, batch, layout=layout)
    _same(read_parquet_reports(path, params), batch)


def test_parquet_file_layout_as_specified(tmp_path: Path) -> None:
    batch = _batch(K130, 100)
    path = tmp_path / "r.parquet"
    write_parquet_reports(path, batch)
    pf = pq.ParquetFile(path)
    schema = pf.schema_arrow
    assert schema.names == ["cohort", "w0", "w1", "w2"]
    assert schema.field("cohort").type == pa.int32()
    assert all(schema.field(f"w{j}").type == pa.int64() for j in range(3))
    assert json.loads(schema.metadata[b"rappor.params"]) == K130.as_dict()
    assert b"rappor.layout" in schema.metadata
    column_meta = pf.metadata.row_group(0).column(0)
    assert column_meta.compression == "ZSTD"
    assert any("DICTIONARY" in enc for enc in column_meta.encodings)
    # Bit j is (w[j // 64] >> (j % 64)) & 1, read back independently of rappor.
    table = pq.read_table(path)
    bits = batch.bits()
    for j in (0, 1, 63, 64, 100, 129):
        word = table.column(f"w{j // 64}").to_numpy().view(np.uint64)
        np.testing.assert_array_equal((word >> np.uint64(j % 64)) & np.uint64(1), bits[:, j])
    np.testing.assert_array_equal(table.column("cohort").to_numpy(), batch.cohorts)


def test_parquet_bits_column_same_bytes(tmp_path: Path) -> None:
    batch = _batch(K130, 50)
    path = tmp_path / "r.parquet"
    write_parquet_reports(path, batch, layout="bits")
    column = pq.read_table(path).column("bits")
    assert column.type == pa.binary(17)
    first = np.frombuffer(column[0].as_py(), dtype=np.uint8)
    np.testing.assert_array_equal(np.unpackbits(first, bitorder="little")[:130], batch.bits()[0])


def test_parquet_fail_params_mismatch(tmp_path: Path, params: Params) -> None:
    path = tmp_path / "r.parquet"
    write_parquet_reports(path, _batch(params, 10))
    other = Params(num_bloombits=8, num_hashes=2, num_cohorts=4, prob_p=0.25, prob_q=0.75, prob_f=0.5)
    with pytest.raises(IncompatibleParamsError, match=r"r\.parquet.*p=0\.5 \(expected 0\.25\)"):
        read_parquet_reports(path, other)


def test_parquet_fail_too_many_word_columns(tmp_path: Path) -> None:
    path = tmp_path / "r.parquet"
    write_parquet_reports(path, _batch(K130, 10))
    table = pq.read_table(path).replace_schema_metadata(None)
    pq.write_table(table, path)
    params64 = Params(num_bloombits=64, num_hashes=2, num_cohorts=5, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    with pytest.raises(IncompatibleParamsError, match="'w1'"):
        read_parquet_reports(path, params64)


def test_parquet_fail_wrong_bits_width(tmp_path: Path) -> None:
    path = tmp_path / "r.parquet"
    write_parquet_reports(path, _batch(K130, 10), layout="bits")
    pq.write_table(pq.read_table(path).replace_schema_metadata(None), path)
    params = Params(num_bloombits=64, num_hashes=2, num_cohorts=5, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    with pytest.raises(IncompatibleParamsError, match="17 bytes per report, expected 8"):
        read_parquet_reports(path, params)


@pytest.mark.parametrize(
    ("table", "match"),
    [
        ({"w0": [1]}, "expected a 'cohort' column"),
        ({"cohort": [0]}, "expected columns 'cohort' and 'w0'"),
        ({"cohort": [0, 9], "w0": [1, 1]}, r"row 1: expected a cohort, an integer in \[0, 3\], found 9"),
        # the first bad row in file order, by its row (was "rows 0..2", and the engine blamed the -3)
        ({"cohort": [1, 70000, -3], "w0": [1, 1, 1]}, r"row 1: expected a cohort, an integer in \[0, 3\], found 70000"),
        ({"cohort": [0, None], "w0": [1, 1]}, "row 1: column 'cohort' is null"),
        ({"cohort": [0], "w0": [256]}, "bits: has bits set at or above bit 8"),
        ({"cohort": ["a"], "w0": [1]}, "column 'cohort' must hold integers"),
        ({"cohort": [0, 1], "bits": [b"\x01", b"\x01\x02"]}, "row 1: column 'bits' has 2 bytes, expected 1"),
    ],
)
def test_parquet_fail_bad_columns(tmp_path: Path, params: Params, table: dict[str, list[object]], match: str) -> None:
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table(table), path)
    with pytest.raises(ReportFormatError, match=match) as info:
        read_parquet_reports(path, params)
    assert info.value.path == str(path)


def test_parquet_fail_not_parquet(tmp_path: Path, params: Params) -> None:
    path = tmp_path / "reports.csv"
    path.write_text("client,cohort,irr\nc1,0,01010101\n")
    with pytest.raises(ReportFormatError, match="not a readable Parquet file"):
        read_parquet_reports(path, params)
    with pytest.raises(RapporIOError, match="no such file"):
        read_parquet_reports(tmp_path / "missing.parquet", params)
    with pytest.raises(RapporIOError, match="found none"):
        read_parquet_reports(tmp_path, params)


def test_parquet_streaming_batches_and_directory(tmp_path: Path) -> None:
    batch = _batch(K130, 1000, seed=3)
    (tmp_path / "ds").mkdir()
    with ParquetReportWriter(tmp_path / "ds" / "part-0.parquet", K130, row_group_size=300) as writer:
        writer.write(ReportBatch(params=K130, cohorts=batch.cohorts[:600], words=batch.words[:600]))
    write_parquet_reports(
        tmp_path / "ds" / "part-1.parquet", ReportBatch(params=K130, cohorts=batch.cohorts[600:], words=batch.words[600:])
    )
    chunks = list(iter_parquet_reports(tmp_path / "ds", K130, batch_size=128))
    assert max(len(c) for c in chunks) <= 128
    assert sum(len(c) for c in chunks) == 1000
    _same(read_parquet_reports(tmp_path / "ds", K130), batch)
    expected = Aggregate.from_reports(batch)
    np.testing.assert_array_equal(aggregate_parquet(tmp_path / "ds", K130, batch_size=77).counts, expected.counts)


def test_parquet_aggregate_counts_exact(tmp_path: Path) -> None:
    # Reference counts by brute force over the unpacked bits (independent of Aggregate.from_reports).
    batch = _batch(K130, 3000, seed=7)
    path = tmp_path / "r.parquet"
    write_parquet_reports(path, batch)
    expected = np.zeros((5, 131), dtype=np.int64)
    bits = batch.bits()
    for c in range(5):
        rows = batch.cohorts == c
        expected[c, 0] = rows.sum()
        expected[c, 1:] = bits[rows].sum(axis=0)
    np.testing.assert_array_equal(aggregate_parquet(path, K130, batch_size=1000).counts, expected)


def test_parquet_empty_file(tmp_path: Path, params: Params) -> None:
    path = tmp_path / "empty.parquet"
    write_parquet_reports(path, _batch(params, 0))
    assert len(read_parquet_reports(path, params)) == 0
    assert aggregate_parquet(path, params).total_reports == 0


def test_parquet_writer_atomic_on_error(tmp_path: Path, params: Params) -> None:
    path = tmp_path / "r.parquet"
    with pytest.raises(ZeroDivisionError), ParquetReportWriter(path, params) as writer:
        writer.write(_batch(params, 10))
        1 / 0  # noqa: B018
    assert list(tmp_path.iterdir()) == []


def test_parquet_writer_fail_other_params(tmp_path: Path, params: Params) -> None:
    with pytest.raises(IncompatibleParamsError), ParquetReportWriter(tmp_path / "r.parquet", params) as writer:
        writer.write(_batch(K130, 1))
    with pytest.raises(InvalidParameterError, match="'layout' parameter"):
        ParquetReportWriter(tmp_path / "r.parquet", params, layout="hex")  # type: ignore[arg-type]


def test_parquet_streaming_memory_is_flat(tmp_path: Path) -> None:
    # 12 row groups of 20,000 reports (320 kB of words each, 3.8 MB in all): Arrow memory
    # held while streaming must stay near one row group, not grow with the file.
    params = Params(num_bloombits=128, num_hashes=2, num_cohorts=8, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    rng = np.random.default_rng(5)
    path = tmp_path / "big.parquet"
    with ParquetReportWriter(path, params, row_group_size=20_000) as writer:
        for _ in range(2):
            words = rng.integers(0, 2**64, (120_000, 2), dtype=np.uint64, endpoint=False)
            writer.write(ReportBatch(params=params, cohorts=rng.integers(0, 8, 120_000), words=words))
    peak = 0
    for _ in iter_parquet_reports(path, params, batch_size=20_000):
        peak = max(peak, pa.total_allocated_bytes())
    assert peak < 4 * 20_000 * 20  # a few row groups of 20 bytes per report


def _dataset(root: Path, params: Params, names: list[str]) -> dict[str, ReportBatch]:
    """Write one small batch per name (paths relative to ``root``); return them by name."""
    batches = {}
    for i, name in enumerate(names):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        batches[name] = _batch(params, 10 + i, seed=i)
        write_parquet_reports(root / name, batches[name])
    return batches


def test_parquet_directory_skips_hidden_and_underscore_directories(tmp_path: Path, params: Params) -> None:
    # Spark writes a running job's parts under _temporary/: they are not final and were counted.
    batches = _dataset(tmp_path, params, ["part-0.parquet", "sub/part-1.parquet", "_temporary/0/part-9.parquet",
                                          ".staging/part-8.parquet", "_SUCCESS.parquet", ".part-0.parquet"])
    expected = Aggregate.from_reports(batches["part-0.parquet"]).merge(Aggregate.from_reports(batches["sub/part-1.parquet"]))
    np.testing.assert_array_equal(aggregate_parquet(tmp_path, params).counts, expected.counts)


def test_parquet_directory_that_cannot_be_listed_is_an_error(tmp_path: Path, params: Params,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # A subdirectory without read permission was skipped in silence (its reports left out of the
    # count). Denied through os.scandir, so that the test also holds when run as root.
    _dataset(tmp_path, params, ["part-0.parquet", "locked/part-1.parquet"])
    real_scandir = os.scandir

    def scandir(path: Any = ".") -> Any:
        if os.fspath(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    with pytest.raises(RapporIOError, match="cannot read the directory of Parquet files: permission denied") as info:
        aggregate_parquet(tmp_path, params)
    assert str(info.value).startswith(f"{tmp_path / 'locked'}: ")
