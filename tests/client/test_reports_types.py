"""Report and ReportBatch (the value types; file I/O is tested in test_reports_io.py)."""

from __future__ import annotations

import numpy as np
import pytest

from rappor import InvalidParameterError, Params, Report, ReportBatch


def _params(k: int = 70, m: int = 4) -> Params:
    return Params(num_bloombits=k, num_hashes=min(2, k), num_cohorts=m, prob_p=0.25, prob_q=0.75, prob_f=0.5)


# --- Report --------------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 8, 16, 65, 130])
def test_report_round_trips(k: int) -> None:
    bits = np.random.default_rng(k).integers(0, 2, size=k)
    rep = Report(cohort=3, bits=bits)
    assert rep.num_bloombits == k
    text = rep.to_bitstring()
    assert text == "".join(str(b) for b in bits[::-1])  # character 0 = bit k-1
    assert Report.from_bitstring(3, text) == rep
    data = rep.to_bytes()
    assert len(data) == (k + 7) // 8
    assert Report.from_bytes(3, data, k) == rep


def test_report_is_readonly_and_copies_input() -> None:
    bits = np.array([0, 1, 1, 0])
    rep = Report(cohort=0, bits=bits)
    bits[0] = 1
    assert rep.bits.tolist() == [0, 1, 1, 0]
    assert rep.bits.dtype == np.uint8
    with pytest.raises(ValueError):
        rep.bits[0] = 1
    with pytest.raises(AttributeError):
        rep.cohort = 1  # type: ignore[misc]


def test_report_equality_and_hash() -> None:
    a = Report(cohort=1, bits=[0, 1])
    assert a == Report(cohort=1, bits=np.array([0, 1], dtype=np.int64))
    assert a != Report(cohort=2, bits=[0, 1])
    assert a != Report(cohort=1, bits=[1, 1])
    assert len({a, Report(cohort=1, bits=[0, 1])}) == 1


@pytest.mark.parametrize(("cohort", "bits"), [(-1, [0]), (True, [0]), (1.0, [0]), (0, []), (0, [0, 2]),
                                              (0, [[0, 1]]), (0, ["a"])])
def test_report_fail_bad_fields(cohort: object, bits: object) -> None:
    with pytest.raises(InvalidParameterError, match="parameter of Report"):
        Report(cohort=cohort, bits=bits)  # type: ignore[arg-type]


def test_report_from_bitstring_and_bytes_fail() -> None:
    with pytest.raises(InvalidParameterError, match="Invalid report bit string"):
        Report.from_bitstring(0, "01x1")
    with pytest.raises(InvalidParameterError, match="Invalid packed report"):
        Report.from_bytes(0, b"\x00\x04", 10)


# --- ReportBatch ---------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 63, 64, 65, 200])
def test_batch_round_trips(k: int) -> None:
    params = _params(k=k)
    rng = np.random.default_rng(k)
    bits = rng.integers(0, 2, size=(30, k), dtype=np.uint8)
    cohorts = rng.integers(0, 4, size=30)
    batch = ReportBatch.from_bits(params, cohorts, bits)
    assert len(batch) == 30
    np.testing.assert_array_equal(batch.bits(), bits)
    again = ReportBatch.from_bitstrings(params, batch.cohorts, batch.bitstrings())
    np.testing.assert_array_equal(again.words, batch.words)
    np.testing.assert_array_equal(again.cohorts, cohorts)
    reports = [batch[i] for i in range(len(batch))]
    assert reports[5] == Report(cohort=int(cohorts[5]), bits=bits[5])
    stacked = ReportBatch.from_reports(params, reports)
    np.testing.assert_array_equal(stacked.words, batch.words)
    np.testing.assert_array_equal(stacked.cohorts, batch.cohorts)


def test_batch_arrays_readonly_and_copied() -> None:
    params = _params(k=8)
    cohorts = np.array([0, 1])
    batch = ReportBatch.from_bits(params, cohorts, np.zeros((2, 8), dtype=np.uint8))
    cohorts[0] = 3
    assert batch.cohorts.tolist() == [0, 1]
    assert batch.cohorts.dtype == np.int64 and batch.words.dtype == np.uint64
    with pytest.raises(ValueError):
        batch.words[0, 0] = 1
    assert "n=2" in repr(batch)


def test_batch_empty() -> None:
    batch = ReportBatch.from_bits(_params(k=8), np.zeros(0, dtype=np.int64), np.zeros((0, 8), dtype=np.uint8))
    assert len(batch) == 0
    assert batch.bits().shape == (0, 8)
    assert batch.bitstrings() == []


def test_batch_fail_cohort_out_of_range() -> None:
    with pytest.raises(InvalidParameterError, match=r"must hold ints in the range \[0, 3\]. Got 4"):
        ReportBatch.from_bits(_params(k=8), [0, 4], np.zeros((2, 8), dtype=np.uint8))
    with pytest.raises(InvalidParameterError, match="1-d integer array"):
        ReportBatch(params=_params(k=8), cohorts=np.array([0.5]), words=np.zeros((1, 1), dtype=np.uint64))


def test_batch_fail_bad_shapes_and_stray_bits() -> None:
    params = _params(k=8)
    with pytest.raises(InvalidParameterError, match=r"must have shape \(2, 1\)"):
        ReportBatch(params=params, cohorts=[0, 1], words=np.zeros((2, 2), dtype=np.uint64))
    with pytest.raises(InvalidParameterError, match="bits set at or above bit 8"):
        ReportBatch(params=params, cohorts=[0], words=np.array([[256]], dtype=np.uint64))
    with pytest.raises(InvalidParameterError, match=r"shape \(n, 8\)"):
        ReportBatch.from_bits(params, [0], np.zeros((1, 9), dtype=np.uint8))
    with pytest.raises(InvalidParameterError, match="only 0 and 1"):
        ReportBatch.from_bits(params, [0], np.full((1, 8), 2))
    with pytest.raises(InvalidParameterError, match="has 9 bits, expected 8"):
        ReportBatch.from_reports(params, [Report(cohort=0, bits=[0] * 9)])
