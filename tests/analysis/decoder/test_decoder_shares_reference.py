"""The decoder's outputs against stored ones: a speed change must not change a result.

``tests/data/decoder_shares_reference.json`` holds the shares (``proportion``), p-values,
adjusted p-values and detections of a few decodes that reach every path of
:mod:`rappor.analysis.decoder._shares` (every candidate moved; a screened list with its idle
candidates; a screened list with more idle candidates than ``MAX_IDLE``, sampled; k=128,
whose moved candidates' Gram matrix is a sparse product; ``correction="lfdr"``, whose
NPMLE is the shares' EM), as computed at commit 603c054, before the speed pass of
``docs/notes/decoder-rounds.md`` ("Speed"), and regenerated in session 24 when the rows' weights
no longer followed their own counts (``_problem.background_rates``, ``fitted_rates``).  Regenerate (only for a deliberate change of results, saying
so in the commit) with ``python tests/analysis/decoder/test_decoder_shares_reference.py``.

Tolerances follow from the computation's conditioning, not from one machine's last digits.
The decodes reduce sums over n = m*k = 1,024 rows through a few chained stages (whitening, Gram
solve, null calibration); float64 rounding (u = 1.1e-16) in such a sum is at most n*u = 1.1e-13
relative, and the selected columns' condition numbers are 1.4-5.3 (at most 29 for the whole lists),
so the z statistics of two correct builds (other CPUs, BLAS kernels, summation orders) agree to about
1e-11 relative; ``Z_RTOL`` allows ten times that.  Measured across OpenBLAS's Prescott, Haswell, Zen
and SkylakeX kernels (``OPENBLAS_CORETYPE``): at most 3e-12.  P-values are compared on that z scale
(``norm.isf``): a p-value of 1e-132 (z = 24.5) moves by z**2 times the z statistic's relative error,
1e-10 in the measurement above, which is why a relative tolerance on p itself cannot be machine
independent.  Shares are at most 1, so the same bound gives ``SHARE_ATOL``; measured at most 1.3e-16.
Which candidates get a share and which are detected must not change.  A change of the algorithm moves
shares by far more (measured on the first case: the coordinate ascent stopped at ``TOL = 1e-3``
instead of ``1e-4`` moves them by 3e-3, its prior's EM step relaxed by 1.99 instead of 2 by 5e-7;
another bootstrap seed by 4e-3), so these tolerances still catch it.  (Until session 24, ``TOL =
1e-5`` moved them by 1e-6; with the rows weighted at their predicted rates the ascent meets both
tolerances at the same step, and the shares do not move.)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import norm

from rappor import Decoder, Params, hash_candidates
from rappor import simulation as scenario

REFERENCE = Path(__file__).parents[2] / "data" / "decoder_shares_reference.json"
#: Relative tolerance of z statistics and absolute tolerance of shares (derivation in the docstring).
Z_RTOL = 1e-10
SHARE_ATOL = 1e-10
ISSUE4 = Params(num_bloombits=16, num_hashes=2, num_cohorts=64, prob_p=0.5, prob_q=0.75, prob_f=0.5)
K128 = Params(num_bloombits=128, num_hashes=2, num_cohorts=8, prob_p=0.5, prob_q=0.75, prob_f=0.5)

#: name -> (parameters, strings in the population, reports, seed, decoys added to the list, Decoder options)
CASES: dict[str, tuple[Params, int, int, int, int, dict[str, Any]]] = {
    "issue4-all-moved": (ISSUE4, 100, 100_000, 0, 0, {}),
    "decoys-900-screened": (ISSUE4, 100, 100_000, 2, 900, {}),
    "decoys-2400-idle-sampled": (ISSUE4, 100, 100_000, 1, 2_400, {}),
    "k128-sparse-gram": (K128, 200, 200_000, 3, 300, {}),
    "lfdr-correction": (ISSUE4, 100, 100_000, 5, 400, {"correction": "lfdr"}),
}


def _decode(name: str) -> dict[str, Any]:
    params, n_values, n_reports, seed, n_decoys, options = CASES[name]
    sc = scenario.zipf_scenario(params, n_reports=n_reports, n_values=n_values, rng=seed)
    candidates = list(sc.values) + [f"decoy{i}" for i in range(n_decoys)]
    res = Decoder(rng=seed, **options).decode(sc.aggregate, hash_candidates(candidates, params))
    return {"proportion": res.proportion.tolist(), "pvalue": res.pvalue.tolist(),
            "adjusted_pvalue": res.adjusted_pvalue.tolist(), "detected": res.detected.tolist(),
            "screened": bool(res.diagnostics.screened)}


@pytest.fixture(scope="module")
def reference() -> dict[str, Any]:
    stored: dict[str, Any] = json.loads(REFERENCE.read_text())
    return stored


@pytest.mark.parametrize("name", list(CASES))
def test_decode_matches_stored_outputs(name, reference):
    want, got = reference[name], _decode(name)
    assert got["screened"] == want["screened"]
    shares, stored = np.array(got["proportion"]), np.array(want["proportion"], dtype=np.float64)
    np.testing.assert_array_equal(np.isnan(shares), np.isnan(stored))
    np.testing.assert_array_equal(np.nan_to_num(shares) > 0, np.nan_to_num(stored) > 0)
    assert float(np.nanmax(np.abs(shares - stored))) <= SHARE_ATOL
    for key in ("pvalue", "adjusted_pvalue"):
        z_got, z_want = norm.isf(np.array(got[key])), norm.isf(np.array(want[key], dtype=np.float64))
        np.testing.assert_allclose(z_got, z_want, rtol=Z_RTOL, atol=Z_RTOL, err_msg=key)
    assert got["detected"] == want["detected"]


def test_reference_cases_reach_every_path(reference):
    """The stored decodes cover what they claim: screened lists, the idle sample, positive shares."""
    assert not reference["issue4-all-moved"]["screened"]
    assert reference["decoys-900-screened"]["screened"] and reference["decoys-2400-idle-sampled"]["screened"]
    for name in CASES:
        assert sum(x > 0 for x in reference[name]["proportion"] if x == x) >= 3, name
        assert any(reference[name]["detected"]), name


@pytest.mark.parametrize(("constant", "value"), [("TOL", 1e-3), ("RELAX", 1.99)])
def test_a_changed_result_fails(reference, monkeypatch, constant, value):
    """The comparison can fail: a slightly different coordinate ascent moves the shares past 1e-9 (measured: the
    ascent stopped at TOL = 1e-3 instead of 1e-4, 3e-3; its prior's EM step relaxed by 1.99, 5e-7)."""
    from rappor.analysis.decoder import _shares

    monkeypatch.setattr(_shares, constant, value)
    got = np.array(_decode("issue4-all-moved")["proportion"])
    assert float(np.nanmax(np.abs(got - np.array(reference["issue4-all-moved"]["proportion"])))) > 1e-9


if __name__ == "__main__":  # regenerate the stored outputs (a deliberate change of results only)
    cases = {name: _decode(name) for name in CASES}
    REFERENCE.write_text("{\n" + ",\n".join(f"{json.dumps(name)}: {json.dumps(out)}" for name, out in cases.items()) + "\n}\n")
    sys.exit(0)
