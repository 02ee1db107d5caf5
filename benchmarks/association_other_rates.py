"""Association with repeated reports and outside strings: what limits the small cells? Other's rates, by oracle.

At a million clients x 10 reports with strings outside the candidates (``sb100-1m-low-out`` of
:mod:`association_recipe`, f=0.5), the smallest cells' 95% intervals covered 19 of 24 in session 21.
This script decodes each collection several ways, every one the default decoder except for how
Other's per-client likelihood is built, and prints TV and coverage per band of true share:

``main``
    the default: Other's outside-string Bloom-bit rates estimated from the counts no candidate
    explains, shrunk towards a random string's (James-Stein), cross-fitted over two folds of clients;
``mixture``
    oracle: Other's likelihood is the exact mixture of its true strings (the left-out candidates and
    the outside strings at their realized shares, their true Bloom filters) -- no product of bits;
``product``
    oracle: the same true composition as a product of per-bit rates (the model's form, true rates);
``outside-true``
    oracle: only the outside strings' rates are the truth; the left-out candidates' shares and
    Other's mass are the default's;
``unshrunk``
    the counts' debiased residual rates, clipped to [0, 1], not shrunk (their binomial noise, times
    the design effect, and the share errors' directions carried into the covariance as the default does);
``npmle``
    the same residual rates shrunk by an empirical-Bayes prior over [0, 1] (Kiefer-Wolfowitz NPMLE on
    201 points, posterior mean; noise by Tweedie's slope), for the sparse bumps heavy outside strings make;
``em``
    the outside rates estimated from the *clients* of the other fold: a mixture over every candidate
    and an Other of free per-bit PRR rates, fitted by EM to the clients' reports (30 steps from the
    marginal shares and the default's rates; their noise binomial in Other's clients, with the share
    errors' directions of the count-based rates); ``em-fixed`` the same with the mixture's weights held at
    the marginal decode's shares (Other = the rest), only Other's rates fitted.

The variants replace Other's parts through :func:`rappor.testing.association_other`: a diagnostic, not
a method.

Usage::

    python benchmarks/association_other_rates.py --modes main,mixture,product --seeds 9300-9305 [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from contextlib import AbstractContextManager
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _google_recipe as recipe  # noqa: E402
from association_recipe import BANDS, CLASSES, PRIVACY, _ours, _scenario  # noqa: E402

from rappor.testing import (ClientSums, OutsideNoise, association_other, client_bit_sums, client_folds,  # noqa: E402
                            client_log_factor, client_log_terms, client_runs, other_prr_rates, outside_residual,
                            report_folds, share_directions)

MODES = ("main", "mixture", "product", "outside-true", "unshrunk", "npmle", "em", "em-fixed")


def _npmle_posterior(x: np.ndarray, v: np.ndarray, grid: np.ndarray, steps: int = 500) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mean and variance of each ``x ~ N(theta, v)`` under the NPMLE prior of theta on ``grid``."""
    like = np.exp(-(x[:, None] - grid[None, :]) ** 2 / (2 * v[:, None]))
    prior = np.full(grid.size, 1.0 / grid.size)
    for _ in range(steps):
        post = like * prior
        post /= post.sum(axis=1, keepdims=True)
        prior = post.mean(axis=0)
    post = like * prior
    post /= post.sum(axis=1, keepdims=True)
    mean = post @ grid
    return mean, post @ grid ** 2 - mean ** 2


