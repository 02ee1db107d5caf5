"""Reports files: read_reports / iter_reports / write_reports."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rappor import Params, RapporIOError, ReportBatch, ReportFormatError
from rappor.formats import iter_reports, read_reports, write_reports
from rappor.formats import _reports_csv as reports_module
from rappor.exceptions import InvalidParameterError


def _random_batch(params: Params, n: int, rng: np.random.Generator) -> ReportBatch:
    bits = rng.integers(0, 2, size=(n, params.num_bloombits))
    return ReportBatch.from_bits(params, rng.integers(0, params.num_cohorts, size=n), bits)


def _same(a: ReportBatch, b: ReportBatch) -> bool:
    return np.array_equal(a.cohorts, b.cohorts) and np.array_equal(a.words, b.words)


@pytest.mark.parametrize("k", [1, 8, 16, 31, 32, 64, 70, 130])
def test_write_read_round_trip(tmp_path: Path, rng: np.random.Generator, k: int) -> None:
    params = Params(num_bloombits=k, num_hashes=1, num_cohorts=13, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    batch = _random_batch(params, 500, rng)
    write_reports(tmp_path / "r.csv", batch)
    assert _same(read_reports(tmp_path / "r.csv", params), batch)


def test_write_reports_text_matches_bitstrings(tmp_path: Path, params: Params, rng: np.random.Generator) -> None:
    batch = _random_batch(params, 20, rng)
    write_reports(tmp_path / "r.csv", batch, [f"id{i}" for i in range(20)])
    rows = list(csv.reader((tmp_path / "r.csv").read_text().splitlines()))
    assert rows[0] == ["client", "cohort", "irr"]
    assert rows[1:] == [[f"id{i}", str(c), s] for i, (c, s) in enumerate(zip(batch.cohorts, batch.bitstrings()))]


def test_write_reports_quotes_awkward_client_ids(tmp_path: Path, params: Params, rng: np.random.Generator) -> None:
    batch = _random_batch(params, 3, rng)
    write_reports(tmp_path / "r.csv", batch, ['a,b', 'say "hi"', "plain"])
    assert _same(read_reports(tmp_path / "r.csv", params), batch)


def test_write_reports_fail_wrong_number_of_ids(tmp_path: Path, params: Params, rng: np.random.Generator) -> None:
    with pytest.raises(InvalidParameterError, match="client_ids"):
        write_reports(tmp_path / "r.csv", _random_batch(params, 3, rng), ["a"])
    assert not (tmp_path / "r.csv").exists()


def test_read_reports_google_format_matches_csv_module(interop_dir: Path) -> None:
    from rappor.formats import read_params

    params = read_params(interop_dir / "params.csv")
    batch = read_reports(interop_dir / "reports.csv", params)
    rows = list(csv.DictReader((interop_dir / "reports.csv").read_text().splitlines()))
    assert len(batch) == len(rows) == 20000
    assert batch.cohorts.tolist() == [int(r["cohort"]) for r in rows]
    assert batch.bitstrings() == [r["irr"] for r in rows]


def test_iter_reports_chunks_concatenate_to_whole(tmp_path: Path, params: Params, rng: np.random.Generator) -> None:
    batch = _random_batch(params, 103, rng)
    write_reports(tmp_path / "r.csv", batch)
    chunks = list(iter_reports(tmp_path / "r.csv", params, chunk_size=10))
    assert [len(c) for c in chunks] == [10] * 10 + [3]
    assert np.array_equal(np.concatenate([c.words for c in chunks]), batch.words)


@pytest.mark.parametrize("block", [1, 7, 64, 1000])
def test_read_reports_lines_across_block_boundaries(tmp_path: Path, params: Params, rng: np.random.Generator,
                                                   monkeypatch: pytest.MonkeyPatch, block: int) -> None:
    batch = _random_batch(params, 57, rng)
    write_reports(tmp_path / "r.csv", batch)
    monkeypatch.setattr(reports_module, "_BLOCK_BYTES", block)
    assert _same(read_reports(tmp_path / "r.csv", params), batch)


def test_read_reports_bom_crlf_blank_lines_no_final_newline(tmp_path: Path, params: Params) -> None:
    text = "\ufeffclient,cohort,irr\r\nc1,3,10000001\r\n\r\nc2,0,00000011"
    (tmp_path / "r.csv").write_bytes(text.encode("utf-8"))
    batch = read_reports(tmp_path / "r.csv", params)
    assert batch.cohorts.tolist() == [3, 0]
    assert batch.bitstrings() == ["10000001", "00000011"]
    assert batch.bits()[0].tolist() == [1, 0, 0, 0, 0, 0, 0, 1]  # character 0 is bit k - 1


def test_read_reports_header_only_is_empty(tmp_path: Path, params: Params) -> None:
    (tmp_path / "r.csv").write_text("client,cohort,irr\n")
    assert len(read_reports(tmp_path / "r.csv", params)) == 0


def test_iter_reports_progress_counts_every_byte(tmp_path: Path, params: Params, rng: np.random.Generator) -> None:
    write_reports(tmp_path / "r.csv", _random_batch(params, 40, rng))
    seen: list[int] = []
    list(iter_reports(tmp_path / "r.csv", params, progress=seen.append))
    assert sum(seen) == (tmp_path / "r.csv").stat().st_size


BAD_REPORTS = [
    # (file text, line, fragment of the message); params k=8, m=4
    ("", None, "found an empty file"),
    ("c1,0,00000001\n", 1, "expected the header"),
    ("client,cohort,value\nc1,0,00000001\n", 1, "expected the header"),
    ("client,cohort,irr\nc1,0\n", 2, "expected 3 comma-separated columns"),
    ("client,cohort,irr\nc1,0,00000001,1\n", 2, "found 4"),
    ("client,cohort,irr\nc1,0,00000001\nc2,1,0000000\n", 3, "k = 8 characters, found 7"),
    ("client,cohort,irr\nc1,0,0000000100000001\n", 2, "found 16 characters"),
    ("client,cohort,irr\nc1,0,0000000x\n", 2, "found 'x' at character 8"),
    ("client,cohort,irr\nc1,0,0000 001\n", 2, "found ' ' at character 5"),
    ("client,cohort,irr\nc1,4,00000001\n", 2, "integer in [0, 3], found '4'"),
    ("client,cohort,irr\nc1,-1,00000001\n", 2, "found '-1'"),
    ("client,cohort,irr\nc1,1.0,00000001\n", 2, "found '1.0'"),
    ("client,cohort,irr\nc1,,00000001\n", 2, "found ''"),
    ("client,cohort,irr\nc1,99999999999999999999,00000001\n", 2, "found '99999999999999999999'"),
    ('client,cohort,irr\n"c,1",0,00000001\nc2,x,00000001\n', 3, "found 'x'"),
    ("client,cohort,bloom,prr,irr\nc1,0,00000001,00000001\n", 2, "expected 5 comma-separated columns"),
    # A quoted field may hold line breaks: a record, and its line number, is where it starts.
    ('client,cohort,irr\n"a\nb",0,00000001\nc,9,00000001\n', 4, "found '9'"),
    ('client,cohort,irr\nc,0,00000001\n"a\r\n\nb",9,00000001\n', 3, "found '9'"),
    ('client,cohort,irr\n"x\nmallory,7,11111111\ny",0\n', 2, "expected 3 comma-separated columns"),
    ('client,cohort,irr\n"never closed,0,00000001\nc,1,00000001\n', 2, "found 1"),
    ('client,cohort,irr\nc,1,0000000\r1\n', 2, "found 7 characters"),  # a lone CR ends a line
]


@pytest.mark.parametrize(("text", "line", "fragment"), BAD_REPORTS)
def test_read_reports_fail_bad_input(tmp_path: Path, params: Params, text: str, line: int | None,
                                     fragment: str) -> None:
    path = tmp_path / "r.csv"
    path.write_text(text)
    with pytest.raises(ReportFormatError) as info:
        read_reports(path, params)
    assert info.value.path == str(path)
    assert info.value.line == line
    assert fragment in info.value.message


def test_read_reports_fail_line_number_in_later_block(tmp_path: Path, params: Params,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    lines = ["client,cohort,irr"] + ["c,1,01010101"] * 50 + ["c,1,0101010"] + ["c,1,01010101"] * 5
    (tmp_path / "r.csv").write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(reports_module, "_BLOCK_BYTES", 40)
    with pytest.raises(ReportFormatError) as info:
        read_reports(tmp_path / "r.csv", params)
    assert info.value.line == 52


def test_read_reports_fail_missing_file(tmp_path: Path, params: Params) -> None:
    with pytest.raises(RapporIOError, match="no such file"):
        read_reports(tmp_path / "missing.csv", params)


def test_read_reports_fail_non_utf8_bit(tmp_path: Path, params: Params) -> None:
    (tmp_path / "r.csv").write_bytes(b"client,cohort,irr\n\xff\xfe,1,00000001\nc2,0,0000000\xff\n")
    with pytest.raises(ReportFormatError, match="at character 8") as info:
        read_reports(tmp_path / "r.csv", params)
    assert info.value.line == 3  # the undecodable client id on line 2 is not used, so it is accepted


def test_read_reports_forged_report_in_a_quoted_id(tmp_path: Path) -> None:
    # Issue 13, item 5: a client id holding line breaks once smuggled a fourth, forged
    # report (all ones, cohort 7) past the reader: 3 real reports must stay 3.
    params = Params(num_bloombits=16, num_hashes=2, num_cohorts=64, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    ids = ["alice", "x\nmallory,7,1111111111111111\ny", "bob"]
    batch = ReportBatch.from_bits(params, [1, 2, 3], np.zeros((3, 16), dtype=np.uint8))
    write_reports(tmp_path / "r.csv", batch, client_ids=ids)
    for on_error in ("raise", "skip"):
        rejects: list[object] = []
        back = read_reports(tmp_path / "r.csv", params, on_error=on_error,  # type: ignore[arg-type]
                            rejects=rejects if on_error == "skip" else None)
        assert back.cohorts.tolist() == [1, 2, 3] and not back.bits().any() and rejects == []


def test_read_reports_one_report_at_k_65536_is_linear(tmp_path: Path,
                                                      run_limited_python: Callable[..., Any]) -> None:
    # Issue 13, item 7: the bit-string parser built a k x k table (_bit_of_char): one
    # report at k = 16,384 took 1 GB and 6 s, at k = 65,536 about 16 GB.  Now O(k) per
    # report.  The child has 2 GiB of address space (the old parser died there of
    # MemoryError); tracemalloc's peak includes the 16 MiB read block.
    k = 65536
    bits = np.random.default_rng(1).integers(0, 2, (3, k))
    rows = [f"c{i},{i}," + "".join(map(str, b[::-1])) for i, b in enumerate(bits)]  # character 0 = bit k-1
    (tmp_path / "r.csv").write_text("client,cohort,irr\n" + "\n".join(rows) + "\n")
    np.save(tmp_path / "bits.npy", bits)
    result = run_limited_python(
        "import tracemalloc, numpy as np\n"
        "from rappor import Params\n"
        "from rappor.formats import read_reports\n"
        f"p = Params(num_bloombits={k}, num_hashes=2, num_cohorts=4, prob_p=0.5, prob_q=0.75, prob_f=0.5)\n"
        "tracemalloc.start()\n"
        f"batch = read_reports({str(tmp_path / 'r.csv')!r}, p)\n"
        "peak = tracemalloc.get_traced_memory()[1]\n"
        f"assert (batch.bits() == np.load({str(tmp_path / 'bits.npy')!r})).all()\n"
        "assert batch.cohorts.tolist() == [0, 1, 2]\n"
        "print(peak)\n",
        address_space=2 << 30)
    assert result.returncode == 0, result.stderr[-2000:]
    assert int(result.stdout) < 64 * 2**20


def test_iter_reports_unclosed_quote_is_bounded(tmp_path: Path, params: Params,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # A quote that never closes would take the rest of the file into one field (the csv
    # module's answer); past _MAX_CLIENT_BYTES it is an error at the line where it starts.
    monkeypatch.setattr(reports_module, "_MAX_CLIENT_BYTES", 1 << 16)
    monkeypatch.setattr(reports_module, "_BLOCK_BYTES", 1 << 12)
    (tmp_path / "r.csv").write_bytes(b'client,cohort,irr\nc,0,00000001\n"c,1,00000001\n' + b"c,1,00000001\n" * 20000)
    with pytest.raises(ReportFormatError) as info:
        read_reports(tmp_path / "r.csv", params, on_error="skip", rejects=[])
    assert info.value.line == 3 and "an unclosed quote" in info.value.message
