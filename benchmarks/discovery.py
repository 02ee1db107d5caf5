"""Discovery over seeds: our search against PEM, top-10/top-50 precision and recall, final TV, time and memory.

Population: 20,000 realistic strings of 5-30 bytes (``realistic_population``), Zipf(1.1),
ranks at random (top-1 share 14.6%, 10th 1.2%, 50th 0.2%).  Full-string reports: k = 128,
h = 1, m = 64; discovery reports: k = 256, h = 1, 32 cohorts per slot, 2-byte segments over
all 256 bytes, max_length 30 (15 prefix slots and the confirmation slot); p = 0, q = 1 and
``f = 2 / (1 + exp(eps / 2))`` for both, so ``epsilon_inf = epsilon_one = eps``.

``--split clients`` (default): a share ``--share`` of the clients sends a discovery report
instead of its full-string one, so every client's epsilon_inf is ``eps``.
``--split budget``: every client sends both, with ``eps * (1 - fraction)`` and
``eps * fraction`` (``--fraction``), so every client's epsilon_inf is ``eps`` too.

Candidate lists for the final decode of the full-string reports:

* ``stale``: the population minus every other string of the true top 100 (a stale
  dictionary of 19,950 strings: the decoder screens them, and its unexplained mass then
  reads "not explained by the detected strings");
* ``short``: the true top 500 minus every other of the top 100 (450 strings, fewer than
  0.8 x rows: no screening, so the unexplained mass is the mass outside the list).

Each is decoded alone, with our discoveries added, and (stale only) with PEM's.  Reported
per list: TV, decoded top-10/50 recall and precision and false strings, the decoder's
unexplained mass, what it estimates (``stale``: 1 - true mass of the detected strings;
``short``: the true mass outside the list) and the true mass outside list + discoveries
(the strings too rare to discover).

``--population``: ``realistic`` (above), or long values (``long_population``: word- and
domain-like strings of 6-15 bytes, lengths as English words of 6+ letters): ``long-rare``,
20,000 strings, Zipf(0.6), top 10 at 0.77% .. 0.19% each (the issue's 10 M target: recall@10
>= 0.9, at most one false string); ``long-common``, 2,000 strings, Zipf(0.85), top 10 at 6.8%
.. 0.96% (the 1 M target).  ``--slot-weights`` and ``--max-length`` set the discovery layout
(default: every slot the same weight, not what the planner recommends; ``rappor plan
--discovery-lengths 6-15`` gives the weights for these, ``12,20,18,17,14,12,9,7,1,1,1,2,3,3,4,4``
at 10 M, which every long-rare figure in docs/benchmarks.md passes); ``--no-final`` skips the
final full-string decodes (at 10 M they take most of a run).  ``--weighting finding`` runs the
confirmation's weighted Bonferroni (``discover(weighting="finding")``) and writes the same run's
figures at the uniform cut too (``uniform_*``): a paired comparison from one search.  ``--prior-values stale``
gives the search's byte prior the stale candidate list's bytes before slot 0 (``discover(prior_values=...)``, what
``rappor decode --discover`` does with its candidates); ``other``, the values of another population of the same
kind (seed + 100,000: none of this population's values).  Seed 100 was used to design changes; report seeds 0-9.

Every run is a fresh process (one at a time), so ``peak_mb`` is that run's peak memory.

``--method reports`` encodes every client's reports (OS-independent seeded IRR) and sums
them, so ``simulate_s`` and ``simulate_peak_mb`` are a real collection's time and memory.

Run:  python benchmarks/discovery.py --clients 1000000 --eps 4 --seeds 0 1 2 --json runs.jsonl
      python benchmarks/discovery.py --from-json runs.jsonl    (the tables of docs/discovery.md)
      python benchmarks/discovery.py --clients 1000000 --eps 4 --seeds 0 1 2 --share 0.5 0.65 0.75 0.85 --no-pem
"""

from __future__ import annotations

import argparse
import inspect
import concurrent.futures
import json
import math
import multiprocessing
import resource
import time
from typing import Any

import numpy as np

