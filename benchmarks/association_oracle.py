"""Association: how far could any estimator go on a class?  Oracle bounds for string x string tables.

On collections of :mod:`association_recipe`'s classes whose strings are all candidates
(``ss20x10-200k-*``, ``ssb20x10-200k-*``; google/rappor's client rules), per collection:

(a) ``default``: the TV of ``rappor decode-assoc``'s default (detected candidates + Other);
(a') ``exact``: the maximum-likelihood table over every candidate, no Other (the exact model);
(b) ``support``: the same maximum restricted to the TRUE support (cells whose realized share
    is above 1e-4): what knowing which cells are empty could give;
(c) ``efficient``: the TV an efficient estimator would have: draws from ``N(truth, I^-1)``,
    ``I`` the observed information of the exact model at the truth (on the simplex), mean
    TV over the draws -- ``normal`` as drawn, ``euclid`` projected to the simplex in the
    Euclidean metric, ``projected`` in the metric of the information (the constrained
    maximum's asymptotic law, Andrews 1999);
(d) the recipe's TV on evaluation seeds 9000-9001 for scale (``--recipe-from`` stored runs);
(e) three variables: ``pair:*`` the string pair's table (summed over the boolean), ``support+split``
    the support maximum's pair shares with the default's splits of the boolean;
(f) data-driven estimators tried on the default's table (every class, also with outside strings), in the
    quadratic model of the likelihood around its signed maximum ``x ~ N(pi, V)`` (for three variables
    the string pair's shares, the default's splits kept): ``quad`` its constrained maximum (should equal
    ``default``), ``quad_support`` restricted to the true support; ``eb_cells`` the posterior mean under
    an exchangeable prior of the cells' shares (Kiefer-Wolfowitz NPMLE from the cells' marginal normals),
    ``eb_cond`` the same for the rows' conditionals ``P(b | a)`` (cells = row share x conditional),
    ``eb_cond_oracle`` with the true conditionals' histogram as the prior -- posterior means by Gibbs
    sampling over a grid with the full precision ``V^+``; ``aic`` backward elimination of cells while
    setting one to 0 costs less than one log-likelihood unit (Akaike's penalty); ``eb_spike`` and
    ``relaxed``, a spike-and-slab prior of the conditionals, its posterior mean and the maximum on the
    cells it does not put at 0 (``_association_tried.tried_estimators``).

TVs are against the clients' realized joint over each estimator's own cells; the exact-model
estimators are also scored collapsed to the default's categories (undetected candidates
summed into its Other; ``@default``), which is the default's own cell set.

Usage::

    python benchmarks/association_oracle.py [--classes ss20x10-200k-low,...] [--seeds 100-103] [--json FILE]
        [--no-oracle] [--tried eb_spike,...]   # (f) only (some of them), or to skip the exact-model fits
    python benchmarks/association_oracle.py --recipe-from FILE [FILE ...]     # (d) only
    python benchmarks/association_oracle.py --summarize FILE [FILE ...]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _google_recipe as recipe  # noqa: E402
from association_recipe import CLASSES, PRIVACY, _scenario  # noqa: E402

from _association_tried import NAMES, tried_estimators  # noqa: E402

from rappor.analysis.association import AssociationDecoder, total_variation  # noqa: E402
from rappor.testing import candidate_likelihood, fit_mixture, observed_covariance, projected_draws  # noqa: E402

#: A cell is in the true support when its realized share is above this.
SUPPORT = 1e-4
#: Draws of the efficient estimator's law.
DRAWS = 400
DEFAULT_CLASSES = "ss20x10-200k-low,ss20x10-200k-high,ssb20x10-200k-low,ssb20x10-200k-high"


def _dense(factor) -> np.ndarray:
    return factor.dense() if hasattr(factor, "dense") else np.asarray(factor)


def support_likelihood(lik, cells: np.ndarray):
    """One dense factor whose columns are the product likelihood's ``cells`` (flat indices)."""
    index = np.unravel_index(cells, lik.shape)
    out = np.ones((lik.rows, cells.size))
    for f, idx in zip(lik.factors, index):
        out *= _dense(f)[:, idx]
    return type(lik)([out], lik.weights)


