"""The default decoder's two products over issue 14's scenario classes (slow).

The classes are those of ``benchmarks/_classes.py`` (google/rappor's hashing and encoding
rules); google/rappor's R decoder was run on the same collections (seeds 0-19, three runs
each) and its best run per collection is recorded in ``tests/data/reference_accuracy.json``
(with the command that made it), so these tests need neither R nor the runs.  Every figure
is the total variation (TV) of results.csv as a reader sums it: the shares of its rows.

Tolerances: a mean over seeds is compared with 4 standard errors of the seed-to-seed spread
(paired with the reference on the same collections where the reference is the bound), and a
rate over decodes with 4 binomial standard errors (issue 14's "Tests to add").
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import sys
import warnings
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

import rappor

pytestmark = pytest.mark.slow

_BENCH = Path(__file__).parents[3] / "benchmarks"
_REFERENCE = json.loads((Path(__file__).parents[2] / "data" / "reference_accuracy.json").read_text())["classes"]


sys.path.insert(0, str(_BENCH))  # the harness's modules import each other by name
classes = importlib.import_module("_classes")
#: Every class, the slow one (10 M reports, 20,000 candidates: about 30 s a decode) last.
EVERY = classes.CLASSES + classes.SLOW_CLASSES  # type: ignore[attr-defined]
DISTRIBUTION = [c.name for c in EVERY if c.kind == "distribution"]
#: The twelve classes of issue 14 (their goal: mean ratio <= 0.85 over seeds 0-9).
ORIGINAL = DISTRIBUTION[:12]


@lru_cache(maxsize=None)
def _decode(name: str, seed: int) -> tuple[float, int, int, float, int, int]:
    """(TV of the rows, detected, false detections, share given to decoys, decoys with a share, decoys)."""
    scenario = next(c for c in EVERY if c.name == name)
    col = classes.collection(scenario, seed)  # type: ignore[attr-defined]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = rappor.Decoder().decode(col.aggregate, col.candidate_map)
    rows = np.zeros(len(res.strings), dtype=bool)
    rows[res.ranking()] = True
    shares = np.where(rows, np.nan_to_num(res.proportion), 0.0)
    m = rappor.analysis.evaluate(col.truth, col.candidate_map.strings, shares, detected=np.ones(len(shares), bool))
    absent = col.true_share == 0
    return (m.total_variation, int(res.detected.sum()), int((res.detected & absent).sum()),
            float(shares[absent].sum()), int((rows & absent).sum()), int(absent.sum()))


def test_default_no_worse_than_google_rappor_in_any_class():
    """Seeds 0-9 of each class: mean TV at most the reference's best run (paired, + 4 SE); mean ratio <= 0.85.

    Measured over 20 seeds (docs/notes/decoder-rounds.md, "Issue 14"): worst ratio at or below 1 (the tightest,
    mixed-small), mean ratio about 0.77.
    """
    seeds = range(10)
    ratios = []
    for name in ORIGINAL:
        ours = np.array([_decode(name, s)[0] for s in seeds])
        ref = np.array([_REFERENCE[name][str(s)]["tv"] for s in seeds])
        diff = ours - ref
        se = float(np.std(diff, ddof=1)) / math.sqrt(len(seeds))
        assert diff.mean() <= 4 * se, (name, ours.mean(), ref.mean())
        ratios.append(ours.mean() / ref.mean())
    assert float(np.mean(ratios)) <= 0.85, dict(zip(ORIGINAL, np.round(ratios, 3)))


def test_default_detections_no_more_false_than_google_rappor():
    """Seeds 0-9: the detected column's false positives per decode at most the reference's (mean of its runs) + 4 SE."""
    seeds = range(10)
    for name in ORIGINAL:
        ours = np.array([_decode(name, s)[2] for s in seeds], dtype=float)
        ref = np.array([_REFERENCE[name][str(s)]["mean_false_positives"] for s in seeds])
        se = float(np.std(ours - ref, ddof=1)) / math.sqrt(len(seeds))
        assert (ours - ref).mean() <= 4 * se + 1e-12, (name, ours.mean(), ref.mean())


@pytest.mark.parametrize("name", ["decoys-only", "decoys-only-1M"])
def test_default_decoys_only_rarely_gets_a_row(name):
    """1,000 candidates, none reported, 50 decodes: a decode with any row (a share or a detection) at
    most alpha + 4 binomial SE (measured over 20 seeds: 1 decode of 20 at 100k reports, none at 1M)."""
    n, alpha = 50, 0.05
    with_rows = [(_decode(name, s)[4] > 0) or (_decode(name, s)[1] > 0) for s in range(n)]
    assert np.mean(with_rows) <= alpha + 4 * math.sqrt(alpha * (1 - alpha) / n)


@pytest.mark.parametrize("name", ["mixed-small", "decoys-1k", "hp-decoys"])
def test_default_shares_do_not_report_every_decoy(name):
    """Mixed lists, 20 seeds: the share given to decoys averages below 0.05 and no decode gives a share
    to more than 10% of its decoys (measured: mixed-small 5.3 decoys of 170 with a share on average)."""
    out = [_decode(name, s) for s in range(20)]
    assert np.mean([o[3] for o in out]) < 0.05
    assert max(o[4] / o[5] for o in out) <= 0.10


@pytest.mark.parametrize("name", ["issue4", "high-privacy", "pq-close"])
def test_default_shares_stable_over_seeds(name):
    """All-real lists, 20 seeds: the TV's SD at most 0.035 (the reference's best run: 0.012-0.016) and
    no seed above the reference's mean best-run TV (no 5-or-81 swings, issue 14)."""
    tv = np.array([_decode(name, s)[0] for s in range(20)])
    ref_mean = float(np.mean([v["tv"] for v in _REFERENCE[name].values()]))
    assert float(np.std(tv, ddof=1)) <= 0.035
    assert float(tv.max()) < ref_mean


