"""rappor.file_encoder.encode_file: a client,value file into reports, as ``rappor encode`` does (the same function)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

import rappor.file_encoder as file_encoder
from rappor import (
    InvalidParameterError,
    Params,
    RapporIOError,
    ReportFormatError,
    encode_clients,
    encode_file,
    read_reports,
    write_client_values,
    write_key_file,
)
from rappor.cli import main

PARAMS = Params(k=16, h=2, m=8, p=0.25, q=0.75, f=0.5)
KEY = bytes(range(100, 132))
CLIENTS = [f"c{i % 13}" for i in range(50)] + ["a,b", " x "]
VALUES = [f"v{i % 7}" for i in range(50)] + ["q", "r"]


@pytest.fixture
def inp(tmp_path: Path) -> Path:
    path = tmp_path / "in.csv"
    write_client_values(path, CLIENTS, VALUES)
    return path


def test_encode_file_is_encode_clients_row_for_row(tmp_path: Path, inp: Path) -> None:
    out = tmp_path / "out.csv"
    assert encode_file(inp, out, PARAMS, KEY, seed=4) == len(CLIENTS)
    with out.open(newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["client", "cohort", "irr"]
    assert [r[0] for r in rows[1:]] == CLIENTS
    # One chunk: the generator of chunk 0 of seed 4.
    rng = np.random.default_rng(np.random.SeedSequence(4, spawn_key=(0,)))
    expected = encode_clients(PARAMS, KEY, CLIENTS, VALUES, rng=rng)
    got = read_reports(out, PARAMS)
    assert np.array_equal(got.cohorts, expected.cohorts) and np.array_equal(got.words, expected.words)


def test_encode_file_output_does_not_depend_on_jobs(tmp_path: Path, inp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(file_encoder, "CHUNK_ROWS", 5)  # 11 chunks, so the workers are used
    encode_file(inp, tmp_path / "one.csv", PARAMS, KEY, seed=9, jobs=1)
    encode_file(inp, tmp_path / "two.csv", PARAMS, KEY, seed=9, jobs=2)
    assert (tmp_path / "one.csv").read_bytes() == (tmp_path / "two.csv").read_bytes()


def test_encode_file_equals_rappor_encode(tmp_path: Path, inp: Path) -> None:
    (tmp_path / "params.csv").write_text(PARAMS.to_csv())
    write_key_file(tmp_path / "key", KEY)
    assert main(["encode", str(inp), "--params", str(tmp_path / "params.csv"), "--key-file",
                 str(tmp_path / "key"), "--seed", "2", "-o", str(tmp_path / "cli.csv")]) == 0
    encode_file(inp, tmp_path / "lib.csv", PARAMS, KEY, seed=2)
    assert (tmp_path / "cli.csv").read_bytes() == (tmp_path / "lib.csv").read_bytes()


def test_encode_file_skip_writes_the_good_rows(tmp_path: Path) -> None:
    inp = tmp_path / "in.csv"
    inp.write_bytes(b"client,value\na,1\nbad\nb,2\n")
    rejects: list[object] = []
    assert encode_file(inp, tmp_path / "out.csv", PARAMS, KEY, on_error="skip", rejects=rejects) == 2
    assert [r.line for r in rejects] == [3]  # type: ignore[attr-defined]
    with pytest.raises(ReportFormatError, match="in.csv:3:"):
        encode_file(inp, tmp_path / "out2.csv", PARAMS, KEY)
    assert not (tmp_path / "out2.csv").exists()  # atomic: nothing half-written


@pytest.mark.parametrize(("kwargs", "message"), [({"jobs": 0}, "'jobs' parameter of encode_file"),
                                                 ({"seed": -1}, "'seed' parameter of encode_file")])
def test_encode_file_fail_bad_arguments(tmp_path: Path, inp: Path, kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(InvalidParameterError, match=message):
        encode_file(inp, tmp_path / "out.csv", PARAMS, KEY, **kwargs)  # type: ignore[arg-type]


def test_encode_file_fail_missing_input(tmp_path: Path) -> None:
    with pytest.raises(RapporIOError, match="nope.csv: cannot read file: no such file"):
        encode_file(tmp_path / "nope.csv", tmp_path / "out.csv", PARAMS, KEY)
    assert not (tmp_path / "out.csv").exists()
