"""The screening Lasso's penalty: plug-in default vs cross-validation (CV-min, CV-1se).

Issue 4's scenario (``benchmarks/accuracy_issue4.py``): 100,000 reports, values v1..v100 with
Zipf(1) frequencies, k=16 h=2 m=64 p=0.5 q=0.75 f=0.5; candidates v1..v100 plus 900 or
9,900 decoys (both screened: more candidates than 0.8 x 1,024 rows), 5 seeds; and the
null scenario (data v1..v100, candidates 1,000 decoys only).  For each penalty the
decoder's TV (undetected = 0), detections, false positives, candidates let through the
screen, null decodes with any false positive and time (CV included) are printed, with
the per-seed (paired) TV difference against the plug-in penalty.  A fourth row scales the
plug-in penalty by the square root of the Pearson dispersion of a first decode (the
plug-in assumes unit noise variance on the whitened scale).

The CV penalty is computed with :func:`rappor.testing.cv_lasso` on the same
whitened design the decoder screens (rebuilt here with the decoder's own helpers,
:func:`rappor.testing.weighted_problem`) and passed as ``Decoder(lasso_alpha=...)``.

Usage::

    python benchmarks/penalty.py [--seeds 5] [--null-decodes 20] [--folds 5] [--curve]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import rappor  # noqa: E402
from rappor.testing import cv_lasso, scale_rows, weighted_problem  # noqa: E402
from _scenario import zipf_scenario  # noqa: E402
from accuracy_issue4 import PARAMS, candidates  # noqa: E402

METHODS = ("plug-in", "cv-min", "cv-1se", "plug-in*sqrt(phi)")


def whitened_problem(aggregate: rappor.Aggregate, cmap: rappor.CandidateMap) -> dict[str, Any]:
    """The screening Lasso's inputs, as the decoder builds them (:func:`rappor.testing.weighted_problem`).

    Returns ``a`` (whitened distinguishable candidate columns), ``b``, ``free`` (the
    whitened non-candidate column) and ``cohort_of_row``.
    """
    problem = weighted_problem(aggregate.counts, cmap.matrix, aggregate.params)
    return {"a": scale_rows(problem.design, problem.weight), "b": problem.b, "free": problem.background,
            "cohort_of_row": problem.cohort_of_row}


def penalties(aggregate: rappor.Aggregate, cmap: rappor.CandidateMap, folds: int,
              curve: bool = False) -> tuple[dict[str, float | None], float]:
    """``{method: lasso_alpha}`` and the seconds the cross-validation took."""
    t0 = time.perf_counter()
    prob = whitened_problem(aggregate, cmap)
    cv = cv_lasso(prob["a"], prob["b"], prob["cohort_of_row"], free=prob["free"], n_folds=folds, rng=0)
    seconds = time.perf_counter() - t0
    if curve:
        n = len(prob["b"])
        print("    alpha*n   cv_mean   cv_se")
        for al, mu, se in zip(cv.alphas, cv.cv_mean, cv.cv_se):
            mark = (" <min" if al == cv.alpha_min else "") + (" <1se" if al == cv.alpha_1se else "")
            print(f"    {al * n:7.3f} {mu:9.4f} {se:7.4f}{mark}")
    return {"plug-in": None, "cv-min": cv.alpha_min, "cv-1se": cv.alpha_1se,
            "plug-in*sqrt(phi)": None}, seconds


def decode(aggregate: rappor.Aggregate, cmap: rappor.CandidateMap, alpha: float | None,
           method: str = "") -> tuple[rappor.DecodeResult, float]:
    """Decode with ``lasso_alpha=alpha``; ``plug-in*sqrt(phi)`` decodes twice: the plug-in penalty
    scaled by the square root of the first fit's Pearson dispersion (the noise scale it estimates)."""
    t0 = time.perf_counter()
    res = rappor.Decoder(lasso_alpha=alpha).decode(aggregate, cmap)
    if method == "plug-in*sqrt(phi)":
        scaled = res.diagnostics.lasso_alpha * np.sqrt(res.diagnostics.dispersion)
        res = rappor.Decoder(lasso_alpha=scaled).decode(aggregate, cmap)
    return res, time.perf_counter() - t0