class _ClientEM:
    """The outside rates from the other fold's clients: EM over candidates + an Other of free per-bit PRR rates."""

    def __init__(self, sim, params) -> None:
        self.params = params
        codes = np.unique(sim.report_clients, return_inverse=True)[1].reshape(-1).astype(np.int64)
        report_fold = report_folds(sim.reports[0].cohorts, clients=codes)
        self.sums = client_bit_sums(sim.reports[0], codes)
        self.fold = client_folds(report_fold, client_runs(codes))
        k = params.num_bloombits
        self.zero = client_log_terms(params, self.sums, np.full((1, k), params.prob_f / 2))
        cmap = sim.variables[0].candidate_map  # every candidate's log-likelihood of each client's reports
        self.cand = client_log_factor(params, cmap, np.arange(len(cmap), dtype=np.intp), None, self.sums, None)
        self.calls = 0

    def rates(self, start: np.ndarray, shares, steps: int = 30, fixed: bool = False) -> tuple[np.ndarray, np.ndarray]:
        params, fold = self.params, self.calls  # the decoder asks for fold 0's rates, then fold 1's
        self.calls += 1
        assert fold <= int(self.fold.max()), "more calls than folds: the decoder's order of calls changed"
        m, k = params.num_cohorts, params.num_bloombits
        half = params.prob_f / 2
        keep = self.fold != fold
        sums = ClientSums(self.sums.cohorts[keep], self.sums.reports[keep], self.sums.ones[keep])
        cand, zero, coh = self.cand[keep], self.zero[keep], sums.cohorts
        sh = np.clip(np.nan_to_num(np.asarray(shares, dtype=float)), 1e-4, None)
        weights = np.append(sh, max(1.0 - sh.sum(), 0.01))
        weights /= weights.sum()
        prr = half + (1 - 2 * half) * start
        high = client_log_terms(params, sums, np.ones((1, k)))
        den = np.ones(m)
        for _ in range(steps):
            prr = np.clip(prr, 1e-6, 1 - 1e-6)
            terms = client_log_terms(params, sums, prr, coh)
            logs = np.concatenate([cand, (terms - zero).sum(axis=1)[:, None]], axis=1) + np.log(weights)[None, :]
            resp = np.exp(logs - logs.max(axis=1, keepdims=True))
            resp /= resp.sum(axis=1, keepdims=True)
            if not fixed:  # with ``fixed`` the weights stay the marginal decode's: Other cannot take candidates' clients
                weights = resp.mean(axis=0)
            other = resp[:, -1]
            num = np.zeros((m, k))
            np.add.at(num, coh, other[:, None] * prr[coh] * np.exp(high - terms))  # E[PRR bit | reports, Other]
            den = np.bincount(coh, weights=other, minlength=m)
            prr = num / np.maximum(den, 1e-12)[:, None]
        bloom = np.clip((prr - half) / (1 - 2 * half), 0.0, 1.0)
        return bloom, prr * (1 - prr) / np.maximum(den, 1.0)[:, None] / (1 - 2 * half) ** 2


def _install(mode: str, sim, params, values, cands) -> AbstractContextManager[None]:
    """The decoder's Other for ``mode``, as a context."""
    all_values, candidates = list(values[0]), list(cands[0])
    full_map = recipe.hash_candidates_google(all_values, params)
    full = full_map.matrix.tocsr()
    realized = np.bincount(sim.held[:, 0], minlength=len(all_values)).astype(float)
    cand_index = np.array([all_values.index(c) for c in candidates])
    m, k = params.num_cohorts, params.num_bloombits
    outside = np.ones(len(all_values), dtype=bool)
    outside[cand_index] = False
    out_rates = np.asarray(full @ (realized * outside / (realized * outside).sum())).reshape(m, k)
    def true_other(log_factor, params_, cmap, columns, other, sums, fold):  # noqa: ANN001, ANN202
        out = log_factor(params_, cmap, columns, other, sums, fold)
        if other is None or params_.num_bloombits == 1:
            return out
        in_other = np.ones(len(all_values), dtype=bool)
        in_other[cand_index[np.asarray(columns)]] = False
        weights = realized * in_other / (realized * in_other).sum()
        if mode == "product":
            zero = client_log_terms(params_, sums, np.full((1, k), params_.prob_f / 2))
            rates = params_.p01 + (params_.p11 - params_.p01) * np.asarray(full @ weights).reshape(m, k)
            prr, _ = other_prr_rates(params_, rates)
            out[:, -1] = (client_log_terms(params_, sums, prr, sums.cohorts) - zero).sum(axis=1)
            return out
        each = log_factor(params_, full_map, np.arange(len(all_values), dtype=np.intp), None, sums, fold)
        held = weights > 0
        logs = each[:, held] + np.log(weights[held])[None, :]
        top = logs.max(axis=1)
        out[:, -1] = top + np.log(np.exp(logs - top[:, None]).sum(axis=1))
        return out

    em = _ClientEM(sim, params) if mode in ("em", "em-fixed") else None

    def rates(outside_bit_rates, aggregate, cmap, shares, share_se, effect):  # noqa: ANN001, ANN202
        if mode == "outside-true":
            return out_rates.copy(), None
        residual = outside_residual(aggregate, cmap, shares, effect)
        if residual is None:  # nothing left outside the candidates: the default's random-string rates
            return outside_bit_rates(aggregate, cmap, shares, share_se, effect)
        rate, var, mass = residual.rate, residual.variance, residual.outside
        inside = residual.present[:, None] & np.ones_like(rate, dtype=bool)  # cohorts with an estimate
        if mode == "unshrunk":
            slope = inside.astype(float)
            est = np.clip(rate, 0.0, 1.0)
        elif mode == "npmle":
            mean, post_var = _npmle_posterior(rate[inside], var[inside], np.linspace(0.0, 1.0, 201))
            slope, est = np.zeros_like(rate), rate.copy()
            slope[inside], est[inside] = post_var / var[inside], mean
        else:  # em
            assert em is not None
            start, _ = outside_bit_rates(aggregate, cmap, shares, share_se, effect)
            est, em_var = em.rates(start, shares, fixed=mode == "em-fixed")
            # The share errors' directions as the count-based rates carry them (slope 1), with the EM's rates.
            return est, OutsideNoise(em_var.reshape(-1), share_directions(cmap, inside.astype(float), est, mass, share_se))
        return est, OutsideNoise((slope ** 2 * var).reshape(-1), share_directions(cmap, slope, rate, mass, share_se))

    if mode in ("mixture", "product"):
        return association_other(client_log_factor=true_other)
    return association_other(outside_rates=None if mode == "main" else rates)


