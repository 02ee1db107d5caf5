"""Choose between the decode's two share products by cross-validation over cohort folds (a measurement).

A decode gives two distributions: every candidate's empirical-Bayes share (the default
``proportion``) and the detected strings' least-squares shares (``--shares detected``).  Cohorts
hold disjoint reports, so the collection splits into ``K`` folds of whole cohorts: each product is
fitted on ``K - 1`` folds (a full decode of the counts with the held-out cohorts emptied) and scored
on the held-out cohorts' debiased bit shares, by the decode's own noise model: the weighted residual
``sum (y - x' p - (1 - sum p) hbar / k)^2 / var(y)`` (the mass the product leaves is spread evenly,
as a string outside the list spreads it).  The rule picks the product with the lower summed loss
(``pick``), or the convex blend ``lambda p_eb + (1 - lambda) p_det`` whose loss is least (``blend``;
the loss is quadratic in ``lambda``), or that blend with its step from the shares shrunk by its noise
(``js``: :func:`shrunk_weight`).  Printed per class: mean TV of both products and of the three rules
over the seeds, the paired difference of each to the default in standard errors, how often ``pick``
chose the shares, the mean ``lambda``, the oracle pick (the product with the lower TV on each
collection) and the CPU cost of the folds over that of the decode.  Measured in
``docs/notes/decoder-rounds.md`` ("Issue 23, session 4"); not part of the decoder.

Usage::

    python benchmarks/cv_products.py --first-seed 100 --seeds 8 --classes flat-missing,f75-flat [--folds 5]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import rappor  # noqa: E402
from _classes import CLASSES, SLOW_CLASSES, Collection, collection  # noqa: E402
from rappor.testing import debias  # noqa: E402


def products(decoder: rappor.Decoder, aggregate: rappor.Aggregate,
             cmap: rappor.CandidateMap) -> tuple[np.ndarray, np.ndarray, float]:
    """(every candidate's share, the detected strings' least-squares shares, dispersion) of one decode."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = decoder.decode(aggregate, cmap)
    eb = np.nan_to_num(np.asarray(res.proportion, dtype=np.float64))
    rows = np.zeros(len(eb), dtype=bool)
    rows[res.ranking()] = True
    eb = np.where(rows, np.maximum(eb, 0.0), 0.0)
    ls = np.nan_to_num(np.asarray(res.fitted_proportion, dtype=np.float64))
    det = np.where(np.asarray(res.detected, dtype=bool), np.maximum(ls, 0.0), 0.0)
    return eb, det, float(res.diagnostics.dispersion)


def cohort_folds(m: int, k: int) -> list[np.ndarray]:
    """Cohorts split into ``k`` folds by a fixed permutation (seed 0)."""
    perm = np.random.default_rng(0).permutation(m)
    return [np.sort(perm[i::k]) for i in range(k)]