from rappor import Params
from rappor.analysis.decoder import Decoder
from rappor.collect import hash_candidates
from rappor.analysis.discovery import DiscoverySpec, discover, realistic_population, simulate_discovery
from rappor.analysis.discovery import topk_scores
from rappor.analysis.discovery import long_population, pem_discover, pem_population
from rappor.analysis import evaluate_result

#: discover's default weight of the uniform prior in its learnt byte prior (1: every tail alike).
DEFAULT_PRIOR_MIX = float(inspect.signature(discover).parameters["prior_mix"].default)
#: discover's default rescue budget (provisional prefixes; 0: none, as before them).
DEFAULT_RESCUE = float(inspect.signature(discover).parameters["rescue"].default)
DEFAULT_HOLD = float(inspect.signature(discover).parameters["hold"].default)


def _params(eps: float, k: int, m: int) -> Params:
    return Params(num_bloombits=k, num_hashes=1, num_cohorts=m, prob_p=0.0, prob_q=1.0,
                  prob_f=2.0 / (1.0 + math.exp(eps / 2.0)))


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _final(sim: Any, candidates: list[str], screened_target: bool) -> dict[str, float]:
    cands = list(dict.fromkeys(candidates))
    t0 = time.perf_counter()
    res = Decoder().decode(sim.full, hash_candidates(cands, sim.params))
    seconds = time.perf_counter() - t0
    truth = sim.full_truth
    total = sum(truth.values())
    met = evaluate_result(res, truth)
    det = np.flatnonzero(res.detected)
    detected = [res.strings[i] for i in det]
    scores = topk_scores(truth, detected, res.proportion[det])
    outside = sum(c for s, c in truth.items() if s not in set(cands)) / total
    target = 1.0 - sum(truth.get(s, 0) for s in detected) / total if screened_target else outside
    out = {"tv": met.total_variation, "unexplained_mass": met.unexplained_mass,
           "unexplained_se": met.unexplained_std_error, "unexplained_target": target, "outside": outside,
           "candidates": len(cands), "decode_s": seconds, **{f"decoded_{k}": v for k, v in scores.items()}}
    if screened_target:
        out.update(_two_columns(sim, cands, det, truth, total))
    return out


def _two_columns(sim: Any, cands: list[str], det: np.ndarray, truth: dict[str, int], total: int) -> dict[str, float]:
    """A decoder change, prototyped: after screening, split the unexplained mass in two.

    Least squares of the debiased shares on the detected candidates' columns, the evenly
    spread column (mass outside the list) and the *mean column of the undetected
    candidates* (their mass), all free; rows weighted by sqrt(reports of the cohort).
    """
    params = sim.params
    matrix = hash_candidates(cands, params).matrix.tocsc()
    undetected = np.setdiff1d(np.arange(len(cands)), det)
    n = sim.full.n_reports.astype(np.float64)
    k = params.num_bloombits
    t = (sim.full.bit_counts - params.p01 * n[:, None]) / (params.p11 - params.p01)
    b = (t / np.maximum(n, 1.0)[:, None]).reshape(-1)
    w = np.repeat(np.sqrt(n), k)
    a = np.column_stack([matrix[:, det].toarray(), np.full(matrix.shape[0], 1.0 / k),
                         np.asarray(matrix[:, undetected].mean(axis=1)).ravel()]) * w[:, None]
    coef, *_ = np.linalg.lstsq(a, b * w, rcond=None)
    resid = b * w - a @ coef
    cov = float(resid @ resid) / (a.shape[0] - a.shape[1]) * np.linalg.pinv(a.T @ a)
    return {"split_outside": float(coef[-2]), "split_outside_se": float(math.sqrt(cov[-2, -2])),
            "split_undetected": float(coef[-1]), "split_undetected_se": float(math.sqrt(cov[-1, -1])),
            "true_undetected": sum(truth.get(cands[i], 0) for i in undetected) / total}


#: The populations of ``--population``: name -> (function of the seed).
POPULATIONS = {
    "realistic": lambda seed: realistic_population(20_000, exponent=1.1, rng=seed),
    "long-rare": lambda seed: long_population(20_000, exponent=0.6, rng=seed),
    "long-common": lambda seed: long_population(2_000, exponent=0.85, rng=seed),
}


