"""The association table as CSV (rappor.formats._assoc_results): ours and google/rappor's layout."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from rappor import InvalidParameterError
from rappor.analysis.association import AssociationResult
from rappor.formats import write_assoc_results


def _result() -> AssociationResult:
    proportion = np.array([[0.4, 0.1], [0.3, 0.2]])
    std_error = np.array([[0.01, 0.02], [np.nan, 0.04]])
    return AssociationResult(
        variables=("domain", "flag"), categories=(("=cmd", "b,c"), ("TRUE", "FALSE")),
        proportion=proportion, std_error=std_error, covariance=np.diag(np.nan_to_num(std_error.reshape(-1)) ** 2),
        n_reports=100, n_patterns=10, method="sqp", iterations=3, max_iterations=100, converged=True, gap=0.0,
        tolerance=1e-6, log_likelihood=-1.0)


def test_write_assoc_results_google_layout(tmp_path: Path) -> None:
    # bin/decode_assoc.R writes the last variable first, every text quoted, the last variable fastest.
    path = tmp_path / "assoc-results.csv"
    write_assoc_results(_result(), path, layout="google")
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == '"flag","domain","proportion","std_error","prop_low_95","prop_high_95"'
    assert [line.split(",")[:2] for line in lines[1:3]] == [['"TRUE"', "\"'=cmd\""], ['"FALSE"', "\"'=cmd\""]]
    rows = list(csv.reader(lines))
    assert [row[2] for row in rows[1:]] == ["0.4", "0.1", "0.3", "0.2"]
    assert rows[3][3] == "NA"  # a missing standard error, as R's write.csv writes it


def test_write_assoc_results_rappor_layout_is_the_table(tmp_path: Path) -> None:
    result = _result()
    path = tmp_path / "joint.csv"
    write_assoc_results(result, path)
    rows = list(csv.reader(path.read_text(encoding="utf-8").splitlines()))
    assert tuple(rows[0]) == result.table().dtype.names
    assert [row[:2] for row in rows[1:]] == [["'=cmd", "TRUE"], ["'=cmd", "FALSE"], ["b,c", "TRUE"], ["b,c", "FALSE"]]
    assert [float(row[2]) for row in rows[1:]] == [0.4, 0.1, 0.3, 0.2]


def test_write_assoc_results_fail_unknown_layout(tmp_path: Path) -> None:
    with pytest.raises(InvalidParameterError, match="'layout' parameter of write_assoc_results"):
        write_assoc_results(_result(), tmp_path / "x.csv", layout="excel")  # type: ignore[arg-type]
    assert not (tmp_path / "x.csv").exists()