def _summary(rows: list[dict[str, Any]], modes: list[str]) -> None:
    main = {r["seed"]: r["tv"] for r in rows if r["mode"] == "main"}
    print("mode           seeds  TV      paired vs main (SE)  coverage by band of true share [cells]  pooled")
    for mode in modes:
        sel = [r for r in rows if r["mode"] == mode]
        if not sel:
            continue
        tv = np.array([r["tv"] for r in sel])
        diff = np.array([r["tv"] - main[r["seed"]] for r in sel if r["seed"] in main])
        se = diff.std(ddof=1) / np.sqrt(diff.size) if diff.size > 1 else float("nan")
        truth = np.concatenate([r["cell_truth"] for r in sel])
        covered = np.concatenate([r["cell_covered"] for r in sel]).astype(float)
        bands = "  ".join(f"{covered[(truth >= lo) & (truth < hi)].mean():.3f} [{int(((truth >= lo) & (truth < hi)).sum())}]"
                          for lo, hi in BANDS)
        print(f"{mode:<14}{len(sel):>6}  {tv.mean():.4f}  {diff.mean() if diff.size else float('nan'):+.4f} ({se:.4f})     "
              f"{bands}  {covered.mean():.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--class", dest="name", default="sb100-1m-low-out", help="a string x boolean class of association_recipe")
    parser.add_argument("--modes", default="main,mixture,product", help=f"comma-separated, of: {', '.join(MODES)}")
    parser.add_argument("--seeds", default="9300-9305", help="first-last")
    parser.add_argument("--reports-per-client", type=int, default=10)
    parser.add_argument("--json", default=None, help="append every run (with per-cell coverage) to this file")
    parser.add_argument("--summarize", nargs="+", default=None, metavar="FILE")
    args = parser.parse_args()
    modes = args.modes.split(",")
    if args.summarize:
        rows = [json.loads(line) for path in args.summarize for line in open(path)]
        _summary(rows, [m for m in MODES if any(r["mode"] == m for r in rows)])
        return
    case = CLASSES[args.name]
    assert case.kind == "sb", "string x boolean classes only"
    joint, values, cands = _scenario(case)
    params = PRIVACY[case.privacy]
    first, last = (int(s) for s in args.seeds.split("-"))
    rows = []
    for seed in range(first, last + 1):
        sim = recipe.simulate_google(params, joint, values, case.n, candidates=cands, rng=seed,
                                     reports_per_client=args.reports_per_client)
        for mode in modes:
            with _install(mode, sim, params, values, cands), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                row = {"mode": mode, "seed": seed, "class": args.name, **_ours(sim)}
            rows.append(row)
            print(json.dumps({f: v for f, v in row.items() if not f.startswith("cell_")}), file=sys.stderr, flush=True)
            if args.json:
                with open(args.json, "a") as fh:
                    fh.write(json.dumps(row) + "\n")
    _summary(rows, modes)


if __name__ == "__main__":
    main()
