"""rappor.engines.encode_file: a client,value file into reports, as ``rappor encode`` does (the same function)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

import rappor.engines._encode as file_encoder
from rappor import (
    InvalidParameterError,
    Params,
    RapporIOError,
    ReportFormatError,
    encode_clients,
    encode_file,
    write_key_file,
)
from rappor.formats import read_reports, write_client_values
from rappor.cli._main import main
from rappor.formats._params import params_text

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
    (tmp_path / "params.csv").write_text(params_text(PARAMS))
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


def test_encode_file_memory_is_bounded_whatever_k(tmp_path: Path) -> None:
    # Chunks had 65,536 rows at any k: about 16 bytes per report bit, so k = 4,096 took 4 GB
    # per worker and k = 2**32 was killed by the kernel. Now at most CHUNK_BITS bits per chunk:
    # 12,000 rows at k = 2,048 peak at 70 MB (tracemalloc), were 374 MB.
    import tracemalloc

    wide = Params(k=2048, h=2, m=8, p=0.25, q=0.75, f=0.5)
    path = tmp_path / "in.csv"
    write_client_values(path, [f"c{i}" for i in range(12_000)], [f"v{i % 7}" for i in range(12_000)])
    tracemalloc.start()
    try:
        assert encode_file(path, tmp_path / "out.csv", wide, KEY, seed=1) == 12_000
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    bound = 2 * file_encoder.CHUNK_BITS * 16  # twice a chunk's estimate
    assert peak < bound, (peak, bound)
    assert file_encoder.chunk_rows(wide) == file_encoder.CHUNK_BITS // 2048
    assert file_encoder.chunk_rows(PARAMS) == file_encoder.CHUNK_ROWS  # k <= 64: chunks (and seeded output) as before


# encode_variables_file: several variables per client (association analysis), the same pipeline.

def _variables_input(tmp_path: Path, rows: int = 52) -> Path:
    path = tmp_path / "vars.csv"
    lines = ["client,domain,flag"] + [f"{c if ',' not in c else chr(34) + c + chr(34)},{v},{i % 2}"
                                      for i, (c, v) in enumerate(zip(CLIENTS[:rows], VALUES[:rows]))]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_encode_variables_file_is_encode_clients_per_variable(tmp_path: Path) -> None:
    from rappor.analysis.association import boolean_params

    inp = _variables_input(tmp_path)
    out = tmp_path / "out.csv"
    assert file_encoder.encode_variables_file(inp, out, PARAMS, KEY, booleans=["flag"], seed=4) == len(CLIENTS)
    with out.open(newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["client", "cohort", "domain", "flag"]
    assert [r[0] for r in rows[1:]] == CLIENTS
    flags = [str(i % 2) for i in range(len(CLIENTS))]
    # One chunk: variable j draws from the generator (chunk 0, j) of seed 4.
    for j, (name, values, params, boolean) in enumerate([("domain", VALUES, PARAMS, False),
                                                         ("flag", flags, boolean_params(PARAMS), True)]):
        rng = np.random.default_rng(np.random.SeedSequence(4, spawn_key=(0, j)))
        expected = encode_clients(params, KEY, CLIENTS, values, rng=rng, variable=name, boolean=boolean)
        assert [int(r[1]) for r in rows[1:]] == expected.cohorts.tolist()
        assert [r[2 + j] for r in rows[1:]] == expected.bitstrings()


def test_encode_variables_file_output_does_not_depend_on_jobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Fails with the former whole-file encoder of several columns, which had no workers.
    monkeypatch.setattr(file_encoder, "CHUNK_ROWS", 5)  # 11 chunks, so the workers are used
    inp = _variables_input(tmp_path)
    file_encoder.encode_variables_file(inp, tmp_path / "one.csv", PARAMS, KEY, booleans=["flag"], seed=9, jobs=1)
    file_encoder.encode_variables_file(inp, tmp_path / "two.csv", PARAMS, KEY, booleans=["flag"], seed=9, jobs=2)
    assert (tmp_path / "one.csv").read_bytes() == (tmp_path / "two.csv").read_bytes()


def test_encode_variables_file_streams_its_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The input is read in blocks, never whole: the former encoder of several columns read
    # it with read_input_bytes (the whole file in memory).
    import rappor._util.inputs as io_module
    import rappor.formats._client_values as client_values

    monkeypatch.setattr(client_values, "BLOCK_BYTES", 64)
    monkeypatch.setattr(io_module, "read_input_bytes", lambda *a, **k: pytest.fail("read the whole input"))
    monkeypatch.setattr(file_encoder, "CHUNK_ROWS", 7)
    inp = _variables_input(tmp_path)
    assert file_encoder.encode_variables_file(inp, tmp_path / "out.csv", PARAMS, KEY, booleans=["flag"],
                                              seed=1) == len(CLIENTS)


def test_encode_variables_file_skip_and_errors(tmp_path: Path) -> None:
    inp = tmp_path / "in.csv"
    inp.write_bytes(b"client,domain,flag\na,x,1\nb,y\nc,z,maybe\nd,w, TRUE\n")
    rejects: list[object] = []
    out = tmp_path / "out.csv"
    assert file_encoder.encode_variables_file(inp, out, PARAMS, KEY, booleans=["flag"], on_error="skip",
                                              rejects=rejects) == 2
    assert [(r.line, r.reason) for r in rejects] == [  # type: ignore[attr-defined]
        (3, "expected 3 comma-separated fields (client,domain,flag), found 2"),
        (4, "expected a boolean (1, 0, true or false) for 'flag', found 'maybe'")]
    assert [line.split(",")[0] for line in out.read_text().splitlines()] == ["client", "a", "d"]
    with pytest.raises(ReportFormatError, match="in.csv:3: expected 3 comma-separated"):
        file_encoder.encode_variables_file(inp, tmp_path / "out2.csv", PARAMS, KEY, booleans=["flag"])
    inp.write_bytes(b"client,domain,flag\na,x,1\nc,z,maybe\n")
    with pytest.raises(ReportFormatError, match="in.csv:3: expected a boolean .* for 'flag', found 'maybe'"):
        file_encoder.encode_variables_file(inp, tmp_path / "out2.csv", PARAMS, KEY, booleans=["flag"])
    assert not (tmp_path / "out2.csv").exists()  # atomic: nothing half-written
    for header, message in [(b"client,domain\n", "expected the header 'client,NAME1,NAME2,...'"),
                            (b"client,a,a\n", "two or more distinct variable names"),
                            (b"", "found an empty file")]:
        inp.write_bytes(header)
        with pytest.raises(ReportFormatError, match=message):
            file_encoder.encode_variables_file(inp, tmp_path / "out2.csv", PARAMS, KEY)
    inp.write_bytes(b"client,a,b\n")
    with pytest.raises(ReportFormatError, match="in.csv:1: the boolean column 'flag' is not in the header"):
        file_encoder.encode_variables_file(inp, tmp_path / "out2.csv", PARAMS, KEY, booleans=["flag"])
    assert file_encoder.encode_variables_file(inp, tmp_path / "out3.csv", PARAMS, KEY) == 0
    assert (tmp_path / "out3.csv").read_text() == "client,cohort,a,b\n"
