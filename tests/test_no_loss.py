"""No report is lost or counted twice; skipped rows are accounted for; outputs are atomic.

Every accepted report is counted exactly once: the sum of N over the cohorts equals the
number of accepted rows across merges, chunk boundaries, several input files, the
Parquet path and ``--on-error skip`` (where accepted + rejected = data rows).
"""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from rappor import Aggregate, Params, ReportBatch
from rappor.formats import iter_reports, read_counts, read_reports, write_reports
from rappor.cli._main import main

PARAMS = Params(num_bloombits=8, num_hashes=2, num_cohorts=4, prob_p=0.5, prob_q=0.75, prob_f=0.5)
PARAMS_CSV = "k,h,m,p,q,f\n8,2,4,0.5,0.75,0.5\n"


def _batch(n: int, seed: int, params: Params = PARAMS) -> ReportBatch:
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2, size=(n, params.num_bloombits))
    return ReportBatch.from_bits(params, rng.integers(0, params.num_cohorts, size=n), bits)


def _counts_by_hand(batch: ReportBatch) -> np.ndarray:
    """Independent count: one ``np.add.at`` over the unpacked bits."""
    params = batch.params
    out = np.zeros((params.num_cohorts, params.num_bloombits + 1), dtype=np.int64)
    np.add.at(out[:, 0], batch.cohorts, 1)
    np.add.at(out[:, 1:], batch.cohorts, batch.bits().astype(np.int64))
    return out


@pytest.mark.parametrize("chunk_size", [1, 2, 3, 7, 64, 1000])
def test_no_loss_chunk_boundaries(tmp_path: Path, chunk_size: int) -> None:
    batch = _batch(257, seed=chunk_size)
    write_reports(tmp_path / "r.csv", batch)
    chunks = list(iter_reports(tmp_path / "r.csv", PARAMS, chunk_size=chunk_size))
    assert all(len(c) <= chunk_size for c in chunks)
    assert sum(len(c) for c in chunks) == 257
    agg = Aggregate.from_report_chunks(chunks, PARAMS)
    assert agg.total_reports == 257
    assert np.array_equal(agg.counts, _counts_by_hand(batch))


