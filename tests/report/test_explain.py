"""rappor.report._explain: the detection rule (level, correction, p-value threshold) and ties at the null's floor."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rappor import Decoder, Params, hash_candidates
from rappor.formats import read_counts, read_params
from rappor.report._explain import detection_rule, floor_tie
from rappor.simulation import Population, simulate

SAMPLE = Path(__file__).parents[2] / "data" / "sample"


def _sample(**decoder):
    params = read_params(SAMPLE / "params.csv")
    cmap = hash_candidates((SAMPLE / "candidates.txt").read_text().split(), params)
    return Decoder(**decoder).decode(read_counts(SAMPLE / "counts.csv", params), cmap)


def _zipf(correction="fdr"):
    params = Params(k=16, h=2, m=64, p=0.5, q=0.75, f=0.5)
    sim = simulate(params, Population.zipf(100), 100_000, rng=0)
    cmap = hash_candidates([f"v{i}" for i in range(1, 101)], params)
    return Decoder(correction=correction).decode(sim.aggregate, cmap)


@pytest.mark.parametrize("correction", ["fdr", "bonferroni", "storey", "lfdr", "none"])
def test_detection_rule_threshold_separates_the_p_values(correction):
    """Every correction keeps the order of the p-values: significant == (p <= threshold), and the rule says so."""
    result = _zipf(correction=correction)
    rule = detection_rule(result)
    assert rule.n_significant == int(result.significant.sum()) > 0 and rule.n_tests == 100
    np.testing.assert_array_equal(result.significant, result.pvalue <= rule.pvalue_threshold)
    assert rule.pvalue_threshold < rule.next_pvalue
    assert f"adjusted p-value <= {result.significance_level:g}" in rule.text
    assert f"p-value <= {rule.pvalue_threshold:.3g}" in rule.text


def test_floor_tie_on_four_cohorts():
    """data/sample has 4 cohorts: v1 and v2 share the random-string null's smallest p-value (issue 16)."""
    result = _sample()
    tie = floor_tie(result)
    assert tie is not None and tie.strings == ("v1", "v2") and tie.cohorts == 4
    assert tie.pvalue == result.pvalue.min() and "floor of the random-string null with 4 cohorts" in tie.text
    assert floor_tie(_sample(null="normal")) is None  # no floor under the normal null
    assert floor_tie(_zipf()) is None  # 64 cohorts: distinct p-values


def test_a_tie_away_from_the_floor_is_not_called_the_floor():
    """Found by a tester: counts at the background (no signal) tie every candidate at a large p-value,
    and the note called that tie 'the floor of the random-string null'."""
    from rappor import Aggregate

    params = Params(k=16, h=2, m=4, p=0.5, q=0.75, f=0.5)
    ones = round(16_000 * (params.prob_p * (1 - params.prob_f / 2) + params.prob_q * params.prob_f / 2))
    counts = np.array([[16_000] + [ones] * 16] * 4)
    result = Decoder().decode(Aggregate(params=params, counts=counts), hash_candidates([f"v{i}" for i in range(20)],
                                                                                      params))
    assert result.pvalue.min() > 0.01  # no candidate has any evidence
    assert floor_tie(result) is None
