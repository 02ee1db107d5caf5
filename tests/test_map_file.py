"""google/rappor map.csv files."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from rappor import (
    CandidateMap,
    InvalidParameterError,
    Params,
    ReportFormatError,
    hash_candidates,
    read_map,
    read_params,
    write_map,
)


def _same_map(a: CandidateMap, b: CandidateMap) -> bool:
    return a.strings == b.strings and (a.matrix != b.matrix).nnz == 0


def test_read_map_google_file_matches_csv_module(interop_dir: Path) -> None:
    params = read_params(interop_dir / "params.csv")
    cmap = read_map(interop_dir / "map.csv", params)
    rows = list(csv.reader((interop_dir / "map.csv").read_text().splitlines()))
    assert cmap.strings == tuple(r[0] for r in rows)
    dense = cmap.matrix.toarray()
    for col, row in enumerate(rows):
        expected = np.zeros(params.m * params.k)
        expected[[int(i) - 1 for i in row[1:]]] = 1.0
        assert np.array_equal(dense[:, col], expected)


def test_map_round_trip_hashed(tmp_path: Path, params: Params) -> None:
    cmap = hash_candidates([f"value {i}" for i in range(50)], params)
    write_map(cmap, tmp_path / "map.csv")
    assert _same_map(read_map(tmp_path / "map.csv", params), cmap)


def test_map_round_trip_google_file(tmp_path: Path, interop_dir: Path) -> None:
    params = read_params(interop_dir / "params.csv")
    cmap = read_map(interop_dir / "map.csv", params)
    write_map(cmap, tmp_path / "map.csv")
    assert _same_map(read_map(tmp_path / "map.csv", params), cmap)


def test_map_round_trip_awkward_strings(tmp_path: Path, params: Params) -> None:
    cmap = hash_candidates(["a,b", 'say "hi"', " padded ", "ünï", ""], params)
    write_map(cmap, tmp_path / "map.csv")
    assert _same_map(read_map(tmp_path / "map.csv", params), cmap)


def test_read_map_hand_written_with_coinciding_hashes(tmp_path: Path) -> None:
    params = Params(num_bloombits=4, num_hashes=2, num_cohorts=2, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    # "x,y": cohort 0 bits 0 and 3; cohort 1 both hashes on bit 2 (row 1*4 + 2 + 1 = 7).
    (tmp_path / "map.csv").write_text('"x,y",1,4,7,7\r\nz,2,3,5,8\r\n')
    cmap = read_map(tmp_path / "map.csv", params)
    assert cmap.strings == ("x,y", "z")
    assert cmap.matrix.toarray().T.tolist() == [[1, 0, 0, 1, 0, 0, 1, 0], [0, 1, 1, 0, 1, 0, 0, 1]]
    write_map(cmap, tmp_path / "out.csv")
    assert (tmp_path / "out.csv").read_text() == '"x,y",1,4,7,7\nz,2,3,5,8\n'


BAD_MAPS = [
    # (text, line, fragment); k=4, h=2, m=2: 4 indices per row, cohort 0 in [1, 4], cohort 1 in [5, 8]
    ("", None, "found an empty file"),
    ("a,1,2,5\n", 1, "h * m = 4 row indices (h = 2, m = 2), found 3"),
    ("a,1,2,5,6,7\n", 1, "found 5 indices"),
    ("a,1,2,5,6\nb,1,2,5,9\n", 2, "expected row indices in [1, m * k] = [1, 8], found 9"),
    ("a,0,2,5,6\n", 1, "found 0"),
    ("a,1,2,3,6\n", 1, "expected 1 to h = 2 distinct indices of cohort 0 in [1, 4] (cohort*k + bit + 1 with k = 4), "
                       "found 3 (1, 2, 3...)"),
    ("a,1,x,5,6\n", 1, "column 3, found 'x'"),
    ("a,1,-2,5,6\n", 1, "found '-2'"),
    ("a,1,2.0,5,6\n", 1, "found '2.0'"),
    ("a,1,,5,6\n", 1, "found ''"),
    ("a,1,2,5,6\nb,1,2,5,6\na,3,4,7,8\n", 3, "found 'a' again (first on line 1)"),
    # An index too large for int64 was an OverflowError traceback; now a range error.
    ("a,1,2,5,6\nb,1,99999999999999999999999,5,6\n", 2, "[1, 8], found 99999999999999999999999"),
    ("a,1,²,5,6\n", 1, "found '²'"),  # a Unicode digit: str.isdigit() accepts it, we do not
    ("a,1,2,5,6,\n", 1, "found 5 indices"),  # trailing comma
    ('a"b,1,2,5,6,7\n', 1, "found 5 indices"),  # a quote sends the row to the csv module
    ("a\rb,1,2,5,6\n", 1, "expected a CSV row"),  # a stray carriage return inside the row
]


@pytest.mark.parametrize(("text", "line", "fragment"), BAD_MAPS)
def test_read_map_fail_bad_input(tmp_path: Path, text: str, line: int | None, fragment: str) -> None:
    params = Params(num_bloombits=4, num_hashes=2, num_cohorts=2, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    path = tmp_path / "map.csv"
    path.write_text(text)
    with pytest.raises(ReportFormatError) as info:
        read_map(path, params)
    assert (info.value.path, info.value.line) == (str(path), line)
    assert fragment in info.value.message


def test_read_map_zero_padded_and_quoted_rows(tmp_path: Path) -> None:
    """Zero-padded indices (many digits, small value) and a quoted row mixed with plain ones."""
    params = Params(num_bloombits=4, num_hashes=2, num_cohorts=2, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    (tmp_path / "map.csv").write_text('a,0000000000001,4,7,7\n"b,""c""",2,3,5,8\nd,1,2,5,6\n')
    cmap = read_map(tmp_path / "map.csv", params)
    assert cmap.strings == ("a", 'b,"c"', "d")
    assert cmap.matrix.toarray().T.tolist() == [[1, 0, 0, 1, 0, 0, 1, 0], [0, 1, 1, 0, 1, 0, 0, 1],
                                                [1, 1, 0, 0, 1, 1, 0, 0]]


