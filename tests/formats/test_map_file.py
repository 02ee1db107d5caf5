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
)
from rappor.formats import read_map, read_params, write_map
from rappor.collect._compat import hash_candidates_google


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


# --- the layout of google/rappor's shipped apps/rappor-analysis/map.csv -------------------------------------

def _sorted_layout(cmap: CandidateMap) -> str:
    """``cmap`` as google/rappor's analysis app ships its map: the candidate quoted, its distinct
    indices in ascending order, one empty field for each index saved where hashes coincide."""
    width = cmap.params.h * cmap.params.m
    lines = []
    for j, string in enumerate(cmap.strings):
        indices = [str(i + 1) for i in np.flatnonzero(cmap.matrix[:, j].toarray().ravel())]
        lines.append(",".join([f'"{string}"', *indices, *[""] * (width - len(indices))]) + "\n")
    return "".join(lines)


def test_map_sorted_layout_file_is_made_by_google_hashing(interop_dir: Path) -> None:
    """tests/data/google_rappor_small/map_sorted.csv is what its README says: made here from candidates.txt."""
    params = read_params(interop_dir / "params.csv")
    strings = (interop_dir / "candidates.txt").read_text().splitlines()
    expected = _sorted_layout(hash_candidates_google(strings, params))
    text = (interop_dir / "map_sorted.csv").read_text()
    assert text == expected
    collided = [line for line in text.splitlines() if line.endswith(",")]
    assert 5 <= len(collided) < len(strings)  # rows with fewer than h * m indices, and rows without
    assert any(line.endswith(",,") for line in collided)  # two coincidences in one row


def test_read_map_sorted_layout_equals_positional_layout(interop_dir: Path) -> None:
    """Ascending indices with empty fields where hashes coincide: the same map as google/rappor's
    positional map.csv of the same candidates (found 15 indices / '' errors before)."""
    params = read_params(interop_dir / "params.csv")
    strings = (interop_dir / "candidates.txt").read_text().splitlines()
    sorted_map = read_map(interop_dir / "map_sorted.csv", params)
    assert _same_map(sorted_map, read_map(interop_dir / "map.csv", params))
    assert _same_map(sorted_map, hash_candidates_google(strings, params))


