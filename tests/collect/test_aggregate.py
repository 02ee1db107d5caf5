"""Aggregate: fast counting, merging, counts.csv I/O and the cohort-balance check."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from rappor import (
    Aggregate,
    CountOverflowError,
    IncompatibleParamsError,
    InvalidParameterError,
    Params,
    ReportBatch,
    ReportFormatError,
    UnbalancedCohortsWarning,
)
from rappor.formats import read_counts, read_params, read_reports, write_counts
from rappor.collect._aggregate import check_cohort_balance


def _params(k: int = 8, m: int = 4) -> Params:
    return Params(num_bloombits=k, num_hashes=min(2, k), num_cohorts=m, prob_p=0.5, prob_q=0.75, prob_f=0.5)


def _random_batch(params: Params, n: int, rng: np.random.Generator) -> ReportBatch:
    bits = rng.integers(0, 2, size=(n, params.num_bloombits))
    return ReportBatch.from_bits(params, rng.integers(0, params.num_cohorts, size=n), bits)


def _recount(batch: ReportBatch) -> np.ndarray:
    """The straightforward count: one report at a time."""
    k, m = batch.params.num_bloombits, batch.params.num_cohorts
    counts = np.zeros((m, k + 1), dtype=np.int64)
    for cohort, bits in zip(batch.cohorts, batch.bits()):
        counts[cohort, 0] += 1
        counts[cohort, 1:] += bits
    return counts


@pytest.mark.parametrize(("k", "m", "n"), [(1, 1, 10), (8, 4, 300), (13, 3, 200), (64, 5, 100),
                                           (100, 7, 150), (16, 5000, 40), (16, 20000, 6000), (70, 30000, 8000)])
def test_from_reports_equals_recount(rng: np.random.Generator, k: int, m: int, n: int) -> None:
    batch = _random_batch(_params(k, m), n, rng)
    assert np.array_equal(Aggregate.from_reports(batch).counts, _recount(batch))


def test_from_reports_empty_batch_is_empty(params: Params) -> None:
    batch = ReportBatch(params=params, cohorts=np.zeros(0, dtype=np.int64), words=np.zeros((0, 1), dtype=np.uint64))
    assert np.array_equal(Aggregate.from_reports(batch).counts, Aggregate.empty(params).counts)


def test_from_reports_interop_counts(interop_dir: Path) -> None:
    params = read_params(interop_dir / "params.csv")
    batch = read_reports(interop_dir / "reports.csv", params)
    expected = np.loadtxt(interop_dir / "counts.csv", delimiter=",", dtype=np.int64)
    assert np.array_equal(Aggregate.from_reports(batch).counts, expected)


@pytest.mark.parametrize("seed", range(20))
def test_merge_associative_commutative_over_random_splits(seed: int) -> None:
    rng = np.random.default_rng(seed)
    params = _params(k=int(rng.integers(1, 80)), m=int(rng.integers(1, 9)))
    batch = _random_batch(params, int(rng.integers(0, 400)), rng)
    whole = Aggregate.from_reports(batch)
    cuts = np.sort(rng.integers(0, len(batch) + 1, size=int(rng.integers(1, 8))))
    order = rng.permutation(len(batch))
    parts = [Aggregate.from_reports(ReportBatch(params=params, cohorts=batch.cohorts[idx], words=batch.words[idx]))
             for idx in np.split(order, cuts)]
    left = parts[0]
    for part in parts[1:]:
        left = left.merge(part)
    right = Aggregate.empty(params)
    for part in reversed(parts):
        right = part.merge(right)
    shuffled = [parts[i] for i in rng.permutation(len(parts))]
    while len(shuffled) > 1:  # random tree of merges
        i = int(rng.integers(0, len(shuffled) - 1))
        shuffled[i : i + 2] = [shuffled[i].merge(shuffled[i + 1])]
    for result in (left, right, shuffled[0]):
        assert np.array_equal(result.counts, whole.counts)


def test_from_report_chunks_equals_from_reports(params: Params, rng: np.random.Generator) -> None:
    batch = _random_batch(params, 250, rng)
    chunks = [ReportBatch(params=params, cohorts=batch.cohorts[i : i + 60], words=batch.words[i : i + 60])
              for i in range(0, 250, 60)]
    assert np.array_equal(Aggregate.from_report_chunks(chunks, params).counts, Aggregate.from_reports(batch).counts)
    assert Aggregate.from_report_chunks([], params).total_reports == 0


def test_from_report_chunks_fail_other_params(params: Params, rng: np.random.Generator) -> None:
    other = _params(k=8, m=5)
    with pytest.raises(IncompatibleParamsError, match="m=5"):
        Aggregate.from_report_chunks([_random_batch(other, 5, rng)], params)


def test_counts_round_trip(tmp_path: Path, params: Params, rng: np.random.Generator) -> None:
    agg = Aggregate.from_reports(_random_batch(params, 100, rng))
    write_counts(agg, tmp_path / "counts.csv")
    assert np.array_equal(read_counts(tmp_path / "counts.csv", params).counts, agg.counts)
    rows = list(csv.reader((tmp_path / "counts.csv").read_text().splitlines()))
    assert rows == [[str(v) for v in row] for row in agg.counts.tolist()]


def test_read_counts_google_file_with_crlf(interop_dir: Path) -> None:
    params = read_params(interop_dir / "params.csv")
    assert b"\r\n" in (interop_dir / "counts.csv").read_bytes()  # google/rappor's csv.writer
    agg = read_counts(interop_dir / "counts.csv", params)
    assert agg.reports_per_cohort.tolist() == [2500] * 8


def test_read_counts_hand_written(tmp_path: Path) -> None:
    params = _params(k=3, m=2)
    (tmp_path / "c.csv").write_text("\ufeff5, 1,2,3\r\n\n0,0,0,0\n\n")
    assert read_counts(tmp_path / "c.csv", params).counts.tolist() == [[5, 1, 2, 3], [0, 0, 0, 0]]


BAD_COUNTS = [
    # (text, line, fragment); k=3, m=2
    ("", None, "found an empty file"),
    ("5,1,2,3\n", 1, "expected 2 rows"),
    ("5,1,2,3\n5,1,2,3\n5,1,2,3\n", 3, "expected 2 rows"),
    ("5,1,2\n5,1,2,3\n", 1, "expected 4 comma-separated counts"),
    ("5,1,2,3,4\n5,1,2,3\n", 1, "found 5"),
    ("5,1,2,3\n5,-1,2,3\n", 2, "found a negative number"),
    ("5,1,2,3\n5,1.5,2,3\n", 2, "found '1.5'"),
    ("5,1,x,3\n5,1,2,3\n", 1, "column 3"),
    ("5,1,2,3\n5,1,2,6\n", 2, "at most the cohort's 5 reports, found 6 for bit 2"),
    ("99999999999999999999,1,2,3\n5,1,2,3\n", 1, "at most 2**63 - 1"),
    ("5;1;2;3\n5;1;2;3\n", 1, "found 1"),
    # Two cohorts of 2**62 reports: each fits in int64, their total does not (it wrapped to -2**63).
    ("4611686018427387904,0,0,0\n4611686018427387904,0,0,0\n", 2,
     "expected at most 2**63 - 1 reports in all cohorts together (the int64 range), found 9223372036854775808"),
]


@pytest.mark.parametrize(("text", "line", "fragment"), BAD_COUNTS)
def test_read_counts_fail_bad_input(tmp_path: Path, text: str, line: int | None, fragment: str) -> None:
    path = tmp_path / "c.csv"
    path.write_text(text)
    with pytest.raises(ReportFormatError) as info:
        read_counts(path, _params(k=3, m=2))
    assert (info.value.path, info.value.line) == (str(path), line)
    assert fragment in info.value.message


def test_check_cohort_balance_balanced_returns_true(params: Params) -> None:
    counts = np.zeros((4, 9), dtype=np.int64)
    counts[:, 0] = [10, 12, 8, 10]
    assert check_cohort_balance(Aggregate(params=params, counts=counts)) is True


def test_check_cohort_balance_warns_beyond_chance(params: Params) -> None:
    counts = np.zeros((4, 9), dtype=np.int64)
    counts[:, 0] = [100, 160, 50, 90]  # chi-square 62.0 on 3 degrees of freedom: p = 2.2e-13
    with pytest.warns(UnbalancedCohortsWarning, match=r"cohort 1 has 160 reports and cohort 2 has 50 .*p = 2.2e-13"):
        assert check_cohort_balance(Aggregate(params=params, counts=counts)) is False


def test_check_cohort_balance_takes_random_spread_as_balanced(params: Params) -> None:
    # google/rappor's rule (max - min > N/m) fires on the spread of uniform random cohorts:
    # 15,000 reports over 512 cohorts (16 discovery slots x 32) give max - min > N/m = 29.3
    # in 19 of these 20 draws.
    wire = Params(num_bloombits=8, num_hashes=1, num_cohorts=512, prob_p=0.0, prob_q=1.0, prob_f=0.5)
    old_rule = fired = 0
    for seed in range(20):
        counts = np.zeros((512, 9), dtype=np.int64)
        counts[:, 0] = np.random.default_rng(seed).multinomial(15_000, np.full(512, 1 / 512))
        old_rule += int(counts[:, 0].max() - counts[:, 0].min()) * 512 > 15_000
        fired += not check_cohort_balance(Aggregate(params=wire, counts=counts))
    assert old_rule == 19
    assert fired == 0  # level 1e-6: one false alarm in 50,000 such runs of 20


# --- int64: totals never wrap around -------------------------------------------------------------------

_BIG = 2**62  # two cohorts of it hold 2**63 reports, one more than int64 can


def test_aggregate_fail_total_reports_beyond_int64() -> None:
    counts = np.array([[_BIG, 0, 0, 0], [_BIG, 0, 0, 0]], dtype=np.int64)
    with pytest.raises(InvalidParameterError, match=r"at most 2\*\*63 - 1 reports over all cohorts.*"
                                                    r"Got 9223372036854775808 instead"):
        Aggregate(params=_params(k=3, m=2), counts=counts)


def test_aggregate_total_reports_exact_near_int64_max() -> None:
    counts = np.array([[_BIG, 0, 0, 0], [_BIG - 1, 0, 0, 0]], dtype=np.int64)
    agg = Aggregate(params=_params(k=3, m=2), counts=counts)
    assert agg.total_reports == 2**63 - 1
    assert check_cohort_balance(agg) is True  # N/m is positive (it was -4.6e18 when the sum wrapped)


def test_aggregate_merge_fail_total_beyond_int64() -> None:
    params = _params(k=3, m=2)
    a = Aggregate(params=params, counts=np.array([[_BIG, 0, 0, 0], [0, 0, 0, 0]]))
    b = Aggregate(params=params, counts=np.array([[0, 0, 0, 0], [_BIG, 0, 0, 0]]))
    with pytest.raises(CountOverflowError, match="the total number of reports over all cohorts would exceed"):
        a.merge(b)
    with pytest.raises(CountOverflowError, match="a count would exceed 2"):
        a.merge(a).merge(a)  # per cell: 3 * 2**62


def test_add_counts_fail_beyond_int64() -> None:
    """The accumulator of sum-bits, from_report_chunks and the engines refuses to wrap around."""
    from rappor.collect._aggregate import add_counts

    total = np.array([[_BIG, 1, 0, 0], [0, 0, 0, 0]], dtype=np.int64)
    add_counts(total, np.array([[_BIG - 1, 0, 0, 0], [0, 0, 0, 0]], dtype=np.int64))
    assert total[0, 0] == 2**63 - 1
    with pytest.raises(CountOverflowError, match="would exceed 2\\*\\*63 - 1"):
        add_counts(total, np.array([[0, 0, 0, 0], [1, 0, 0, 0]], dtype=np.int64))  # total 2**63
    with pytest.raises(CountOverflowError, match="would exceed 2\\*\\*63 - 1"):
        add_counts(total, np.array([[1, 0, 0, 0], [0, 0, 0, 0]], dtype=np.int64))  # one entry wraps


def test_merge_counts_cli_fail_total_beyond_int64(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two files, one cohort of 2**62 each: the merged total is refused, naming the file that overflows
    (it printed a warning about "N/m = -4.6e18" and wrote the wrapped counts)."""
    from rappor.cli._main import main

    (tmp_path / "p.csv").write_text("k,h,m,p,q,f\n3,2,2,0.5,0.75,0.5\n")
    (tmp_path / "a.csv").write_text(f"{_BIG},0,0,0\n0,0,0,0\n")
    (tmp_path / "b.csv").write_text(f"0,0,0,0\n{_BIG},0,0,0\n")
    assert main(["merge-counts", "--params", str(tmp_path / "p.csv"), str(tmp_path / "a.csv"), str(tmp_path / "b.csv"),
                 "-o", str(tmp_path / "out.csv")]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"rappor: error: {tmp_path / 'b.csv'}: expected counts whose sum"), err
    assert "warning" not in err and not (tmp_path / "out.csv").exists()