# --------------------------------------------------------------------------- the goal per class
def _reference_seeds(name: str) -> list[int]:
    """The first (up to) ten seeds whose reference runs are recorded (every class has seeds 0-19)."""
    return sorted(int(s) for s in _REFERENCE.get(name, {}))[:10]


#: Classes with the reference's best runs recorded for at least five seeds.
WITH_REFERENCE = [n for n in DISTRIBUTION if len(_reference_seeds(n)) >= 5]


@lru_cache(maxsize=None)
def _decode_detected(name: str, seed: int) -> float:
    """TV of ``shares="detected"`` (the detected strings' least-squares shares) on one collection."""
    scenario = next(c for c in EVERY if c.name == name)
    col = classes.collection(scenario, seed)  # type: ignore[attr-defined]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = rappor.Decoder(shares="detected").decode(col.aggregate, col.candidate_map)
    rows = np.zeros(len(res.strings), dtype=bool)
    rows[res.ranking()] = True
    shares = np.where(rows, np.nan_to_num(res.proportion), 0.0)
    return rappor.analysis.evaluate(col.truth, col.candidate_map.strings, shares,
                                    detected=np.ones(len(shares), bool)).total_variation


@pytest.mark.parametrize("name", WITH_REFERENCE)
def test_default_at_most_google_rappor_per_class(name):
    """The recorded seeds (up to 10): the class's mean TV at most the reference's best run, paired, + 4 SE
    of the mean difference (false failure below 1e-4 per class if the means were equal)."""
    seeds = _reference_seeds(name)
    diff = np.array([_decode(name, s)[0] - _REFERENCE[name][str(s)]["tv"] for s in seeds])
    se = float(np.std(diff, ddof=1)) / math.sqrt(len(seeds))
    assert diff.mean() <= 4 * se, (name, diff.mean(), se)


@pytest.mark.parametrize("name", WITH_REFERENCE)
def test_default_no_more_false_detections_than_google_rappor_per_class(name):
    """The recorded seeds (up to 10): the detected column's false positives at most the reference's mean over
    its runs + 4 SE."""
    seeds = _reference_seeds(name)
    diff = np.array([_decode(name, s)[2] - _REFERENCE[name][str(s)]["mean_false_positives"] for s in seeds])
    se = float(np.std(diff, ddof=1)) / math.sqrt(len(seeds))
    assert diff.mean() <= 4 * se + 1e-12, (name, diff.mean(), se)


@pytest.mark.parametrize("name", DISTRIBUTION)
def test_default_no_worse_than_shares_detected_per_class(name):
    """Seeds 0-9: the default's mean TV at most ``shares="detected"``'s + 4 SE of the paired difference
    (the goal is 2 SE over 20 seeds, reported by benchmarks/accuracy.py; 4 SE over 10 keeps false
    failures below 1e-4 per class)."""
    seeds = range(10)
    diff = np.array([_decode(name, s)[0] - _decode_detected(name, s) for s in seeds])
    se = float(np.std(diff, ddof=1)) / math.sqrt(len(seeds))
    assert diff.mean() <= 4 * se + 1e-12, (name, diff.mean(), se)


