"""The collection commands: sum-bits, merge-counts, hash-candidates."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from rappor import hash_candidates
from rappor.formats import read_candidates, read_map, read_params
from rappor.cli._main import main

TINY_PARAMS = "k,h,m,p,q,f\n4,1,2,0.5,0.75,0.5\n"
# A tiny collection in google/rappor's formats, counted by hand (character 0 = bit 3):
# cohort 0: 1001 (bits 3, 0) and 1100 (bits 3, 2) -> 2 reports; bit0 1, bit1 0, bit2 1, bit3 2
# cohort 1: 0110 (bits 2, 1)                      -> 1 report;  bit0 0, bit1 1, bit2 1, bit3 0
TINY_REPORTS = ("client,cohort,bloom,prr,irr\n"
                "c1,0,0001,0011,1001\n"
                "c2,1,0010,0010,0110\n"
                "c3,0,1000,1000,1100\n")
TINY_COUNTS = "2,1,0,1,2\n1,0,1,1,0\n"


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    (tmp_path / "params.csv").write_text(TINY_PARAMS)
    (tmp_path / "reports.csv").write_text(TINY_REPORTS)
    return tmp_path


def _stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def test_sum_bits_tiny_hand_written_case(tiny: Path) -> None:
    assert main(["sum-bits", "--params", str(tiny / "params.csv"), str(tiny / "reports.csv"),
                 "-o", str(tiny / "counts.csv")]) == 0
    assert (tiny / "counts.csv").read_text() == TINY_COUNTS


def test_sum_bits_interop_equals_google_counts(tmp_path: Path, interop_dir: Path) -> None:
    out = tmp_path / "counts.csv"
    assert main(["sum-bits", "--params", str(interop_dir / "params.csv"), str(interop_dir / "reports.csv"),
                 "-o", str(out)]) == 0
    # google/rappor's csv.writer ends lines with CRLF; the numbers must agree exactly.
    assert out.read_text() == (interop_dir / "counts.csv").read_bytes().decode().replace("\r\n", "\n")


def test_sum_bits_several_inputs_and_stdin_merge(tiny: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    (tiny / "more.csv").write_text("client,cohort,irr\nc9,1,1111\n")
    _stdin(monkeypatch, TINY_REPORTS.encode())
    assert main(["sum-bits", "--params", str(tiny / "params.csv"), str(tiny / "reports.csv"), "-",
                 str(tiny / "more.csv")]) == 0
    assert capsys.readouterr().out == "4,2,0,2,4\n3,1,3,3,1\n"


def test_sum_bits_warns_on_unbalanced_cohorts(tiny: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tiny / "r.csv").write_text("client,cohort,irr\n" + "c,0,0000\n" * 100)  # all in one of 2: p = 1.5e-23
    assert main(["sum-bits", "--params", str(tiny / "params.csv"), str(tiny / "r.csv")]) == 0
    assert "rappor: warning: cohorts are unbalanced" in capsys.readouterr().err


def test_merge_counts_adds_files(tiny: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tiny / "a.csv").write_text(TINY_COUNTS)
    (tiny / "b.csv").write_text("1,1,1,1,1\n2,0,2,0,2\n")
    assert main(["merge-counts", "--params", str(tiny / "params.csv"), str(tiny / "a.csv"), str(tiny / "b.csv"),
                 "-o", str(tiny / "out.csv")]) == 0
    assert (tiny / "out.csv").read_text() == "3,2,1,2,3\n3,0,3,1,2\n"


def test_hash_candidates_matches_library(tmp_path: Path, interop_dir: Path) -> None:
    out = tmp_path / "map.csv"
    params = read_params(interop_dir / "params.csv")
    assert main(["hash-candidates", "--params", str(interop_dir / "params.csv"),
                 str(interop_dir / "candidates.txt"), "-o", str(out)]) == 0
    expected = hash_candidates(read_candidates(interop_dir / "candidates.txt"), params)
    got = read_map(out, params)
    assert got.strings == expected.strings and (got.matrix != expected.matrix).nnz == 0


def test_hash_candidates_memory_is_one_block(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """hash-candidates hashes and writes a block of candidates at a time: its memory is the
    candidates and one block, not the whole map (S * m * h indices).  With blocks of 500
    candidates, 10,000 candidates at k=16 m=64 h=2 peak at 3.2 MB (tracemalloc); holding
    the whole map peaked at 22 MB.  The output is the library's map, byte for byte."""
    import tracemalloc

    import rappor.collect._design
    import rappor.formats._map
    from rappor.formats import write_map

    (tmp_path / "params.csv").write_text("k,h,m,p,q,f\n16,2,64,0.5,0.75,0.5\n")
    strings = [f"candidate-{i}" for i in range(10_000)]
    (tmp_path / "c.txt").write_text("".join(s + "\n" for s in strings))
    expected = tmp_path / "expected.csv"
    write_map(hash_candidates(strings, read_params(tmp_path / "params.csv")), expected)
    monkeypatch.setattr(rappor.collect._design, "_HASH_BLOCK", 250)
    monkeypatch.setattr(rappor.formats._map, "_WRITE_CELLS", 1 << 14)
    tracemalloc.start()
    try:
        assert main(["hash-candidates", "--params", str(tmp_path / "params.csv"), str(tmp_path / "c.txt"),
                     "-o", str(tmp_path / "map.csv")]) == 0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (tmp_path / "map.csv").read_bytes() == expected.read_bytes()
    assert peak < 8 << 20, peak


