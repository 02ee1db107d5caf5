"""Tests of rappor.decoder._adjust: multiple-testing adjustment."""

from __future__ import annotations

import numpy as np
import pytest

from rappor.decoder._adjust import adjust_pvalues


def test_adjust_pvalues_bh_matches_definition():
    p = np.array([0.01, 0.04, 0.03, 0.5])
    adj = adjust_pvalues(p, "fdr")
    np.testing.assert_allclose(adj, [0.04, 0.16 / 3, 0.16 / 3, 0.5])  # p * n / rank, then running min from the top
    np.testing.assert_allclose(adjust_pvalues(p, "bonferroni"), [0.04, 0.16, 0.12, 1.0])



def test_adjust_pvalues_adaptive_match_definitions():
    p = np.array([0.002, 0.01, 0.02, 0.03, 0.04, 0.045, 0.2, 0.3, 0.6, 0.9])
    bh = adjust_pvalues(p, "fdr")
    # Storey: pi0 = (1 + #{p > 1/2}) / (n / 2) = 3 / 5; p > 1/2 never rejected.
    storey = adjust_pvalues(p, "storey", 0.05)
    np.testing.assert_allclose(storey[:8], 0.6 * bh[:8])
    assert storey[8:].tolist() == [1.0, 1.0]
    # BKY: stage 1 (BH at 0.05 / 1.05) rejects 1, so m0 = 9 and the factor is 9/10 * 1.05.
    np.testing.assert_allclose(adjust_pvalues(p, "adaptive-fdr", 0.05), np.minimum(bh * 0.945, 1))
    assert (storey <= 0.05).sum() == 6 and (bh <= 0.05).sum() == 2