@pytest.mark.parametrize("name", ["repeat-10", "repeat-30"])
def test_repeated_reports_no_worse_than_the_same_clients_single_reports(name):
    """Seeds 0-9: 10 or 30 reports per client under one PRR give a TV no worse than one report of the
    same clients (same cohorts and values: the draws differ only after them), paired + 4 SE."""
    scenario = next(c for c in classes.CLASSES if c.name == name)  # type: ignore[attr-defined]
    single = dataclasses.replace(scenario, name=f"{name}-single", reports_per_client=1)
    diff = []
    for seed in range(10):
        one, _ = classes.draw_repeated_counts(single, np.random.default_rng([14, seed]))  # type: ignore[attr-defined]
        col = classes.collection(scenario, seed)  # type: ignore[attr-defined]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = rappor.Decoder().decode(one, col.candidate_map)
        rows = np.zeros(len(res.strings), dtype=bool)
        rows[res.ranking()] = True
        shares = np.where(rows, np.nan_to_num(res.proportion), 0.0)
        tv_one = rappor.analysis.evaluate(col.truth, col.candidate_map.strings, shares,
                                          detected=np.ones(len(shares), bool)).total_variation
        diff.append(_decode(name, seed)[0] - tv_one)
    d = np.array(diff)
    assert d.mean() <= 4 * float(np.std(d, ddof=1)) / math.sqrt(len(d)), d


@pytest.mark.parametrize("name", ["repeat-10", "repeat-30"])
def test_repeated_reports_detections_and_intervals(name):
    """Seeds 0-19 of the repeated-report classes: the false discovery proportion of the detected
    column averages at most alpha + 4 SE of its mean (Benjamini-Hochberg controls its expectation;
    with 10-20 strings detected a decode with one false detection is not rare: measured, 5 and 7 of
    20 decodes, 0.3-0.6 false detections a decode where google/rappor's decoder makes 7), and the 95%
    Wald intervals of the detected strings cover their true share at least 0.95 - 4 binomial SE of
    the pooled intervals (the dispersion widens them by its square root)."""
    alpha, seeds = 0.05, range(20)
    scenario = next(c for c in classes.CLASSES if c.name == name)  # type: ignore[attr-defined]
    fdp, covered, intervals = [], 0, 0
    for seed in seeds:
        col = classes.collection(scenario, seed)  # type: ignore[attr-defined]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = rappor.Decoder().decode(col.aggregate, col.candidate_map)
        det = np.asarray(res.detected, dtype=bool)
        fdp.append(float((det & (col.true_share == 0)).sum()) / max(int(det.sum()), 1))
        ci = res.confidence_interval(0.95)
        truth = col.true_share[det]
        covered += int(((ci.low[det] <= truth) & (truth <= ci.high[det])).sum())
        intervals += int(det.sum())
    assert np.mean(fdp) <= alpha + 4 * float(np.std(fdp, ddof=1)) / math.sqrt(len(fdp)), fdp
    assert covered / intervals >= 0.95 - 4 * math.sqrt(0.95 * 0.05 / intervals), (covered, intervals)


@pytest.mark.xfail(strict=True, reason="goal not met: mean ratio 0.856 over 21 classes (20 seeds, session 25; 0.861 on the "
                   "seeds 0-9 this test reads), the old twelve 0.763; even with the true prior, unexplained mass and "
                   "dispersion the nine new classes reach 0.89-0.97 (docs/notes/decoder-rounds.md, 'Issue 23, session 3')")
def test_goal_mean_ratio_at_most_0_80_over_every_class():
    """The goal: mean over the classes of (default's mean TV / reference's best run) at most 0.80, on the
    recorded seeds (up to 10 per class)."""
    ratios = []
    for name in WITH_REFERENCE:
        seeds = _reference_seeds(name)
        ours = np.mean([_decode(name, s)[0] for s in seeds])
        ratios.append(ours / np.mean([_REFERENCE[name][str(s)]["tv"] for s in seeds]))
    assert float(np.mean(ratios)) <= 0.80, dict(zip(WITH_REFERENCE, np.round(ratios, 3)))


@pytest.mark.parametrize("name", [
    pytest.param("flat-missing", marks=pytest.mark.xfail(
        strict=True, reason="goal not met on flat lists with missing strings and decoys: the default gives shares to "
        "decoys: +2.6 SE over 20 seeds (session 24); with every oracle it would be ahead by only 0.001-0.004 "
        "(docs/notes/decoder-rounds.md, 'Issue 23, sessions 2 and 3')")),
    "flat-missing-1M",  # +1.97 SE since session 24's row weights (+3.0 before): met, by the seeds' noise
])
def test_goal_no_worse_than_shares_detected_within_2_se(name):
    """The goal over 20 seeds: the default's mean TV at most ``shares="detected"``'s + 2 SE of the paired
    difference."""
    diff = np.array([_decode(name, s)[0] - _decode_detected(name, s) for s in range(20)])
    assert diff.mean() <= 2 * float(np.std(diff, ddof=1)) / math.sqrt(len(diff)), diff.mean()
