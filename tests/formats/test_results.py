"""rappor.formats._results: results.csv written and read back; a file that is not one is refused by line."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from rappor import Aggregate, DecodeResult, Decoder, Params, ReportFormatError, hash_candidates
from rappor.formats import read_results, write_results

PARAMS = Params(num_bloombits=8, num_hashes=2, num_cohorts=4, prob_p=0.25, prob_q=0.75, prob_f=0.5)


def _result() -> DecodeResult:
    counts = np.column_stack([np.full(4, 1000), np.array([[900, 300, 250, 260, 700, 240, 270, 255]] * 4)])
    return Decoder().decode(Aggregate(params=PARAMS, counts=counts), hash_candidates(["a", "b,c", "d"], PARAMS))


@pytest.mark.parametrize("every", [False, True])
def test_results_round_trip(tmp_path: Path, every: bool) -> None:
    result = _result()
    path = tmp_path / "results.csv"
    write_results(result, path, all=every)
    table = read_results(path)
    want = result.table()[result.ranking(every)]
    assert list(table["string"]) == list(want["string"])
    for column in ("estimate", "std_error", "proportion", "prop_std_error", "prop_low_95", "prop_high_95", "pvalue"):
        np.testing.assert_array_equal(table[column], want[column])  # shortest repr: exact round trip
    np.testing.assert_array_equal(table["detected"], want["detected"])


def test_read_results_google_layout_and_special_values(tmp_path: Path) -> None:
    path = tmp_path / "results.csv"
    path.write_text("string,estimate,std_error,proportion,prop_std_error,prop_low_95,prop_high_95\n"
                    '"x,y",NA,Inf,0.5,-Inf,0,1\n')
    (row,) = read_results(path)
    assert row["string"] == "x,y" and math.isnan(row["estimate"]) and row["std_error"] == math.inf
    assert row["prop_std_error"] == -math.inf and "pvalue" not in read_results(path).dtype.names


@pytest.mark.parametrize(("text", "message", "line"), [
    ("string,count\na,1\n", "expected the header", 1),
    ("string,estimate,std_error,proportion,prop_std_error,prop_low_95,prop_high_95\na,1,2\n", "expected 7 fields", 2),
    ("string,estimate,std_error,proportion,prop_std_error,prop_low_95,prop_high_95\na,1,2,x,0,0,1\n",
     "a number in proportion", 2),
    ("string,estimate,std_error,proportion,prop_std_error,prop_low_95,prop_high_95,pvalue,detected\n"
     "a,1,2,0.1,0,0,1,0.5,maybe\n", "true or false in detected", 2),
])
def test_read_results_fail_names_line(tmp_path: Path, text: str, message: str, line: int) -> None:
    path = tmp_path / "results.csv"
    path.write_text(text)
    with pytest.raises(ReportFormatError, match=message) as info:
        read_results(path)
    assert info.value.line == line and info.value.path == str(path)