def simplex_projection(z: np.ndarray) -> np.ndarray:
    """Euclidean projection of each row onto the probability simplex (Duchi et al. 2008)."""
    u = -np.sort(-z, axis=1)
    css = np.cumsum(u, axis=1) - 1.0
    k = np.arange(1, z.shape[1] + 1)
    rho = (u - css / k > 0).sum(axis=1)
    theta = css[np.arange(z.shape[0]), rho - 1] / rho
    return np.maximum(z - theta[:, None], 0.0)


def collapse(table: np.ndarray, cats: list[tuple[str, ...]], target: tuple[tuple[str, ...], ...]) -> np.ndarray:
    """Sum ``table`` (over ``cats``) into ``target``'s categories (strings not in it into its Other)."""
    out = table
    for axis, (have, want) in enumerate(zip(cats, target)):
        lookup = {c: i for i, c in enumerate(want)}
        other = lookup.get("Other", -1)
        idx = np.array([lookup.get(c, other) for c in have])
        moved = np.zeros(out.shape[:axis] + (len(want),) + out.shape[axis + 1:])
        for i, j in enumerate(idx):
            if j >= 0:
                moved[(slice(None),) * axis + (j,)] += out.take(i, axis=axis)
        out = moved
    return out


def study(sim, seed: int, oracle: bool = True, tried: tuple[str, ...] = NAMES) -> dict:
    out: dict = {}
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = AssociationDecoder().decode(sim.reports, sim.variables)
    truth_default = sim.truth(res.categories)
    out["default"] = total_variation(res.proportion, truth_default)
    out["default_seconds"] = time.perf_counter() - started
    out.update(tried_estimators(res, truth_default, tried))
    if not oracle:
        return out
    lik, cats = candidate_likelihood(sim.reports, sim.variables)
    truth = sim.truth(cats)
    flat = truth.reshape(-1)

    def scored(name: str, table: np.ndarray) -> None:
        table = table.reshape(lik.shape)
        out[name] = total_variation(table, truth)
        out[name + "@default"] = total_variation(collapse(table, cats, res.categories), truth_default)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exact = fit_mixture(lik, tolerance=1e-3, max_iterations=500)
    scored("exact", exact.table)
    cells = np.flatnonzero(flat > SUPPORT)
    sub = support_likelihood(lik, cells)
    start = np.full(cells.size, 1.0 / cells.size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_mixture(sub, tolerance=1e-3, max_iterations=500, start=start)
    table = np.zeros(lik.size)
    table[cells] = fit.table
    scored("support", table)
    if lik.shape[-1] == 2 and len(lik.shape) == 3:  # three variables: the string pair's part, and the split kept
        pair_default = res.proportion.sum(axis=2)
        out["pair:default"] = total_variation(pair_default, truth_default.sum(axis=2))
        pair_support = collapse(table.reshape(lik.shape), cats, res.categories).sum(axis=2)
        out["pair:support"] = total_variation(pair_support, truth_default.sum(axis=2))
        with np.errstate(divide="ignore", invalid="ignore"):
            split = np.where(pair_default[..., None] > 0, res.proportion / pair_default[..., None], 0.5)
        out["support+split"] = total_variation(split * pair_support[..., None], truth_default)
    out["support_cells"] = int(cells.size)
    out["cells"] = int(lik.size)
    cov = observed_covariance(lik, lik.forward(flat))
    gen = np.random.default_rng(seed)
    vals, vecs = np.linalg.eigh((cov + cov.T) / 2)
    root = vecs * np.sqrt(np.clip(vals, 0.0, None))
    z = flat + gen.standard_normal((DRAWS, flat.size)) @ root.T
    out["efficient_normal"] = float(0.5 * np.abs(z - flat).sum(axis=1).mean())
    out["efficient_euclid"] = float(0.5 * np.abs(simplex_projection(z) - flat).sum(axis=1).mean())
    proj = projected_draws(flat, cov, gen, draws=DRAWS)
    out["efficient_projected"] = float(0.5 * np.abs(proj - flat).sum(axis=1).mean()) if proj is not None else None
    out["seconds"] = time.perf_counter() - started
    return out


KEYS = ["default", "exact", "exact@default", "support", "support@default", "efficient_normal", "efficient_euclid",
        "efficient_projected", "pair:default", "pair:support", "support+split", "quad", "quad_support", "eb_cells",
        "eb_cond", "eb_cond_oracle", "aic", "eb_spike", "relaxed", "relaxed_cells", "relaxed_in_support", "support_cells"]


def summarize(rows: list[dict]) -> None:
    names = [n for n in CLASSES if any(r["class"] == n for r in rows)]
    keys = [k for k in KEYS if any(r.get(k) is not None for r in rows)]
    print("mean TV (paired: per seed below; 'se' the standard error of the mean difference to default)")
    print(f"{'class':<24}{'seeds':>6}" + "".join(f"{k:>16}" for k in keys))
    for name in names:
        sel = sorted((r for r in rows if r["class"] == name), key=lambda r: r["seed"])
        means = [np.mean([r[k] for r in sel if r.get(k) is not None]) if any(r.get(k) is not None for r in sel)
                 else float("nan") for k in keys]
        print(f"{name:<24}{len(sel):>6}" + "".join(f"{m:>16.4f}" for m in means))
        ses = []
        for k in keys:
            diff = np.array([r[k] - r["default"] for r in sel if r.get(k) is not None])
            ses.append(diff.std(ddof=1) / np.sqrt(diff.size) if diff.size > 1 else float("nan"))
        print(f"{'  se of diff':<30}" + "".join(f"{v:>16.4f}" for v in ses))
        for r in sel:
            print(f"    {r['seed']:<26}" + "".join(f"{(r[k] if r.get(k) is not None else float('nan')):>16.4f}" for k in keys))


def recipe_scale(paths: list[str], classes: list[str]) -> None:
    """(d): the stored runs' recipe TV (and ours, for the ratio) per class."""
    rows = {}
    for path in paths:
        with open(path) as fh:
            for line in fh:
                r = json.loads(line)
                rows[(r["class"], r["seed"])] = r
    for name in classes:
        sel = [r for (c, _), r in sorted(rows.items()) if c == name and r.get("recipe")]
        if sel:
            ours = np.mean([r["ours"]["tv"] for r in sel])
            rec = np.mean([r["recipe"]["tv"] for r in sel])
            print(f"{name:<26} seeds {','.join(str(r['seed']) for r in sel)}: recipe {rec:.4f}  ours {ours:.4f}  "
                  f"0.8 x recipe {0.8 * rec:.4f}")


def _seeds(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--classes", default=DEFAULT_CLASSES)
    parser.add_argument("--seeds", default="100-103", help="design seeds, e.g. 100-103")
    parser.add_argument("--json", default=None)
    parser.add_argument("--no-oracle", action="store_true", help="only the default and the tried estimators (f)")
    parser.add_argument("--tried", default=",".join(NAMES), help=f"comma-separated, of: {', '.join(NAMES)}")
    parser.add_argument("--recipe-from", nargs="+", default=None, metavar="FILE")
    parser.add_argument("--summarize", nargs="+", default=None, metavar="FILE")
    args = parser.parse_args()
    names = args.classes.split(",")
    if args.recipe_from:
        recipe_scale(args.recipe_from, names)
        return
    if args.summarize:
        rows = [json.loads(line) for path in args.summarize for line in open(path)]
        summarize(rows)
        return
    import scipy.linalg  # noqa: F401
    from threadpoolctl import threadpool_limits

    rows = []
    with threadpool_limits(1):
        for name in names:
            case = CLASSES[name]
            oracle = not (case.outside or args.no_oracle)
            joint, values, cands = _scenario(case)
            for seed in _seeds(args.seeds):
                sim = recipe.simulate_google(PRIVACY[case.privacy], joint, values, case.n, candidates=cands, rng=seed)
                row = {"class": name, "seed": seed, **study(sim, seed, oracle, tuple(args.tried.split(",")))}
                rows.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
                if args.json:
                    with open(args.json, "a") as fh:
                        fh.write(json.dumps(row) + "\n")
    summarize(rows)


if __name__ == "__main__":
    main()
