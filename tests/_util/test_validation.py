"""Tests of rappor._util.validation's cohort checks, and that every cohort check of the package is this one."""

from __future__ import annotations

import numpy as np
import pytest

from rappor import Encoder, Params, ReportBatch
from rappor._util.validation import check_cohort, check_cohorts
from rappor.collect._compat import google_bloom_bits
from rappor.exceptions import InvalidParameterError
from rappor.client._hashing import bloom_bits, bloom_bits_table
from rappor.simulation import simulate_reports

PARAMS = Params(num_bloombits=16, num_hashes=2, num_cohorts=8, prob_p=0.5, prob_q=0.75, prob_f=0.5)


@pytest.mark.parametrize("value", [0, 7, np.int64(3)])
def test_check_cohort_accepts(value: int) -> None:
    assert check_cohort(value, 8, "owner") == int(value)


@pytest.mark.parametrize("value", [-1, 8, True, 1.0, "1", None])
def test_check_cohort_rejects(value: object) -> None:
    with pytest.raises(InvalidParameterError,
                       match=r"^The 'cohort' parameter of owner must be an int in the range \[0, 7\]\. Got .* instead\.$"):
        check_cohort(value, 8, "owner")


def test_check_cohorts_names_the_first_bad_value() -> None:
    assert check_cohorts([0, 7, 3], 8, "owner").tolist() == [0, 7, 3]
    with pytest.raises(InvalidParameterError,
                       match=r"^The 'cohorts' parameter of owner must hold ints in the range \[0, 7\]\. Got 9 instead\.$"):
        check_cohorts([0, 9, -1], 8, "owner")


@pytest.mark.parametrize(("call", "owner"), [
    (lambda: Encoder(PARAMS, bytes(16), cohort=8), "Encoder"),
    (lambda: bloom_bits("v", 8, PARAMS), "bloom_bits"),
    (lambda: google_bloom_bits("v", 8, PARAMS), "google_bloom_bits"),
])
def test_every_single_cohort_check_is_the_shared_one(call, owner: str) -> None:
    with pytest.raises(InvalidParameterError, match=rf"^The 'cohort' parameter of {owner} must be an int in the "
                                                    r"range \[0, 7\]\. Got 8 instead\.$"):
        call()


@pytest.mark.parametrize(("call", "owner"), [
    (lambda: simulate_reports(PARAMS, ["v"], [0, 0], [1, 8], rng=0), "simulate_reports"),
    (lambda: bloom_bits_table(["v"], PARAMS, cohorts=[1, 8]), "bloom_bits_table"),
    (lambda: ReportBatch(params=PARAMS, cohorts=np.array([1, 8]), words=np.zeros((2, 1), dtype=np.uint64)),
     "ReportBatch"),
])
def test_every_array_cohort_check_is_the_shared_one(call, owner: str) -> None:
    with pytest.raises(InvalidParameterError, match=rf"^The 'cohorts' parameter of {owner} must hold ints in the "
                                                    r"range \[0, 7\]\. Got 8 instead\.$"):
        call()