def run_one(n: int, eps: float, seed: int, share: float, split: str, fraction: float, pem: bool,
            beam: int, method: str = "aggregate", alphabet: str = "bytes", chunk: int = 1 << 17,
            trace: bool = False, population: str = "realistic", max_length: int = 30,
            slot_weights: tuple[int, ...] | None = None, final: bool = True,
            prior_mix: float = DEFAULT_PRIOR_MIX, rescue: float = DEFAULT_RESCUE,
            max_false: int = 0, weighting: str = "uniform", rescue_split: str = "even",
            prior_values: str = "none", hold: float = DEFAULT_HOLD) -> dict[str, Any]:
    """One collection: simulate, discover, decode (and PEM); returns the figures."""
    if split == "clients":
        full_p, disc_p = _params(eps, 128, 64), _params(eps, 256, 32)
    else:
        full_p, disc_p = _params(eps * (1.0 - fraction), 128, 64), _params(eps * fraction, 256, 32)
    spec = DiscoverySpec(params=disc_p, max_length=max_length, segment=2, alphabet=alphabet, slot_weights=slot_weights)
    pop = POPULATIONS[population](seed)
    ranked = list(pop.strings)
    stale = [s for i, s in enumerate(ranked) if not (i < 100 and i % 2 == 1)]
    short = stale[:450]
    out: dict[str, Any] = {"clients": n, "eps": eps, "seed": seed, "split": split,
                           "share": share if split == "clients" else 1.0,
                           "fraction": fraction if split == "budget" else None, "beam": beam, "method": method,
                           "alphabet": alphabet, "population": population, "max_length": max_length,
                           "slot_weights": slot_weights, "prior_mix": prior_mix, "rescue": rescue,
                           "max_false": max_false, "weighting": weighting, "rescue_split": rescue_split,
                           "prior_values": prior_values, "hold": hold}
    known = {"none": [], "stale": stale, "other": list(POPULATIONS[population](seed + 100_000).strings)}[prior_values]
    t0 = time.perf_counter()
    sim = simulate_discovery(full_p, spec, pop, n, discovery_share=share, split=split, method=method,
                             chunk_size=chunk, rng=seed)
    out["simulate_s"] = time.perf_counter() - t0
    out["simulate_peak_mb"] = _peak_mb()
    top10 = sim.top(10)
    t0 = time.perf_counter()
    t_cpu = time.process_time()
    res = discover(sim.discovery, spec, beam=beam, prior_mix=prior_mix, rescue=rescue, max_false=max_false,
                   weighting=weighting, rescue_split=rescue_split, prior_values=known, hold=hold, trace=[s.encode("utf-8") for s in top10] if trace else ())
    out["discover_s"] = time.perf_counter() - t0
    out["discover_cpu_s"] = time.process_time() - t_cpu
    out["prior_perplexity"] = [row.get("prior_perplexity") for row in res.diagnostics["slots"]]
    if trace:
        # Per slot: (trimmed z of the top-10 string's fragment after the fits, its prefix kept?)
        out["trace_top10"] = res.diagnostics["trace"]
        out["thresholds"] = {key: res.diagnostics[key] for key in ("z_extend", "z_reserve", "z_pending")}
        out["fit_levels"] = [row.get("fit_level") for row in res.diagnostics["slots"]]
    out["discover_peak_mb"] = _peak_mb()
    out["pooled"] = res.n_tested
    found = res.candidates()
    sig = res.significant
    for key, v in topk_scores(sim.truth, [s for s, k in zip(res.strings, sig) if k], res.proportion[sig]).items():
        out[f"ours_{key}"] = v
    out["ours_missed_top10"] = [s for s in top10 if s not in set(found)]
    # The false values themselves (significant, held by no client), with their p-values and the cut.
    out["ours_false_values"] = [[s, float(p), int(f)] for s, p, f, k in zip(res.strings, res.pvalue, res.first_slot, sig)
                                if k and sim.truth.get(s, 0) == 0]
    out["ours_cut"] = (res.max_false + 1) * res.significance_level / max(res.n_tested, 1)
    if weighting != "uniform":  # the same run's values at the uniform cut: a paired comparison
        sig_u = res.pvalue <= out["ours_cut"]
        for key, v in topk_scores(sim.truth, [s for s, k in zip(res.strings, sig_u) if k], res.proportion[sig_u]).items():
            out[f"uniform_{key}"] = v
        out["uniform_false_values"] = [s for s, k in zip(res.strings, sig_u) if k and sim.truth.get(s, 0) == 0]
        # Top-10 values pooled but not significant: p-value, their weighted cut, finding z, slots.
        cuts = np.broadcast_to(np.asarray(res.diagnostics.get("cutoffs", out["ours_cut"])), res.pvalue.shape)
        out["unconfirmed_top10"] = [[s, float(p), float(c), float(fz), int(f), int(n_s)] for s, p, c, fz, f, n_s, k in
                                    zip(res.strings, res.pvalue, cuts, res.found_zscore, res.first_slot, res.slots,
                                        res.significant) if s in top10 and not k]
        # How far the weights move the cut: weighted over uniform, for the top 10 and the listed absent values.
        held = np.array([s in top10 for s in res.strings], dtype=bool)
        absent = np.array([sim.truth.get(s, 0) == 0 for s in res.strings], dtype=bool)
        out["cut_ratio_top10"] = float(np.median(cuts[held])) / out["ours_cut"] if held.any() else None
        out["cut_ratio_absent"] = float(np.median(cuts[absent])) / out["ours_cut"] if absent.any() else None
    for name, cands, screened in (("stale", stale, True), ("stale+ours", stale + found, True),
                                  ("short", short, False), ("short+ours", short + found, False),
                                  ("ours", found, False)):
        if not cands or not final:
            continue
        for key, v in _final(sim, cands, screened).items():
            out[f"{name}_{key}"] = v
    if pem:
        pspec = DiscoverySpec(params=disc_p, max_length=max_length, segment=2, alphabet=alphabet, confirmation=False)
        psim = simulate_discovery(full_p, pspec, pem_population(pop, max_length), n, discovery_share=share, split=split,
                                  method=method, chunk_size=chunk, rng=seed)
        t0 = time.perf_counter()
        pres = pem_discover(psim.discovery, pspec, top_k=50)
        out["pem_s"] = time.perf_counter() - t0
        pfound = pres.candidates()
        # Every PEM output counts (junk byte strings that are not UTF-8 are false strings).
        for key, v in topk_scores(sim.truth, list(pres.strings), pres.proportion).items():
            out[f"pem_{key}"] = v
        for key, v in (_final(sim, stale + pfound, True) if final else {}).items():
            out[f"stale+pem_{key}"] = v
    out["peak_mb"] = _peak_mb()
    return out


