"""Discovery over seeds: our search against PEM, top-10/top-50 precision and recall, final TV.

Population: 20,000 realistic strings of 5-30 bytes (``realistic_population``), Zipf(1.1),
ranks at random.  Full-string and discovery reports both use h = 1 and
``f = 2 / (1 + exp(eps / 2))`` (``epsilon_inf = eps``), p = 0, q = 1; full-string k = 128,
m = 64; discovery k = 256, 32 cohorts per slot, 2-byte segments over all 256 bytes,
max_length 30 (15 slots).  Clients split: a share ``--share`` sends a discovery report
instead of its full-string one, so every client's epsilon_inf is ``eps``.

The analyst's list ("known") is the population minus every other string of the true
top 100 (a stale dictionary); the final distribution decodes the full-string reports
against the known list alone, against known + our discoveries, and against known + PEM's.

Run:  python benchmarks/discovery.py --clients 1000000 --eps 4 --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

from rappor import Params
from rappor.decoder import Decoder
from rappor.design import hash_candidates
from rappor.discovery import DiscoverySpec, discover, realistic_population, simulate_discovery
from rappor.discovery.evaluate import topk_scores
from rappor.discovery.pem import pem_discover, pem_population
from rappor.metrics import evaluate_result


def _params(eps: float, k: int, m: int) -> Params:
    return Params(num_bloombits=k, num_hashes=1, num_cohorts=m, prob_p=0.0, prob_q=1.0,
                  prob_f=2.0 / (1.0 + math.exp(eps / 2.0)))


def _final(sim, candidates: list[str]) -> dict[str, float]:
    cands = list(dict.fromkeys(candidates))
    res = Decoder().decode(sim.full, hash_candidates(cands, sim.params))
    met = evaluate_result(res, sim.full_truth)
    det = np.flatnonzero(res.detected)
    scores = topk_scores(sim.full_truth, [res.strings[i] for i in det], res.proportion[det])
    return {"tv": met.total_variation, "unexplained_mass": met.unexplained_mass,
            "unexplained_true": met.true_unexplained_mass, **{f"decoded_{k}": v for k, v in scores.items()}}


def run_one(n: int, eps: float, seed: int, share: float, pem: bool) -> dict[str, float]:
    full_p = _params(eps, 128, 64)
    spec = DiscoverySpec(params=_params(eps, 256, 32), max_length=30, segment=2)
    pop = realistic_population(20_000, exponent=1.1, rng=seed)
    ranked = list(pop.strings)
    known = [s for i, s in enumerate(ranked) if not (i < 100 and i % 2 == 1)]
    out: dict[str, float] = {"clients": n, "eps": eps, "seed": seed, "share": share}
    t0 = time.perf_counter()
    sim = simulate_discovery(full_p, spec, pop, n, discovery_share=share, rng=seed)
    out["simulate_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = discover(sim.discovery, spec)
    out["discover_s"] = time.perf_counter() - t0
    found = res.candidates()
    sig = res.significant
    for key, v in topk_scores(sim.truth, [s for s, k in zip(res.strings, sig) if k], res.proportion[sig]).items():
        out[f"ours_{key}"] = v
    for key, v in _final(sim, known).items():
        out[f"known_{key}"] = v
    for key, v in _final(sim, known + found).items():
        out[f"ours+known_{key}"] = v
    for key, v in _final(sim, found).items():
        out[f"ours_only_{key}"] = v
    # The strings neither in the list nor discovered: the mass discovery could not reach.
    reach = set(known) | set(found)
    total = sum(sim.full_truth.values())
    out["ours+known_missing_true"] = sum(c for s, c in sim.full_truth.items() if s not in reach) / total
    reach = set(found)
    out["ours_only_missing_true"] = sum(c for s, c in sim.full_truth.items() if s not in reach) / total
    if pem:
        ppop = pem_population(pop, 30)
        psim = simulate_discovery(full_p, spec, ppop, n, discovery_share=share, rng=seed)
        t0 = time.perf_counter()
        pres = pem_discover(psim.discovery, spec, top_k=50)
        out["pem_s"] = time.perf_counter() - t0
        pfound = pres.candidates()
        # Every PEM output counts (junk byte strings that are not UTF-8 are false strings).
        for key, v in topk_scores(sim.truth, list(pres.strings), pres.proportion).items():
            out[f"pem_{key}"] = v
        for key, v in _final(sim, known + pfound).items():
            out[f"pem+known_{key}"] = v
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, nargs="+", default=[1_000_000])
    ap.add_argument("--eps", type=float, nargs="+", default=[4.0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--share", type=float, nargs="+", default=[0.5])
    ap.add_argument("--no-pem", action="store_true")
    ap.add_argument("--json", metavar="PATH", help="append one JSON line per run")
    args = ap.parse_args()
    for n in args.clients:
        for eps in args.eps:
            for share in args.share:
                for seed in args.seeds:
                    row = run_one(n, eps, seed, share, not args.no_pem)
                    print(json.dumps({k: (round(v, 5) if isinstance(v, float) else v) for k, v in row.items()}),
                          flush=True)
                    if args.json:
                        with open(args.json, "a", encoding="utf-8") as fh:
                            fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
