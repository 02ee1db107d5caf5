"""Tests of rappor.analysis.decoder._adjust: multiple-testing adjustment."""

from __future__ import annotations

import numpy as np
import pytest

from rappor.analysis.decoder._adjust import adjust_pvalues


def test_adjust_pvalues_bh_matches_definition():
    p = np.array([0.01, 0.04, 0.03, 0.5])
    adj = adjust_pvalues(p, "fdr")
    np.testing.assert_allclose(adj, [0.04, 0.16 / 3, 0.16 / 3, 0.5])  # p * n / rank, then running min from the top
    np.testing.assert_allclose(adjust_pvalues(p, "bonferroni"), [0.04, 0.16, 0.12, 1.0])



@pytest.mark.parametrize("n", [0, 1, 2, 7, 1000])
def test_benjamini_hochberg_equals_scipy_to_the_bit(n):
    # Ours repeats scipy.stats.false_discovery_control's steps (without importing scipy.stats).
    from scipy import stats

    rng = np.random.default_rng(n)
    p = np.concatenate([rng.random(n), rng.beta(0.1, 20.0, size=n // 3), [0.0, 1.0, 0.5, 0.5] if n > 2 else []])
    np.testing.assert_array_equal(adjust_pvalues(p, "fdr"), stats.false_discovery_control(p, method="bh"))
    with pytest.raises(ValueError, match="between 0 and 1"):
        adjust_pvalues(np.array([0.5, 1.5]), "fdr")


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



# --- against statsmodels (an independent implementation; a test dependency only) -----------

def _pvalue_sets():
    """Mixtures of nulls (uniform) and signals (small p-values), with ties and the edges 0 and 1."""
    rng = np.random.default_rng(2024)
    for n_null, n_signal in ((50, 0), (45, 5), (30, 30), (5, 95), (0, 20), (200, 20)):
        p = np.concatenate([rng.random(n_null), rng.beta(0.1, 20.0, size=n_signal)])
        yield rng.permutation(p)
    yield np.array([0.01, 0.01, 0.02, 0.02, 0.5, 1.0, 0.0, 0.03])


@pytest.mark.parametrize("p", list(_pvalue_sets()))
def test_benjamini_hochberg_matches_statsmodels(p):
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    _, want, _, _ = multitest.multipletests(p, alpha=0.05, method="fdr_bh")
    np.testing.assert_allclose(adjust_pvalues(p, "fdr"), want, rtol=1e-12, atol=0)


@pytest.mark.parametrize("p", list(_pvalue_sets()))
@pytest.mark.parametrize("level", [0.05, 0.1])
def test_two_stage_matches_statsmodels_bky(p, level):
    """Benjamini-Krieger-Yekutieli (2006, Definition 6): same rejections as statsmodels' two-stage BKY.

    The adjusted values agree too, except when stage 1 rejects everything: statsmodels then
    scales BH by ``1 + level``, we keep BH (both reject all at ``level``).
    """
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    reject, want, m0, _ = multitest.fdrcorrection_twostage(p, alpha=level, method="bky")
    got = adjust_pvalues(p, "adaptive-fdr", level)
    np.testing.assert_array_equal(got <= level, reject)
    if m0 > 0:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


@pytest.mark.parametrize("p", list(_pvalue_sets()))
@pytest.mark.parametrize("level", [0.05, 0.1])
def test_storey_is_statsmodels_bh_at_level_over_pi0(p, level):
    """Storey, Taylor and Siegmund (2004): BH at ``level / pi0`` among the p-values ``<= 1/2``.

    ``pi0 = (1 + #{p > 1/2}) / (n / 2)``, capped at 1; the BH step is statsmodels'.
    """
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    pi0 = min(1.0, (1 + np.count_nonzero(p > 0.5)) / (0.5 * len(p)))
    reject, bh = multitest.fdrcorrection(p, alpha=level / pi0)
    got = adjust_pvalues(p, "storey", level)
    np.testing.assert_array_equal(got <= level, reject & (p <= 0.5))
    np.testing.assert_allclose(got[p <= 0.5], np.minimum(pi0 * bh, 1.0)[p <= 0.5], rtol=1e-12, atol=0)
    assert np.all(got[p > 0.5] == 1.0)


@pytest.mark.parametrize("n", [0, 1, 2, 7, 1000, 20000])
@pytest.mark.parametrize("level", [0.0, 0.01, 0.05, 0.5, 1.0])
def test_fdr_detected_sorts_only_small_pvalues_with_the_same_answer(n, level):
    # DetectionRule.detected for "fdr" sorts the p-values <= level only: same decisions as adjusting all.
    from rappor.analysis.decoder._adjust import DetectionRule

    rng = np.random.default_rng(n)
    p = np.concatenate([rng.random(n), rng.beta(0.05, 20.0, size=n // 3), [0.0, 1.0, level, level] if n > 2 else []])
    p = np.round(p, 3) if n == 20000 else p  # many ties, some at the level itself
    rule = DetectionRule(null="normal", correction="fdr", level=level)
    np.testing.assert_array_equal(rule.detected(p), adjust_pvalues(p, "fdr", level) <= level)
    with pytest.raises(ValueError, match="between 0 and 1"):
        rule.detected(np.array([0.5, np.nan]))