@pytest.mark.parametrize(("row", "bits"), [
    # k=4, h=2, m=2: cohort 0 in [1, 4], cohort 1 in [5, 8]
    ("a,7,1,4,7", [0, 3, 6]),          # any order; a repeat collapses
    ("a,8,5,2,1", [0, 1, 4, 7]),       # cohorts out of order
    ("a,1,5,,", [0, 4]),               # one index per cohort, empty fields close the row
    ("a,5,1,1,", [0, 4]),              # repeats and an empty field
    ('"a",2,3,6,', [1, 2, 5]),         # quoted candidate (csv path)
])
def test_read_map_rows_are_sets_of_indices(tmp_path: Path, row: str, bits: list[int]) -> None:
    params = Params(num_bloombits=4, num_hashes=2, num_cohorts=2, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    (tmp_path / "map.csv").write_text(f"z,1,2,5,6\n{row}\n")
    cmap = read_map(tmp_path / "map.csv", params)
    assert cmap.strings == ("z", "a")
    assert np.flatnonzero(cmap.matrix[:, 1].toarray()).tolist() == bits
    assert np.flatnonzero(cmap.matrix[:, 0].toarray()).tolist() == [0, 1, 4, 5]


BAD_SET_ROWS = [
    # (row, fragment) with k=4, h=2, m=2
    ("a,1,2,3,5", "expected 1 to h = 2 distinct indices of cohort 0 in [1, 4] (cohort*k + bit + 1 with k = 4), "
                  "found 3 (1, 2, 3...)"),
    ("a,1,2,,", "distinct indices of cohort 1 in [5, 8] (cohort*k + bit + 1 with k = 4), found none"),
    ("a,,,,", "distinct indices of cohort 0 in [1, 4] (cohort*k + bit + 1 with k = 4), found none"),
    ("a,1,9,5,", "expected row indices in [1, m * k] = [1, 8], found 9 in column 3, outside every cohort"),
    ("a,1,,5,", "in column 3, found ''"),             # an empty field before an index
    ("a,1,5,,,", "h * m = 4 row indices (h = 2, m = 2), found 5"),  # more fields than h * m
    ("a,1,5", "h * m = 4 row indices (h = 2, m = 2), found 2"),     # fewer fields: a truncated row
]


@pytest.mark.parametrize(("row", "fragment"), BAD_SET_ROWS)
def test_read_map_fail_bad_set_rows(tmp_path: Path, row: str, fragment: str) -> None:
    params = Params(num_bloombits=4, num_hashes=2, num_cohorts=2, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    path = tmp_path / "map.csv"
    path.write_text(f"z,1,2,5,6\ny,1,2,5,6\n{row}\n")
    with pytest.raises(ReportFormatError) as info:
        read_map(path, params)
    assert (info.value.path, info.value.line) == (str(path), 3)
    assert fragment in info.value.message


def test_read_map_reports_the_first_bad_row_in_file_order(tmp_path: Path) -> None:
    """Index ranges are checked after every row is split, fast path or csv module alike: the
    first bad row of the file is the one named."""
    params = Params(num_bloombits=4, num_hashes=2, num_cohorts=2, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    path = tmp_path / "map.csv"
    path.write_text('"q",1,2,3,5\nz,1,2,5,9\n')  # line 1 (csv path): 3 in cohort 0; line 2 (fast): 9
    with pytest.raises(ReportFormatError) as info:
        read_map(path, params)
    assert info.value.line == 1


# --- quoting: candidates with line breaks and carriage returns ----------------------------------------------

def test_map_round_trip_line_breaks_and_carriage_returns(tmp_path: Path, params: Params) -> None:
    """A candidate holding CR, LF or CRLF is quoted and reads back (a bare 'a\\rb' made an unreadable file)."""
    strings = ["a\rb", "c\nd", "e\r\nf", "g\r", "\rh", "\n", "\ufeffbom", 'q"\r"']
    cmap = hash_candidates(strings, params)
    write_map(cmap, tmp_path / "map.csv")
    assert _same_map(read_map(tmp_path / "map.csv", params), cmap)
    assert (tmp_path / "map.csv").read_bytes().startswith(b'"a\rb",')


def test_read_map_quoted_field_spans_lines_and_keeps_line_numbers(tmp_path: Path) -> None:
    params = Params(num_bloombits=4, num_hashes=2, num_cohorts=2, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    path = tmp_path / "map.csv"
    path.write_bytes(b'"x\r\ny\nz",1,2,5,6\r\nw,1,2,5,6\nw,1,2,5,6\n')
    with pytest.raises(ReportFormatError) as info:
        read_map(path, params)
    assert info.value.line == 5 and "found 'w' again (first on line 4)" in info.value.message
    path.write_bytes(b'"x\r\ny\nz",1,2,5,6\r\nw,1,2,5,6\n')
    assert read_map(path, params).strings == ("x\r\ny\nz", "w")


def test_read_map_fail_quote_left_open(tmp_path: Path) -> None:
    params = Params(num_bloombits=4, num_hashes=2, num_cohorts=2, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    path = tmp_path / "map.csv"
    path.write_text('z,1,2,5,6\n"a,1,2,5,6\nb,1,2,5,6\n')
    with pytest.raises(ReportFormatError, match="expected a closing quote") as info:
        read_map(path, params)
    assert info.value.line == 2


# --- write_map: time and memory follow the output, not m * k ------------------------------------------------

def test_write_map_wide_rows_are_written_in_runs_of_cohorts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows wider than the formatting budget are written a run of cohorts at a time, with the
    same text as the block path."""
    import rappor.formats._map

    params = Params(num_bloombits=64, num_hashes=3, num_cohorts=20, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    cmap = hash_candidates([f"v{i}" for i in range(30)], params)
    write_map(cmap, tmp_path / "block.csv")
    monkeypatch.setattr(rappor.formats._map, "_WRITE_CELLS", 7)  # width 60 > 7: 2 cohorts per run
    write_map(cmap, tmp_path / "wide.csv")
    assert (tmp_path / "wide.csv").read_bytes() == (tmp_path / "block.csv").read_bytes()
    monkeypatch.setattr(rappor.formats._map, "_WRITE_CELLS", 2)  # fewer cells than h: one cohort per run
    write_map(cmap, tmp_path / "narrow.csv")
    assert (tmp_path / "narrow.csv").read_bytes() == (tmp_path / "block.csv").read_bytes()


def test_write_map_memory_follows_the_output(tmp_path: Path) -> None:
    """One candidate at k = 2**16, m = 64 writes 128 indices; write_map tabulated the text of all
    m * k = 4,194,304 positions first (about 250 MB; at k = 2**20 it ran out of memory)."""
    import tracemalloc

    params = Params(num_bloombits=2**16, num_hashes=2, num_cohorts=64, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    cmap = hash_candidates(["one"], params)
    tracemalloc.start()
    try:
        write_map(cmap, tmp_path / "map.csv")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, peak
    assert _same_map(read_map(tmp_path / "map.csv", params), cmap)


def test_write_map_many_hashes(tmp_path: Path) -> None:
    """h = k = 3000 (a loop over the h hash slots took 4 s at h = 10**6): the row holds every
    set bit in order, the last repeated where hashes coincide."""
    params = Params(num_bloombits=3000, num_hashes=3000, num_cohorts=2, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    cmap = hash_candidates(["one", "two"], params)
    write_map(cmap, tmp_path / "map.csv")
    rows = list(csv.reader((tmp_path / "map.csv").read_text().splitlines()))
    dense = cmap.matrix.toarray()
    for j, row in enumerate(rows):
        for c in range(2):
            cells = [int(x) for x in row[1 + c * 3000:1 + (c + 1) * 3000]]
            ones = (np.flatnonzero(dense[c * 3000:(c + 1) * 3000, j]) + c * 3000 + 1).tolist()
            assert cells == ones + [ones[-1]] * (3000 - len(ones))
    assert _same_map(read_map(tmp_path / "map.csv", params), cmap)


def test_write_map_blocks(tmp_path: Path) -> None:
    """Consecutive blocks of one map are written as the whole map; a block with other
    parameters is refused before anything is written."""
    params = Params(num_bloombits=16, num_hashes=2, num_cohorts=4, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    strings = [f"v{i}" for i in range(10)]
    write_map(hash_candidates(strings, params), tmp_path / "whole.csv")
    write_map((hash_candidates(strings[i:i + 3], params) for i in range(0, 10, 3)), tmp_path / "blocks.csv")
    assert (tmp_path / "blocks.csv").read_bytes() == (tmp_path / "whole.csv").read_bytes()
    other = Params(num_bloombits=16, num_hashes=2, num_cohorts=2, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    with pytest.raises(InvalidParameterError, match="same parameters"):
        write_map(iter([hash_candidates(["a"], params), hash_candidates(["b"], other)]), tmp_path / "bad.csv")
    assert not (tmp_path / "bad.csv").exists()