def run_scenario(n_decoys: int, seeds: range, folds: int, curve: bool) -> dict[str, np.ndarray]:
    """Per method, rows (TV, detected, FP, screened-in, alpha*n, seconds) per seed."""
    cmap = rappor.hash_candidates(candidates(100, n_decoys), PARAMS)
    out: dict[str, list[tuple[float, ...]]] = {m: [] for m in METHODS}
    for seed in seeds:
        sc = zipf_scenario(PARAMS, n_reports=100_000, n_values=100, rng=seed)
        truth = sc.truth()
        alphas, cv_seconds = penalties(sc.aggregate, cmap, folds, curve and seed == seeds[0])
        for method, alpha in alphas.items():
            res, seconds = decode(sc.aggregate, cmap, alpha, method)
            m = rappor.analysis.evaluate(truth, res.strings, res.proportion, detected=res.detected)
            n_rows = 64 * 16
            out[method].append((m.total_variation, m.n_detected, m.false_positives, res.diagnostics.selected,
                                res.diagnostics.lasso_alpha * n_rows,
                                seconds + (cv_seconds if method.startswith("cv") else 0.0)))
    return {m: np.array(v, dtype=float) for m, v in out.items()}


def run_null(decodes: range, folds: int, n_decoys: int = 1000) -> dict[str, np.ndarray]:
    """Per method, rows (false positives, screened-in, seconds) per decode (data v1..v100, decoys only)."""
    cmap = rappor.hash_candidates(candidates(0, n_decoys), PARAMS)
    out: dict[str, list[tuple[float, ...]]] = {m: [] for m in METHODS}
    for seed in decodes:
        sc = zipf_scenario(PARAMS, n_reports=100_000, n_values=100, rng=1000 + seed)
        alphas, cv_seconds = penalties(sc.aggregate, cmap, folds)
        for method, alpha in alphas.items():
            res, seconds = decode(sc.aggregate, cmap, alpha, method)
            out[method].append((float(res.detected.sum()), res.diagnostics.selected,
                                seconds + (cv_seconds if method.startswith("cv") else 0.0)))
    return {m: np.array(v, dtype=float) for m, v in out.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--null-decodes", type=int, default=20)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (threadpoolctl) [default: 1]")
    parser.add_argument("--curve", action="store_true", help="print the CV curve of the first seed")
    args = parser.parse_args(argv)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - optional
        pass
    else:
        threadpool_limits(args.threads, user_api="blas")
    seeds = range(args.seeds)
    print(f"{args.seeds} seeds, {args.folds} cohort folds; TV counts undetected strings as 0; "
          "'model' = candidates in the model after screening and refits; alpha*n on the whitened unit-norm scale")
    print(f"{'candidates':>10} {'penalty':>18} {'alpha*n':>8} {'model':>9} {'TV':>6} {'(sd)':>6} "
          f"{'detected':>9} {'true':>5} {'FP':>5} {'seconds':>8} {'dTV vs plug-in (se)':>20}")
    for decoys in (900, 9900):
        res = run_scenario(decoys, seeds, args.folds, args.curve)
        for method in METHODS:
            r = res[method]
            d = r[:, 0] - res["plug-in"][:, 0]  # paired by seed
            d_se = d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else 0.0
            print(f"{100 + decoys:>10,} {method:>18} {r[:, 4].mean():8.2f} {r[:, 3].mean():9.1f} {r[:, 0].mean():6.3f} "
                  f"{r[:, 0].std(ddof=1) if len(r) > 1 else 0.0:6.3f} {r[:, 1].mean():9.1f} {(r[:, 1] - r[:, 2]).mean():5.1f} "
                  f"{r[:, 2].mean():5.2f} "
                  f"{r[:, 5].mean():8.3f} {d.mean():+13.4f} ({d_se:.4f})", flush=True)
    null = run_null(range(args.null_decodes), args.folds)
    print(f"null: data v1..v100, candidates 1,000 decoys only, {args.null_decodes} decodes")
    print(f"{'penalty':>18} {'model':>9} {'FP/decode':>10} {'any FP':>7} {'(se)':>6} {'seconds':>8}")
    for method in METHODS:
        r = null[method]
        anyfp = float((r[:, 0] > 0).mean())
        se = (anyfp * (1 - anyfp) / len(r)) ** 0.5
        print(f"{method:>18} {r[:, 1].mean():9.1f} {r[:, 0].mean():10.2f} {anyfp:7.3f} {se:6.3f} {r[:, 2].mean():8.3f}",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