def test_hash_candidates_allow_duplicates(tiny: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tiny / "c.txt").write_text("a\nb\na\n")
    assert main(["hash-candidates", "--params", str(tiny / "params.csv"), str(tiny / "c.txt"),
                 "--allow-duplicates"]) == 0
    captured = capsys.readouterr()
    assert [line.split(",")[0] for line in captured.out.splitlines()] == ["a", "b"]
    assert "rappor: warning:" in captured.err and "line 3: 'a'" in captured.err


BAD_RUNS = [
    # (command, name of the bad input, its text, line, fragment); params k=4, h=1, m=2
    ("sum-bits", "r.csv", "", None, "empty file"),
    ("sum-bits", "r.csv", "c1,0,1001\n", 1, "expected the header"),
    ("sum-bits", "r.csv", "client,cohort,irr\nc1,0,1001,1\n", 2, "expected 3 comma-separated columns"),
    ("sum-bits", "r.csv", "client,cohort,irr\nc1,0,1001\nc2,0,10a1\n", 3, "found 'a'"),
    ("sum-bits", "r.csv", "client,cohort,irr\nc1,0,10010110\n", 2, "k = 4 characters, found 8"),
    ("sum-bits", "r.csv", "client,cohort,irr\nc1,2,1001\n", 2, "integer in [0, 1], found '2'"),
    ("sum-bits", "r.csv", "client,cohort,irr\nc1,one,1001\n", 2, "found 'one'"),
    ("merge-counts", "c.csv", "2,1,0,1,2\n", 1, "expected 2 rows"),
    ("merge-counts", "c.csv", "2,1,0,1\n1,0,1,1,0\n", 1, "expected 5 comma-separated counts"),
    ("merge-counts", "c.csv", "2,1,0,1,2\n1,0,-1,1,0\n", 2, "negative"),
    ("merge-counts", "c.csv", "2,1,0,1,2\n1,0,1.5,1,0\n", 2, "found '1.5'"),
    ("merge-counts", "c.csv", "2,1,0,3,2\n1,0,1,1,0\n", 1, "at most the cohort's 2 reports"),
    ("merge-counts", "c.csv", "", None, "empty file"),
    ("hash-candidates", "c.txt", "a\n\nb\n", 2, "blank line"),
    ("hash-candidates", "c.txt", "a\nb\na\n", 3, "again (first on line 1)"),
    ("hash-candidates", "c.txt", "", None, "empty file"),
]