def test_write_map_matches_csv_module(tmp_path: Path, params: Params) -> None:
    """The hand-formatted rows are byte for byte what csv.writer writes (QUOTE_MINIMAL, LF)."""
    strings = ["a,b", 'say "hi"', " padded ", "ünï", "", "tab\there", '"', "multi\nline"]
    cmap = hash_candidates(strings, params)
    write_map(cmap, tmp_path / "map.csv")
    dense = cmap.matrix.toarray()
    k, h, m = params.k, params.h, params.m
    with (tmp_path / "expected.csv").open("w", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        for j, string in enumerate(strings):
            cells: list[int] = []
            for c in range(m):
                rows = [int(r) + 1 for r in np.flatnonzero(dense[c * k:(c + 1) * k, j]) + c * k]
                cells += rows + [rows[-1]] * (h - len(rows))  # coinciding hashes repeat the last
            writer.writerow([string, *cells])
    assert (tmp_path / "map.csv").read_bytes() == (tmp_path / "expected.csv").read_bytes()


def test_read_map_fail_map_made_with_other_k(tmp_path: Path, interop_dir: Path) -> None:
    params = read_params(interop_dir / "params.csv")
    small = Params(num_bloombits=8, num_hashes=params.h, num_cohorts=params.m, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    write_map(hash_candidates(["a", "b"], small), tmp_path / "map.csv")
    with pytest.raises(ReportFormatError, match="other parameters"):
        read_map(tmp_path / "map.csv", params)


def test_write_map_fail_too_many_bits_in_a_cohort(tmp_path: Path) -> None:
    params = Params(num_bloombits=4, num_hashes=1, num_cohorts=1, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    cmap = CandidateMap(params=params, strings=("a",), matrix=sp.csc_matrix(np.array([[1.0], [1.0], [0.0], [0.0]])))
    with pytest.raises(InvalidParameterError, match="Got 2 for 'a' in cohort 0"):
        write_map(cmap, tmp_path / "map.csv")
    assert not (tmp_path / "map.csv").exists()
