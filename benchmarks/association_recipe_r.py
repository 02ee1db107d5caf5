"""Cross-check ``_google_recipe.py`` against google/rappor's own R code; prints the differences.

Needs ``Rscript`` with glmnet, quadprog, jsonlite and optparse, and a copy of google/rappor
(``--rappor-repo``, its ``RAPPOR_REPO``) in which ``analysis/R/alternative.R``'s ``lsei``
(limSolve, not packaged here) is ``quadprog::solve.QP`` on the same problem, ``bin/decode_assoc.R``
loads jsonlite instead of RJSONIO, and ``ComputeDistributionEM`` writes each marginal decode
to ``$MARGINAL_OUT<j>.csv`` (three small edits; nothing else changed).  Two checks:

1. ``FitDistribution`` on one collection's unresampled estimates (deterministic in R):
   lsei alone (fewer candidates than 0.8 x the rows) and Lasso + lsei (more);
2. ``GetOtherProbs`` + ``GetCondProb`` + ``EM``: ``bin/decode_assoc.R`` itself on a
   string x boolean collection encoded by google/rappor's client rules, with
   ``--max-em-iters``; its marginal decode (random: four of its five fits add noise)
   is fed to ours, and the two joint tables are compared.

Usage::

    python benchmarks/association_recipe_r.py --rappor-repo DIR [--n 20000] [--em-iters 30] [--seed 9100]
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _google_recipe as recipe  # noqa: E402

import rappor  # noqa: E402
from rappor.analysis.association import example_joint, total_variation  # noqa: E402
from rappor.collect import google_bloom_bits_table  # noqa: E402
from rappor.formats import write_map_positions  # noqa: E402

PARAMS = rappor.Params(num_bloombits=32, num_hashes=2, num_cohorts=32, prob_p=0.25, prob_q=0.75, prob_f=0.5)

_FIT_SCRIPT = r"""
source.rappor <- function(rel_path) source(paste0(Sys.getenv("RAPPOR_REPO", ""), rel_path))
source.rappor("analysis/R/read_input.R"); source.rappor("analysis/R/decode.R"); source.rappor("analysis/R/util.R")
args <- commandArgs(TRUE)
params <- ReadParameterFile(args[1]); counts <- ReadCountsFile(args[2], params); map <- LoadMapFile(args[3], params)$map
es <- EstimateBloomCounts(params, counts)
coefs <- FitDistribution(es, map, quiet = TRUE)
write.csv(data.frame(string = names(coefs), coef = as.vector(coefs)), args[4], row.names = FALSE)
"""


def _write_collection(sim, out: Path, params: rappor.Params) -> list[str]:
    """decode_assoc.R's inputs: schema, params dir, reports (client, cohort, domain, flag), domain map."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "rappor-vars.csv").write_text("metric,var,var_type,params\nm,domain,string,m_params\nm,flag,boolean,m_params\n")
    rappor.formats.write_params(params, out / "m_params.csv")
    strings = sim.reports[0].bitstrings()
    flags = sim.reports[1].bits()[:, 0].tolist()
    with open(out / "reports.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["client", "cohort", "domain", "flag"])
        for i, (c, s, b) in enumerate(zip(sim.reports[0].cohorts.tolist(), strings, flags)):
            w.writerow([f"c{i}", c, s, b])
    cands = list(sim.variables[0].candidate_map.strings)
    write_map_positions([(cands, google_bloom_bits_table(cands, params))], params, out / "domain_map.csv")
    return cands


def _rscript(args: list[str], repo: str, env: dict | None = None) -> None:
    subprocess.run(["Rscript", *args], check=True, env={**os.environ, "RAPPOR_REPO": repo.rstrip("/") + "/", **(env or {})},
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def check_fit_distribution(repo: str, tmp: Path, seed: int) -> None:
    """Check 1: one deterministic FitDistribution, with and without the Lasso."""
    for label, params, strings in (("lsei only", PARAMS, 50),
                                   ("Lasso + lsei", rappor.Params(num_bloombits=8, num_hashes=2, num_cohorts=4,
                                                                  prob_p=0.25, prob_q=0.75, prob_f=0.5), 60)):
        joint, values, cands = example_joint("string-bool", strings)
        sim = recipe.simulate_google(params, joint, values, 20_000, candidates=cands, rng=seed)
        d = tmp / label.replace(" ", "")
        d.mkdir()
        agg = rappor.Aggregate.from_reports(sim.reports[0])
        rappor.formats.write_params(params, d / "params.csv")
        rappor.formats.write_counts(agg, d / "counts.csv")
        write_map_positions([(list(cands[0]), google_bloom_bits_table(list(cands[0]), params))], params, d / "map.csv")
        script = d / "fit.R"
        script.write_text(_FIT_SCRIPT)
        _rscript([str(script), str(d / "params.csv"), str(d / "counts.csv"), str(d / "map.csv"), str(d / "coefs.csv")],
                 repo)
        with open(d / "coefs.csv", newline="") as fh:
            theirs = {row["string"]: float(row["coef"]) for row in csv.DictReader(fh)}
        cmap = sim.variables[0].candidate_map
        counts = agg.counts
        keep = np.flatnonzero(counts[:, 0] != 0)
        k = params.num_bloombits
        x = cmap.matrix[(keep[:, None] * k + np.arange(k)).reshape(-1)].toarray()
        est, std = recipe.estimate_bloom_counts(counts, params)
        ours = recipe._fit_distribution(est[keep], std[keep], x)
        r = np.array([theirs[s] for s in cmap.strings])
        print(f"FitDistribution, {label} ({len(cmap.strings)} candidates, {x.shape[0]} rows): "
              f"max |ours - R| = {np.abs(ours - r).max():.2e}, sum R {r.sum():.4f} ours {ours.sum():.4f}, "
              f"support R {np.count_nonzero(r > 1e-9)} ours {np.count_nonzero(ours > 1e-9)} "
              f"(both {np.count_nonzero((r > 1e-9) & (ours > 1e-9))})")


def check_decode_assoc(repo: str, tmp: Path, n: int, em_iters: int, seed: int) -> None:
    """Check 2: bin/decode_assoc.R itself, its marginal fed to ours."""
    joint, values, cands = example_joint("string-bool", 50)
    sim = recipe.simulate_google(PARAMS, joint, values, n, candidates=cands, rng=seed)
    d = tmp / "assoc"
    cand_list = _write_collection(sim, d, PARAMS)
    _rscript([f"{repo}/bin/decode_assoc.R", "--metric-name", "m", "--schema", str(d / "rappor-vars.csv"),
              "--reports", str(d / "reports.csv"), "--params-dir", str(d), "--var1", "domain", "--var2", "flag",
              "--map1", str(d / "domain_map.csv"), "--create-bool-map", "--max-em-iters", str(em_iters),
              "--output-dir", str(d)], repo, env={"MARGINAL_OUT": str(d / "marginal")})
    with open(d / "marginal2.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    index = {s: i for i, s in enumerate(cand_list)}
    columns = np.array([index[r["string"]] for r in rows])
    proportion = np.array([float(r["proportion"]) for r in rows])
    fit = recipe.full_recipe(sim.reports, sim.variables, rng=np.random.default_rng(0), max_em_iters=em_iters,
                             marginals=[(columns, proportion), None])
    theirs = {}
    with open(d / "assoc-results.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            theirs[(row["domain"], row["flag"])] = float(row["proportion"])
    ours = {(s, b): fit.table[i, j] for i, s in enumerate(fit.categories[0]) for j, b in enumerate(fit.categories[1])}
    diff = max(abs(ours[key] - theirs[key]) for key in theirs)
    print(f"decode_assoc.R ({n:,} clients, {len(rows)} strings + Other x boolean, {em_iters} EM steps) against "
          f"ours given its marginal: {len(theirs)} cells each, max |difference| = {diff:.2e}, "
          f"TV to the truth R {total_variation(np.array([[theirs[(s, b)] for b in fit.categories[1]] for s in fit.categories[0]]), sim.truth(fit.categories)):.4f} "
          f"ours {total_variation(fit.table, sim.truth(fit.categories)):.4f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rappor-repo", required=True)
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--em-iters", type=int, default=30)
    parser.add_argument("--seed", type=int, default=9100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        check_fit_distribution(args.rappor_repo, Path(tmp), args.seed)
        check_decode_assoc(args.rappor_repo, Path(tmp), args.n, args.em_iters, args.seed)


if __name__ == "__main__":
    main()