#: Tables of ``--from-json``: (title, [(column, key), ...]).
_TABLES = [
    ("Discovery alone (significant values), against the true top 10 / 50 of the discovery reports",
     [("ours R@10", "ours_recall@10"), ("ours P@10", "ours_precision@10"), ("ours R@50", "ours_recall@50"),
      ("ours P@50", "ours_precision@50"), ("ours false", "ours_false"), ("PEM R@10", "pem_recall@10"),
      ("PEM P@10", "pem_precision@10"), ("PEM R@50", "pem_recall@50"), ("PEM false", "pem_false")]),
    ("Final distribution: full-string decode against the stale list alone, + ours, + PEM",
     [("TV stale", "stale_tv"), ("TV +ours", "stale+ours_tv"), ("TV +PEM", "stale+pem_tv"),
      ("R@10 stale", "stale_decoded_recall@10"), ("R@10 +ours", "stale+ours_decoded_recall@10"),
      ("R@10 +PEM", "stale+pem_decoded_recall@10"), ("R@50 stale", "stale_decoded_recall@50"),
      ("R@50 +ours", "stale+ours_decoded_recall@50"), ("R@50 +PEM", "stale+pem_decoded_recall@50"),
      ("false +ours", "stale+ours_decoded_false")]),
    ("Unexplained mass (decoder's estimate) against what it estimates and the mass too rare to discover",
     [("short", "short_unexplained_mass"), ("short: outside", "short_outside"),
      ("short+ours", "short+ours_unexplained_mass"), ("short+ours: outside (too rare)", "short+ours_outside"),
      ("stale", "stale_unexplained_mass"), ("stale+ours", "stale+ours_unexplained_mass"),
      ("stale+ours: 1 - detected", "stale+ours_unexplained_target"), ("stale+ours: outside", "stale+ours_outside")]),
    ("Time and memory (one process per run; shared machine)",
     [("simulate s", "simulate_s"), ("discover s", "discover_s"), ("PEM s", "pem_s"),
      ("decode stale+ours s", "stale+ours_decode_s"), ("peak MB", "peak_mb")]),
]


