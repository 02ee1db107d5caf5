"""Every null x correction x estimator combination of the decoder on decoy lists, and the
stability of the (deprecated) empirical-Bayes estimator (issue 14, phase 2).

    python benchmarks/option_grid.py [--classes decoys-1k,missing-half] [--seeds 5]
    python benchmarks/option_grid.py --normal-lfdr --seeds 20
    python benchmarks/option_grid.py --eb-stability [--seeds 20]

The first prints, per combination, the decoys detected in each decode of the scenario classes
of ``benchmarks/_classes.py`` (google/rappor's MD5 hashing and encoding rules) and whether the
decoder refuses the combination.  Refused combinations are run anyway, past the check
(``rappor.decoder._estimate.estimate`` with the options directly), to show why they are refused.
``--normal-lfdr`` runs null="normal" with correction="lfdr" alone.

``--eb-stability`` decodes issue 4's public scenario (100 real strings, 100,000 reports) with
``estimator="empirical-bayes"`` and with a variant that takes its z-scores from the
*unconstrained* weighted least-squares fit (every candidate and the non-candidate column free
of sign), which removes the first cause of docs/decoder.md's diagnosis (z-scores at the
non-negativity bound); on mixed-small (30 real + 170 decoys) too, where the variant's decoys show.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).parent))

import rappor  # noqa: E402
from rappor.decoder._adjust import CORRECTIONS  # noqa: E402
from rappor.decoder._bayes import Z_CLIP, _npmle_prior, _posterior_summaries  # noqa: E402
from rappor.decoder._bayes import posterior_effects, project_capped_simplex  # noqa: E402
from rappor.decoder._decoder import check_combination  # noqa: E402
from rappor.decoder._estimate import DecodeOptions, estimate  # noqa: E402
from rappor.decoder._null import NULLS  # noqa: E402
from rappor.decoder._problem import weighted_problem  # noqa: E402
from rappor.exceptions import InvalidParameterError  # noqa: E402

import _classes  # noqa: E402

ESTIMATORS = ("least-squares", "empirical-bayes")


def detected_past_the_check(col: _classes.Collection, null: str, correction: str, estimator: str) -> np.ndarray:
    """What the decoder would report with these options, refused or not (Decoder.decode's rule)."""
    options = DecodeOptions(significance_level=0.05, correction=correction, lasso_alpha=None, screening="auto",
                            model_unexplained=True, max_refits=5, null=null, estimator=estimator, rng=None)
    est = estimate(options, col.aggregate.counts, col.candidate_map.matrix, col.aggregate.params)
    if est.reported is not None:
        return np.asarray(est.reported, dtype=bool)
    return np.nan_to_num(est.adjusted_pvalue, nan=1.0) <= 0.05


def grid(class_names: list[str], seeds: int, combos: list[tuple[str, str, str]]) -> None:
    for name in class_names:
        scenario = _classes._by_name(name)
        cols = [_classes.collection(scenario, s) for s in range(seeds)]
        n_decoys = int(np.sum(cols[0].true_share == 0))
        print(f"{name}: {n_decoys} decoys, seeds 0-{seeds - 1}; decoys detected per decode")
        for combo in combos:
            try:
                check_combination(*combo)
                verdict = "accepted"
            except InvalidParameterError:
                verdict = "REFUSED "
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                found = [int(np.sum(detected_past_the_check(c, *combo) & (c.true_share == 0))) for c in cols]
            print(f"  {verdict} {'/'.join(combo):<45} {found}  max {max(found) / n_decoys:.1%} of the decoys"
                  f"  ({time.perf_counter() - start:.1f} s)", flush=True)


def unconstrained_z_shares(col: _classes.Collection) -> np.ndarray:
    """The empirical-Bayes shares with z-scores of the unconstrained weighted least-squares fit (a variant)."""
    problem = weighted_problem(col.aggregate.counts, col.candidate_map.matrix, col.aggregate.params)
    a = problem.weighted_design().a.toarray()
    gram = a.T @ a
    beta = np.linalg.solve(gram, a.T @ problem.b)
    dof = len(problem.b) - a.shape[1]
    phi = max(1.0, float(np.sum((problem.b - a @ beta) ** 2)) / dof)
    se = np.sqrt(phi * np.diag(np.linalg.inv(gram)))
    s_u = problem.n_distinct
    _, median, mean = posterior_effects(beta[:s_u] / se[:s_u])
    share = np.where(median > 0, mean * se[:s_u], 0.0)
    share = project_capped_simplex(share, 1.0 - max(float(beta[s_u]), 0.0))
    return problem.spread(share, 0.0)


def bagged_prior_shares(col: _classes.Collection, n_priors: int = 30) -> np.ndarray:
    """A second variant: the estimator's calibrated z-scores, 30 NPMLE priors (the z-scores' and 29 bootstrap
    resamples'), each candidate's share averaged over the priors and kept when at least half give it one
    (step 3 of docs/decoder.md's proposed default, on the default decode's z-scores)."""
    res = rappor.Decoder().decode(col.aggregate, col.candidate_map)
    z = np.clip(stats.norm.isf(np.clip(np.nan_to_num(res.pvalue, nan=1.0), 1e-300, 1.0)), -Z_CLIP, Z_CLIP)
    se = np.where(np.isfinite(res.prop_std_error), res.prop_std_error, 0.0)
    coef = np.nan_to_num(res.proportion)
    sure = (coef > 0) & (z >= 1) & (se > 0)
    kappa = float(np.median(coef[sure] / (z[sure] * se[sure]))) if sure.any() else 1.0
    per_z = np.where(sure, np.divide(coef, z, out=np.zeros_like(coef), where=sure), kappa * se)
    rng = np.random.default_rng(0)
    shares = []
    for b in range(n_priors):
        grid, weights = _npmle_prior(z if b == 0 else rng.choice(z, size=len(z)))
        _, median, mean = _posterior_summaries(z, grid, weights)
        shares.append(np.where(median > 0, mean * per_z, 0.0))
    stacked = np.array(shares)
    return np.where(np.mean(stacked > 0, axis=0) >= 0.5, stacked.mean(axis=0), 0.0)


def eb_stability(seeds: int) -> None:
    for name in ("issue4", "mixed-small"):
        scenario = _classes._by_name(name)
        for label in ("empirical-bayes", "unconstrained-z variant", "bagged-prior variant"):
            det, tv, fp = [], [], []
            for seed in range(seeds):
                col = _classes.collection(scenario, seed)
                truth = col.true_share
                if label == "empirical-bayes":
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        res = rappor.Decoder(estimator="empirical-bayes").decode(col.aggregate, col.candidate_map)
                    shares = np.where(res.detected, np.nan_to_num(res.proportion), 0.0)
                elif label == "unconstrained-z variant":
                    shares = unconstrained_z_shares(col)
                else:
                    shares = bagged_prior_shares(col)
                reported = shares > 0
                det.append(int(reported.sum()))
                fp.append(int(np.sum(reported & (truth == 0))))
                tv.append(0.5 * (float(np.abs(shares - truth).sum()) + 1.0 - float(truth.sum())))
            print(f"{name:<12} {label:<24} detected {min(det)}-{max(det)} (sd {np.std(det, ddof=1):.1f}); "
                  f"TV {np.mean(tv):.3f} (sd {np.std(tv, ddof=1):.3f}, {min(tv):.3f}-{max(tv):.3f}); "
                  f"decoys reported: max {max(fp)} per decode", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--classes", default="decoys-1k,missing-half")
    parser.add_argument("--seeds", type=int, default=None, help="[default: 5; 20 with --eb-stability, --normal-lfdr]")
    parser.add_argument("--normal-lfdr", action="store_true")
    parser.add_argument("--eb-stability", action="store_true")
    args = parser.parse_args()
    if args.eb_stability:
        eb_stability(args.seeds or 20)
        return
    combos = ([("normal", "lfdr", "least-squares")] if args.normal_lfdr
              else list(itertools.product(NULLS, CORRECTIONS, ESTIMATORS)))
    grid(args.classes.split(","), args.seeds or (20 if args.normal_lfdr else 5), combos)


if __name__ == "__main__":
    main()