@pytest.mark.parametrize(("command", "name", "text", "line", "fragment"), BAD_RUNS)
def test_cli_collect_fail_bad_input(tiny: Path, capsys: pytest.CaptureFixture[str], command: str, name: str,
                                    text: str, line: int | None, fragment: str) -> None:
    bad = tiny / name
    bad.write_text(text)
    out = tiny / "out.csv"
    assert main([command, "--params", str(tiny / "params.csv"), str(bad), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    where = f"{bad}:{line}:" if line is not None else f"{bad}:"
    assert err.startswith(f"rappor: error: {where} "), err
    assert fragment in err and "Traceback" not in err
    assert not out.exists()
    assert sorted(p.name for p in tiny.iterdir()) == sorted(["params.csv", "reports.csv", name])


def test_sum_bits_fail_keeps_existing_output(tiny: Path) -> None:
    out = tiny / "counts.csv"
    out.write_text("old\n")
    (tiny / "bad.csv").write_text("client,cohort,irr\nc1,0,1\n")
    assert main(["sum-bits", "--params", str(tiny / "params.csv"), str(tiny / "reports.csv"), str(tiny / "bad.csv"),
                 "-o", str(out)]) == 1
    assert out.read_text() == "old\n"


def test_sum_bits_fail_missing_input(tiny: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sum-bits", "--params", str(tiny / "params.csv"), str(tiny / "nope.csv")]) == 1
    assert "nope.csv: cannot read file: no such file" in capsys.readouterr().err


def test_sum_bits_no_progress_bar_when_stderr_not_a_tty(tiny: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sum-bits", "--params", str(tiny / "params.csv"), str(tiny / "reports.csv")]) == 0
    assert capsys.readouterr().err == ""


def test_sum_bits_progress_bar_on_a_terminal(tiny: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("tqdm")
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(["sum-bits", "--params", str(tiny / "params.csv"), str(tiny / "reports.csv")]) == 0
    captured = capsys.readouterr()
    assert captured.out == TINY_COUNTS
    assert "sum-bits" in captured.err  # the bar is drawn on stderr only


def test_sum_bits_fail_directory_as_input(tiny: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A directory stands for a Parquet dataset; one without Parquet files is an error naming it.
    assert main(["sum-bits", "--params", str(tiny / "params.csv"), str(tiny)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"rappor: error: {tiny}")
    assert "directory" in err and "Traceback" not in err


# ---------------------------------------------------------------- pipes, FIFOs, /dev/stdin (issue 13, item 9)
# The input was opened once to sniff its format (4 bytes) and again to read it: from a
# pipe the second open found the bytes gone ("found an empty file"), and a named FIFO
# waited for a writer that had gone.  Each run is a subprocess with a timeout, so a
# regression fails instead of hanging the suite.

def _sum_bits_subprocess(tiny: Path, source: str, **options: object) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "rappor", "sum-bits", "--params", str(tiny / "params.csv"), source]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, **options)  # type: ignore[call-overload]


def _feed(path_or_fd: str | int, data: bytes) -> threading.Thread:
    """Write ``data`` to a FIFO path (opened when a reader comes) or a pipe's write end, then close."""
    def write() -> None:
        fd = os.open(path_or_fd, os.O_WRONLY) if isinstance(path_or_fd, str) else path_or_fd
        try:
            os.write(fd, data)
        except BrokenPipeError:  # the reader went away (the bug this guards against)
            pass
        finally:
            os.close(fd)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def test_sum_bits_reads_a_named_fifo(tiny: Path) -> None:
    fifo = tiny / "reports.fifo"
    os.mkfifo(fifo)
    writer = _feed(str(fifo), TINY_REPORTS.encode())
    result = _sum_bits_subprocess(tiny, str(fifo))
    writer.join(timeout=10)
    assert (result.returncode, result.stdout) == (0, TINY_COUNTS), result.stderr


def test_sum_bits_reads_process_substitution(tiny: Path) -> None:
    # <(cat reports.csv): a pipe named /dev/fd/N.
    read_end, write_end = os.pipe()
    writer = _feed(write_end, TINY_REPORTS.encode())
    try:
        result = _sum_bits_subprocess(tiny, f"/dev/fd/{read_end}", pass_fds=(read_end,))
    finally:
        os.close(read_end)
    writer.join(timeout=10)
    assert (result.returncode, result.stdout) == (0, TINY_COUNTS), result.stderr


@pytest.mark.parametrize("source", ["/dev/stdin", "-"])
def test_sum_bits_reads_dev_stdin_from_a_pipe(tiny: Path, source: str) -> None:
    result = _sum_bits_subprocess(tiny, source, input=TINY_REPORTS)
    assert (result.returncode, result.stdout) == (0, TINY_COUNTS), result.stderr


def test_sum_bits_parquet_through_a_pipe_is_named(tiny: Path) -> None:
    result = _sum_bits_subprocess(tiny, "/dev/stdin", input="PAR1" + "\0" * 60)
    assert result.returncode == 1
    assert result.stderr.startswith("rappor: error: /dev/stdin:1: expected the header") and "Parquet" in result.stderr


def test_sum_bits_directory_without_parquet_names_it_with_or_without_pyarrow(
        tiny: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The same mistake gets the same answer on every install: a directory holding no Parquet file is named
    as such, not answered with "pyarrow is needed" when pyarrow happens to be missing."""
    for name in ("pyarrow", "pyarrow.parquet"):
        monkeypatch.setitem(sys.modules, name, None)
    assert main(["sum-bits", "--params", str(tiny / "params.csv"), str(tiny)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"rappor: error: {tiny}") and "directory" in err and "pyarrow" not in err