def _layout(key: tuple[Any, ...]) -> tuple[Any, ...]:
    """A run's key with the search's options (prior, rescue, max_false, held values) folded into its slot weights'
    label."""
    *head, weights, mix, rescue, max_false, known, hold = key
    weights += f", prior {mix:g}" if mix < 1.0 else ""
    weights += f", rescue {rescue:g}" if rescue > 0 else ""
    weights += f", max_false {max_false}" if max_false else ""
    weights += f", prior values {known}" if known != "none" else ""
    weights += f", hold {hold:g}" if hold > 0 else ""
    return (*head, weights)


def summarize(paths: list[str]) -> str:
    """Markdown tables of the JSON lines in ``paths``: mean and sample standard deviation over seeds."""
    rows: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    row = json.loads(line)
                    key = (row["clients"], row["eps"], row["split"], row["share"], row.get("fraction"),
                           row.get("method", "aggregate"), row.get("alphabet", "bytes"),
                           row.get("population", "realistic"), row.get("max_length", 30),
                           ",".join(map(str, row.get("slot_weights") or ())) or "uniform",
                           row.get("prior_mix", 1.0), row.get("rescue", 0.0), row.get("max_false", 0),
                           row.get("prior_values", "none"), float(row.get("hold", 0.0)))
                    rows.setdefault(key, []).append(row)
    out = []
    for title, cols in _TABLES:
        out.append(f"{title}\n")
        out.append("| population | N | eps | split | alphabet | max length | slot weights | seeds | "
                   + " | ".join(c for c, _ in cols) + " |")
        out.append("|" + " --- |" * (8 + len(cols)))
        for key, group in sorted(rows.items(), key=lambda kv: tuple(str(x) for x in kv[0])):
            n, eps, split, share, fraction, method, alphabet, population, max_length, weights = _layout(key)
            how = f"clients {share:g}" if split == "clients" else f"budget {fraction:g}"
            if method != "aggregate":
                how += f" ({method})"
            cells = []
            for _, k in cols:
                vals = [float(r[k]) for r in group if r.get(k) is not None]
                if not vals:
                    cells.append("")
                elif len(vals) == 1:
                    cells.append(f"{vals[0]:.3g}")
                else:
                    cells.append(f"{np.mean(vals):.3g} ± {np.std(vals, ddof=1):.2g}")
            out.append(f"| {population} | {n:,} | {eps:g} | {how} | {alphabet} | {max_length} | {weights} | "
                       f"{len(group)} | " + " | ".join(cells) + " |")
        out.append("")
    out.append("Per seed: ours recall@10 / false strings (seed: R@10/false)\n")
    for key, group in sorted(rows.items(), key=lambda kv: tuple(str(x) for x in kv[0])):
        n, eps, split, share, fraction, method, alphabet, population, max_length, weights = _layout(key)
        cells = ", ".join(f"{r['seed']}: {r['ours_recall@10']:.1f}/{int(r['ours_false'])}"
                          for r in sorted(group, key=lambda r: r["seed"]))
        out.append(f"* {population}, {n:,}, eps {eps:g}, {split}, {alphabet}, max length {max_length}, "
                   f"weights {weights}, {method}: {cells}")
    out.append("")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--clients", type=int, nargs="+", default=[1_000_000])
    ap.add_argument("--eps", type=float, nargs="+", default=[4.0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--share", type=float, nargs="+", default=[0.75])
    ap.add_argument("--split", choices=("clients", "budget"), default="clients")
    ap.add_argument("--fraction", type=float, nargs="+", default=[0.5],
                    help="with --split budget: the discovery report's share of epsilon")
    ap.add_argument("--beam", type=int, default=1000)
    ap.add_argument("--no-pem", action="store_true")
    ap.add_argument("--method", choices=("aggregate", "reports"), default="aggregate",
                    help="aggregate: counts drawn per value (fast, exact in law); reports: every client's "
                         "report encoded and summed (time and memory of a real collection)")
    ap.add_argument("--alphabet", default="bytes", help="the search's alphabet (rappor discover --alphabet)")
    ap.add_argument("--chunk", type=int, default=1 << 17,
                    help="reports encoded at once with --method reports (bounds the simulation's memory)")
    ap.add_argument("--trace", action="store_true",
                    help="record each true top-10 string's z-score per slot and whether its prefix was kept "
                         "(where a missed one was lost)")
    ap.add_argument("--population", choices=sorted(POPULATIONS), default="realistic",
                    help="realistic: Zipf(1.1) over 5-30 byte strings; long-rare / long-common: 6-15 byte values")
    ap.add_argument("--max-length", type=int, default=30, help="longest discoverable value (rappor discover)")
    ap.add_argument("--slot-weights", default=None, help="W0,W1,...: one integer per slot (default: all equal; "
                    "the planner's weights come from rappor plan --discovery-lengths)")
    ap.add_argument("--no-final", action="store_true",
                    help="skip the final full-string decodes (discovery's own figures only; at 10 M they take most "
                         "of a run)")
    ap.add_argument("--prior-mix", type=float, default=DEFAULT_PRIOR_MIX,
                    help="the search's learnt byte prior (discover's prior_mix; 1 gives every tail one level, as "
                         "before the prior)")
    ap.add_argument("--rescue", type=float, default=DEFAULT_RESCUE,
                    help="the search's provisional prefixes (discover's rescue; 0: none, as before them)")
    ap.add_argument("--max-false", type=int, default=0,
                    help="false significant values tolerated (discover's max_false: generalized Bonferroni)")
    ap.add_argument("--weighting", choices=("uniform", "finding"), default="uniform",
                    help="how the confirmation's level is spread over the pooled values (discover's weighting); "
                         "with 'finding' the uniform cut's figures of the same run are written too (uniform_*)")
    ap.add_argument("--rescue-split", choices=("even", "evidence"), default="even",
                    help="how the provisional prefixes' budget is spread (discover's rescue_split)")
    ap.add_argument("--prior-values", choices=("none", "stale", "other"), default="none",
                    help="values the search's byte prior learns before slot 0 (discover's prior_values): the stale "
                         "candidate list, or the values of another population of the same kind (seed + 100,000)")
    ap.add_argument("--hold", type=float, default=DEFAULT_HOLD,
                    help="complete values held a slot per prefix for a second chance (discover's hold; 0: none)")
    ap.add_argument("--json", metavar="PATH", help="append one JSON line per run")
    ap.add_argument("--from-json", nargs="+", metavar="PATH",
                    help="print markdown tables (mean ± sd over seeds) of earlier --json runs and exit")
    args = ap.parse_args()
    if args.from_json:
        print(summarize(args.from_json))
        return
    weights = tuple(int(w) for w in args.slot_weights.split(",")) if args.slot_weights else None
    ctx = multiprocessing.get_context("spawn")
    for n in args.clients:
        for eps in args.eps:
            for share in args.share:
                for fraction in args.fraction:
                    for seed in args.seeds:
                        with concurrent.futures.ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
                            row = pool.submit(run_one, n, eps, seed, share, args.split, fraction, not args.no_pem,
                                              args.beam, args.method, args.alphabet, args.chunk,
                                              args.trace, args.population, args.max_length,
                                              weights, not args.no_final, args.prior_mix, args.rescue,
                                              args.max_false, args.weighting, args.rescue_split,
                                              args.prior_values, args.hold).result()
                        print(json.dumps({k: (round(v, 5) if isinstance(v, float) else v) for k, v in row.items()}),
                              flush=True)
                        if args.json:
                            with open(args.json, "a", encoding="utf-8") as fh:
                                fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
