"""The columnar layout's conversions: ReportBatch <-> Arrow, tables other tools write, and the errors naming rows."""

from __future__ import annotations

import numpy as np
import pytest

from rappor import Params, ReportBatch
from rappor.exceptions import IncompatibleParamsError, ReportFormatError
from rappor.formats._arrow import arrow_to_batch, batch_to_arrow, report_columns, word_columns

pa = pytest.importorskip("pyarrow")

K130 = Params(num_bloombits=130, num_hashes=2, num_cohorts=5, prob_p=0.5, prob_q=0.75, prob_f=0.5)


def _batch(params: Params, n: int, seed: int = 0) -> ReportBatch:
    rng = np.random.default_rng(seed)
    return ReportBatch.from_bits(params, rng.integers(0, params.num_cohorts, n),
                                 rng.integers(0, 2, (n, params.num_bloombits), dtype=np.uint8))


def _assert_same(a: ReportBatch, b: ReportBatch) -> None:
    assert (a.cohorts.tolist(), a.words.tolist()) == (b.cohorts.tolist(), b.words.tolist())


@pytest.mark.parametrize("layout", ["words", "bits"])
@pytest.mark.parametrize("k", [1, 8, 63, 64, 65, 130])
def test_batch_to_arrow_and_back(layout: str, k: int) -> None:
    params = Params(num_bloombits=k, num_hashes=1, num_cohorts=3, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    batch = _batch(params, 77, seed=k)
    record = batch_to_arrow(batch, layout=layout)  # type: ignore[arg-type]
    expected = ["cohort", *word_columns(params)] if layout == "words" else ["cohort", "bits"]
    assert record.schema.names == expected
    _assert_same(arrow_to_batch(record, params), batch)


def test_foreign_table_without_metadata() -> None:
    # A table written by another tool: uint64 words, a dictionary cohort column, an extra column.
    batch = _batch(K130, 40)
    table = pa.table({
        "cohort": pa.array(batch.cohorts.astype(np.int32)).dictionary_encode(),
        **{f"w{j}": pa.array(batch.words[:, j], type=pa.uint64()) for j in range(3)},
        "client": pa.array([f"c{i}" for i in range(40)]),
    })
    _assert_same(arrow_to_batch(table, K130), batch)


def test_variable_binary_bits() -> None:
    # Spark writes binary columns as plain (variable-length) binary.
    batch = _batch(K130, 30)
    raw = batch.words.astype("<u8").view(np.uint8).reshape(30, -1)[:, :17]
    table = pa.table({"cohort": pa.array(batch.cohorts), "bits": pa.array([r.tobytes() for r in raw], pa.binary())})
    _assert_same(arrow_to_batch(table, K130), batch)


def test_report_columns_refuses_a_wider_file() -> None:
    params64 = Params(num_bloombits=64, num_hashes=2, num_cohorts=5, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    assert report_columns(["cohort", "w0", "x"], params64, "t") == ["cohort", "w0"]
    assert report_columns(["bits", "cohort"], params64, "t") == ["cohort", "bits"]
    with pytest.raises(IncompatibleParamsError, match="t: found a column 'w1'"):
        report_columns(["cohort", "w0", "w1"], params64, "t")


def test_errors_name_the_row_in_the_whole_file(params: Params) -> None:
    # A batch starting at row 1000 of its file: the bad row is 1001, and the source is named.
    table = pa.table({"cohort": [0, 9], "w0": [1, 1]})
    with pytest.raises(ReportFormatError, match=r"row 1001: expected a cohort, an integer in \[0, 3\], found 9") as info:
        arrow_to_batch(table, params, source="part-7.parquet", first_row=1000)
    assert info.value.path == "part-7.parquet"
