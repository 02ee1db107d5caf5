"""Tests of rappor.decoder._result: DecodeResult and DecodeDiagnostics."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from rappor import Params
from rappor.decoder import DecodeResult


def test_selective_interval_of_detected_zero_share_is_not_degenerate():
    """A detected candidate whose least-squares share is 0 has no Wald z for the pivot.

    Regression: its selective interval was [0, 0] (a point, covering nothing but 0); it now
    gets the FCR interval, as does a string barely above the detection cutoff.  Strong
    strings keep the Wald interval (far above the cutoff the pivot is the Wald interval).
    """
    params = Params(num_bloombits=16, num_hashes=2, num_cohorts=64, prob_p=0.5, prob_q=0.75, prob_f=0.5)
    prop = np.array([0.2, 0.0, 0.031, 0.0, 0.001])
    se = np.full(5, 0.01)
    pv = np.array([1e-80, 1e-5, 1e-4, 0.3, 0.5])
    sig = np.array([True, True, True, False, False])
    res = DecodeResult(strings=tuple("abcde"), estimate=prop * 1e5, std_error=se * 1e5, proportion=prop,
                       prop_std_error=se, pvalue=pv, adjusted_pvalue=np.minimum(pv * 5, 1.0), significant=sig,
                       group=np.arange(5), n_reports=100_000, params=params, significance_level=0.05,
                       correction="fdr")
    sel = res.confidence_interval(0.95, adjust="selective")
    fcr = res.confidence_interval(0.95, adjust="fcr")
    z_fcr = stats.norm.isf(3 / 5 * 0.05 / 2)  # 3 detected of 5 tests (Benjamini-Yekutieli)
    assert sel.low[1] == 0.0 and sel.high[1] == pytest.approx(z_fcr * 0.01)
    assert (sel.low[1], sel.high[1]) == (fcr.low[1], fcr.high[1])
    np.testing.assert_allclose([sel.low[0], sel.high[0]], [0.2 - 1.959964 * 0.01, 0.2 + 1.959964 * 0.01],
                               atol=1e-6)
    assert sel.low[2] <= 0.031 <= sel.high[2] and sel.high[2] > sel.low[2]