def cv_losses(decoder: rappor.Decoder, col: Collection, folds: int) -> tuple[np.ndarray, float]:
    """Per fold, the held-out weighted residual's pieces: returns (Q, n) where the loss of the blend
    ``lambda`` is ``Q[0] - 2 lambda Q[1] + lambda^2 Q[2]`` summed over folds (quadratic in lambda).

    ``Q[0]`` the detected product's loss, ``Q[1]`` the cross term, ``Q[2]`` the squared difference.
    """
    params = col.aggregate.params
    k = params.num_bloombits
    hbar_k = 1.0 - (1.0 - 1.0 / k) ** params.num_hashes
    counts = np.asarray(col.aggregate.counts)
    full = debias(counts, params.p11, params.p01)
    matrix = col.candidate_map.matrix
    q = np.zeros(3)
    for held in cohort_folds(params.num_cohorts, folds):
        train = counts.copy()
        train[held] = 0
        eb, det, _ = products(decoder, rappor.Aggregate(params=params, counts=train), col.candidate_map)
        keep = np.isin(full.rows // k, held)
        rows = full.rows[keep]
        x = matrix[rows]
        w = 1.0 / full.var[keep]
        pred_det = x @ det + (1.0 - det.sum()) * hbar_k
        pred_eb = x @ eb + (1.0 - eb.sum()) * hbar_k
        r = full.y[keep] - pred_det
        d = pred_eb - pred_det
        q += np.array([np.sum(w * r * r), np.sum(w * r * d), np.sum(w * d * d)])
    return q, float(np.sum(1.0 / full.var))


def shrunk_weight(q: np.ndarray, phi: float) -> float:
    """The blend's weight of the shares, its step from 1 shrunk by its noise (positive-part James-Stein).

    ``lambda_hat = Q1 / Q2`` is the least-squares coefficient of the held-out residual on the
    products' difference, with variance ``phi / Q2``; with ``z^2 = (1 - lambda_hat)^2 Q2 / phi``
    the step ``1 - lambda_hat`` is scaled by ``max(0, 1 - 1 / z^2)``: no blend below one SE.
    """
    if not q[2] > 0:
        return 1.0
    lam = float(np.clip(q[1] / q[2], 0.0, 1.0))
    z2 = (1.0 - lam) ** 2 * q[2] / max(phi, 1.0)
    return 1.0 - (1.0 - lam) * max(0.0, 1.0 - 1.0 / z2) if z2 > 0 else 1.0


def tv(col: Collection, shares: np.ndarray) -> float:
    m = rappor.analysis.evaluate(col.truth, col.candidate_map.strings, shares,
                                 detected=np.ones(len(shares), dtype=bool))
    return float(m.total_variation)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--first-seed", type=int, default=100)
    parser.add_argument("--classes", required=True)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    by_name = {c.name: c for c in CLASSES + SLOW_CLASSES}
    decoder = rappor.Decoder()
    out: dict[str, list[dict[str, float]]] = {}
    for name in args.classes.split(","):
        recs = []
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            col = collection(by_name[name], seed)
            t0 = time.process_time()
            eb, det, phi = products(decoder, col.aggregate, col.candidate_map)
            t1 = time.process_time()
            q, _ = cv_losses(decoder, col, args.folds)
            t2 = time.process_time()
            lam = float(np.clip(q[1] / q[2], 0.0, 1.0)) if q[2] > 0 else 1.0
            loss_eb = q[0] - 2 * q[1] + q[2]
            rec = {"seed": seed, "tv_eb": tv(col, eb), "tv_det": tv(col, det),
                   "tv_blend": tv(col, lam * eb + (1 - lam) * det), "lam": lam,
                   "cv_eb_minus_det": float(loss_eb - q[0]), "q": q.tolist(), "phi": phi, "cpu_decode": t1 - t0, "cpu_cv": t2 - t1}
            rec["tv_pick"] = rec["tv_eb"] if loss_eb <= q[0] else rec["tv_det"]
            lam_js = shrunk_weight(q, phi)
            rec["lam_js"] = lam_js
            rec["tv_js"] = tv(col, lam_js * eb + (1 - lam_js) * det)
            recs.append(rec)
            print(json.dumps(rec), flush=True)
        out[name] = recs
        summarize(name, recs)
    if args.json:
        Path(args.json).write_text(json.dumps(out))
    return 0


def summarize(name: str, recs: list[dict[str, float]]) -> None:
    eb = np.array([r["tv_eb"] for r in recs])
    line = [f"{name:16s} n={len(recs)} eb {eb.mean():.4f}"]
    for key in ("tv_det", "tv_pick", "tv_blend", "tv_js"):
        v = np.array([r[key] for r in recs])
        d = v - eb
        se = d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else float("nan")
        line.append(f"{key[3:]} {v.mean():.4f} ({d.mean():+.4f}, {d.mean() / se if se > 0 else 0.0:+.1f} SE)")
    oracle = np.minimum(eb, np.array([r["tv_det"] for r in recs]))
    picks = np.mean([r["cv_eb_minus_det"] <= 0 for r in recs])
    lam = np.mean([r["lam"] for r in recs])
    cpu = np.mean([r["cpu_cv"] / max(r["cpu_decode"], 1e-9) for r in recs])
    line.append(f"oracle {oracle.mean():.4f} picks-eb {picks:.2f} mean-lambda {lam:.2f} cv-cost x{cpu:.1f}")
    print(" | ".join(line), flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