def test_no_loss_block_boundaries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tiny read blocks: lines (and CRLF pairs) split across blocks are neither lost nor doubled."""
    from rappor.formats import _reports_csv as reports_module

    batch = _batch(300, seed=1)
    write_reports(tmp_path / "r.csv", batch)
    crlf = tmp_path / "crlf.csv"
    crlf.write_bytes((tmp_path / "r.csv").read_bytes().replace(b"\n", b"\r\n"))
    for block in (1, 2, 5, 13, 64):
        monkeypatch.setattr(reports_module, "_BLOCK_BYTES", block)
        for path in (tmp_path / "r.csv", crlf):
            agg = Aggregate.from_report_chunks(iter_reports(path, PARAMS, chunk_size=3), PARAMS)
            assert np.array_equal(agg.counts, _counts_by_hand(batch)), (block, path)


@pytest.mark.parametrize("seed", range(5))
def test_no_loss_merges_in_any_grouping(seed: int) -> None:
    rng = np.random.default_rng(seed)
    batch = _batch(500, seed=100 + seed)
    cuts = np.sort(rng.choice(np.arange(1, 500), size=6, replace=False))
    parts = [Aggregate.from_reports(ReportBatch(params=PARAMS, cohorts=c, words=w))
             for c, w in zip(np.split(batch.cohorts, cuts), np.split(batch.words, cuts))]
    order = rng.permutation(len(parts))
    left = Aggregate.empty(PARAMS)
    for i in order:
        left = left.merge(parts[i])
    tree = (parts[0].merge(parts[1])).merge(parts[2].merge(parts[3])).merge(parts[4].merge(parts[5].merge(parts[6])))
    expected = _counts_by_hand(batch)
    assert np.array_equal(left.counts, expected)
    assert np.array_equal(tree.counts, expected)
    assert left.total_reports == 500


def test_no_loss_sum_bits_several_files_and_merge_counts(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "params.csv").write_text(PARAMS_CSV)
    batches = [_batch(n, seed=n) for n in (0, 1, 99, 400)]
    paths = []
    for i, b in enumerate(batches):
        write_reports(tmp_path / f"r{i}.csv", b)
        paths.append(str(tmp_path / f"r{i}.csv"))
    assert main(["sum-bits", "--params", str(tmp_path / "params.csv"), *paths, "-o", str(tmp_path / "all.csv")]) == 0
    singles = []
    for i, p in enumerate(paths):
        assert main(["sum-bits", "--params", str(tmp_path / "params.csv"), p, "-o", str(tmp_path / f"c{i}.csv")]) == 0
        singles.append(str(tmp_path / f"c{i}.csv"))
    assert main(["merge-counts", "--params", str(tmp_path / "params.csv"), *singles,
                 "-o", str(tmp_path / "merged.csv")]) == 0
    capsys.readouterr()
    expected = sum(_counts_by_hand(b) for b in batches)
    assert read_counts(tmp_path / "all.csv", PARAMS).total_reports == 500
    assert np.array_equal(read_counts(tmp_path / "all.csv", PARAMS).counts, expected)
    assert np.array_equal(read_counts(tmp_path / "merged.csv", PARAMS).counts, expected)


def test_no_loss_parquet_path(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    from rappor.formats._parquet import aggregate_parquet, write_parquet_reports

    batch = _batch(1000, seed=7)
    write_parquet_reports(tmp_path / "r.parquet", batch, row_group_size=64)
    for batch_size in (1, 7, 1000):
        agg = aggregate_parquet(tmp_path / "r.parquet", PARAMS, batch_size=batch_size)
        assert agg.total_reports == 1000
        assert np.array_equal(agg.counts, _counts_by_hand(batch))


# ------------------------------------------------------------------ --on-error skip

MIXED = ("client,cohort,irr\n"
         "c1,0,00000001\n"      # line 2 ok
         "c2,9,00000001\n"      # line 3 cohort out of range
         "c3,1,0000001x\n"      # line 4 bad character
         "\n"                   # line 5 blank: ignored, not a report
         "c4,1,11111111\n"      # line 6 ok
         "c5,2,111\n"           # line 7 wrong length
         "c6,3,10000000,extra\n"  # line 8 extra column
         '"c,7",2,00000011\n')  # line 9 ok (quoted client)


def test_no_loss_skip_counts_every_row_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rejects: list = []
    batch = read_reports(_write(tmp_path / "m.csv", MIXED), PARAMS, on_error="skip", rejects=rejects)
    assert len(batch) == 3
    assert [(r.line, r.text) for r in rejects] == [(3, "c2,9,00000001"), (4, "c3,1,0000001x"), (7, "c5,2,111"),
                                                   (8, "c6,3,10000000,extra")]
    assert all(r.path == str(tmp_path / "m.csv") and r.reason.startswith("expected") for r in rejects)
    assert batch.cohorts.tolist() == [0, 1, 2]
    assert batch.bitstrings() == ["00000001", "11111111", "00000011"]


def test_no_loss_skip_default_raises(tmp_path: Path) -> None:
    from rappor import ReportFormatError

    with pytest.raises(ReportFormatError, match=r"m.csv:3: expected a cohort"):
        read_reports(_write(tmp_path / "m.csv", MIXED), PARAMS)


def test_no_loss_skip_needs_a_sink(tmp_path: Path) -> None:
    from rappor import InvalidParameterError

    with pytest.raises(InvalidParameterError, match="'rejects' parameter of iter_reports"):
        read_reports(_write(tmp_path / "m.csv", MIXED), PARAMS, on_error="skip")
    with pytest.raises(InvalidParameterError, match="'on_error' parameter of iter_reports"):
        read_reports(_write(tmp_path / "m.csv", MIXED), PARAMS, on_error="ignore", rejects=[])


@pytest.mark.parametrize("block", [3, 1 << 24])
def test_no_loss_skip_across_blocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int) -> None:
    """Many bad rows scattered over many blocks: accepted + rejected == data rows, exactly."""
    from rappor.formats import _reports_csv as reports_module

    monkeypatch.setattr(reports_module, "_BLOCK_BYTES", block)
    batch = _batch(400, seed=3)
    rng = np.random.default_rng(4)
    bad_rows = set(rng.choice(400, size=60, replace=False).tolist())
    lines = ["client,cohort,irr"]
    for i, (c, s) in enumerate(zip(batch.cohorts.tolist(), batch.bitstrings())):
        lines.append(f"c{i},{c},{s[:-1] + 'z'}" if i in bad_rows else f"c{i},{c},{s}")
    rejects: list = []
    got = Aggregate.from_report_chunks(
        iter_reports(_write(tmp_path / "r.csv", "\n".join(lines) + "\n"), PARAMS, chunk_size=17,
                     on_error="skip", rejects=rejects), PARAMS)
    keep = np.array([i not in bad_rows for i in range(400)])
    good = ReportBatch(params=PARAMS, cohorts=batch.cohorts[keep], words=batch.words[keep])
    assert np.array_equal(got.counts, _counts_by_hand(good))
    assert sorted(r.line for r in rejects) == sorted(i + 2 for i in bad_rows)
    assert got.total_reports + len(rejects) == 400


def test_no_loss_sum_bits_on_error_skip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "params.csv").write_text(PARAMS_CSV)
    _write(tmp_path / "m.csv", MIXED)
    (tmp_path / "out").mkdir()
    out = tmp_path / "out" / "counts.csv"
    assert main(["sum-bits", "--params", str(tmp_path / "params.csv"), str(tmp_path / "m.csv"), "-o", str(out),
                 "--on-error", "skip"]) == 0
    err = capsys.readouterr().err
    assert "rappor: skipped 4 bad row(s); 3 reports counted" in err
    assert sorted(p.name for p in out.parent.iterdir()) == ["counts.csv", "counts.csv.rejects.csv"]
    assert read_counts(out, PARAMS).total_reports == 3
    with open(out.parent / "counts.csv.rejects.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["file", "line", "reason", "row"]
    assert [r[1] for r in rows[1:]] == ["3", "4", "7", "8"]
    assert rows[4][3] == "c6,3,10000000,extra"
    assert all(r[0] == str(tmp_path / "m.csv") for r in rows[1:])


def test_no_loss_sum_bits_skip_explicit_rejects_and_stdout(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "params.csv").write_text(PARAMS_CSV)
    _write(tmp_path / "m.csv", MIXED)
    argv = ["sum-bits", "--params", str(tmp_path / "params.csv"), str(tmp_path / "m.csv"), "--on-error", "skip"]
    assert main(argv) == 1
    assert "needs --rejects PATH" in capsys.readouterr().err
    assert main([*argv, "--rejects", str(tmp_path / "bad.csv")]) == 0
    captured = capsys.readouterr()
    assert captured.out.count("\n") == PARAMS.num_cohorts
    assert (tmp_path / "bad.csv").read_text().count("\n") == 5


def test_no_loss_sum_bits_skip_fatal_error_leaves_no_files(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """A bad header is fatal even when skipping: neither the counts nor the rejects file appear."""
    (tmp_path / "params.csv").write_text(PARAMS_CSV)
    _write(tmp_path / "m.csv", MIXED)
    _write(tmp_path / "h.csv", "cohort,irr\n0,00000001\n")
    (tmp_path / "out").mkdir()
    assert main(["sum-bits", "--params", str(tmp_path / "params.csv"), str(tmp_path / "m.csv"), str(tmp_path / "h.csv"),
                 "-o", str(tmp_path / "out" / "c.csv"), "--on-error", "skip"]) == 1
    assert capsys.readouterr().err.startswith(f"rappor: error: {tmp_path / 'h.csv'}:1: expected the header")
    assert list((tmp_path / "out").iterdir()) == []


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# ------------------------------------------------------------------ atomic outputs under SIGKILL

def test_no_loss_sigkill_leaves_old_output_or_none(tmp_path: Path) -> None:
    """Kill ``rappor encode`` while it writes: the output is the old file, and only temp files are extra.

    ``encode`` streams its output chunk by chunk, so a kill lands mid-write.  The test
    polls until a temporary file is growing, then sends SIGKILL.
    """
    (tmp_path / "params.csv").write_text("k,h,m,p,q,f\n64,2,64,0.5,0.75,0.5\n")
    n = 200_000
    with open(tmp_path / "in.csv", "w") as fh:
        fh.write("client,value\n")
        fh.writelines(f"u{i},v{i % 100}\n" for i in range(n))
    from rappor.formats import write_key_file

    write_key_file(tmp_path / "key", bytes(range(32)))
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    target = out_dir / "reports.csv"
    target.write_text("old\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)}
    proc = subprocess.Popen([sys.executable, "-m", "rappor", "encode", "--params", str(tmp_path / "params.csv"),
                             "--key-file", str(tmp_path / "key"), str(tmp_path / "in.csv"), "-o", str(target),
                             "--jobs", "1", "--seed", "1"], env=env, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    killed_mid_write = False
    while time.monotonic() < deadline and proc.poll() is None:
        temps = [p for p in out_dir.iterdir() if p.name != "reports.csv"]
        if temps and any(p.stat().st_size > 0 for p in temps):
            proc.send_signal(signal.SIGKILL)
            killed_mid_write = True
            break
        time.sleep(0.005)
    proc.wait(timeout=60)
    assert killed_mid_write, "the run finished before a partial output was seen; enlarge the input"
    assert proc.returncode == -signal.SIGKILL
    assert target.read_text() == "old\n"
    leftovers = [p.name for p in out_dir.iterdir() if p.name != "reports.csv"]
    # A killed process cannot clean up: what it leaves is a hidden temp file, never the output name.
    assert all(name.startswith(".reports.csv.") and name.endswith(".tmp") for name in leftovers), leftovers
    assert leftovers, "expected the killed run's temporary file"
