"""Which of the default shares' three estimates limits them?  Oracles per scenario class.

Usage::

    python benchmarks/oracle_shares.py [--classes flat-missing,f85] [--first-seed 100] [--seeds 6]

The default shares (:mod:`rappor.analysis.decoder._shares`) estimate three things a genie could
tell them instead; each row below replaces one (or all) by the truth, on the same collection and
the same decode, and prints the mean total variation over the seeds:

* ``u``: the fixed unexplained mass is the true mass of the strings outside the candidate list
  (instead of :func:`~rappor.analysis.decoder._shares.fixed_unexplained`'s ramp);
* ``disp``: the noise scale is the true one: every row is divided by the square root of its
  true dispersion ``1 + (R_eff - 1) kappa_row`` (``kappa_row = (q - p)^2 (f/2)(1 - f/2) /
  (pi (1 - pi))`` at the row's report rate, ``R_eff`` the reports per PRR: ``R`` for one value
  under one PRR, ``1 + (R - 1) sum_v p_v^2`` for values drawn independently; 1 with one report
  per client), and the regression's ``phi`` is held at 1 on the rescaled rows;
* ``prior``: the bagged NPMLE priors are replaced by the true prior of the final z-scores: the
  empirical law of ``true share / SE`` over the candidates (0 for the absent ones), with the
  same rule (posterior mean where the posterior median is positive; clear strings kept);
* ``all``: the three together.

It also prints the decoys' share of the mass (``decoys``), the default's fitted prior's mass
at 0 (``w0``) and the share of absent candidates (``pi0``), to tell an absent candidate from a
tiny real one.  A notes script (``docs/notes/decoder-rounds.md``), not part of the package.
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import rappor  # noqa: E402
from _classes import CLASSES, SLOW_CLASSES, Collection, collection  # noqa: E402
from rappor.testing import (BAGGING_GRID, CLEAR_Z, KEPT_Z, N_PRIORS, PRIOR_CAP_Z, bagged_shares,  # noqa: E402
                            capped_shares, coordinate_ascent, fixed_unexplained, prior_grid, shares_inputs)

VARIANTS = ("default", "u", "disp", "prior", "u+prior", "all")
#: Diagnostics of the prior (``--variants``): the bagged NPMLEs with their mass at 0 held at the
#: true share of absent candidates (``w0``); the true prior with the posterior median as the
#: share (``median``); bagged unimodal priors, a point at 0 and uniforms on [0, a] (``ash``:
#: Stephens 2017, Biostatistics 18(2)), and the same with its null-biased penalty (``ash-null``);
#: the bagged NPMLEs with the posterior median, per prior (``bag-median``) or under their average
#: (``avg-median``; ``avg-hybrid`` today's rule under the average); Efron's g-modeling priors
#: (``gmodel``, penalty 3; ``gmodel-1``, ``gmodel-10``; ``gmodel-median``: with the median rule);
#: one NPMLE over atoms and uniforms together (``mixed``).
EXTRA = ("w0", "median", "ash", "ash-null", "bag-median", "avg-median", "avg-hybrid", "gmodel", "gmodel-median",
         "gmodel-1", "gmodel-10", "gmodel-low", "mixed")


def true_dispersion(col: Collection, problem: object) -> np.ndarray:
    """Per row of ``problem``: ``1 + (R_eff - 1) kappa_row`` (module docstring)."""
    sc, params = col.scenario, col.scenario.params
    counts = col.aggregate.counts
    rate = (counts[:, 1:] / np.maximum(counts[:, :1], 1)).ravel()[problem.rows]  # type: ignore[attr-defined]
    r = sc.reports_per_client
    if r <= 1:
        return np.ones(len(rate))
    probs = np.asarray(sc.population.probabilities, dtype=float)
    r_eff = r if sc.repeat == "same" else 1.0 + (r - 1) * float(np.sum((probs / probs.sum()) ** 2))
    half_f = rappor.collect.google_effective_prob_f(params.prob_f) / 2.0
    kappa = (params.prob_q - params.prob_p) ** 2 * half_f * (1 - half_f) / np.maximum(rate * (1 - rate), 1e-12)
    out: np.ndarray = 1.0 + (r_eff - 1.0) * kappa
    return out


def _true_posterior(z: np.ndarray, mu_true: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The true prior's atoms (the law of ``mu_true``, to 3 decimals, at most 40) and every candidate's
    posterior over them given its ``z`` (clipped to [-40, 40])."""
    atoms, weights = np.unique(np.round(np.minimum(mu_true, 40.0), 3), return_counts=True)
    w = weights / weights.sum()
    ll = -0.5 * np.square(np.clip(z, -40.0, 40.0)[:, None] - atoms[None, :])
    lik = np.exp(ll - ll.max(axis=1, keepdims=True)) * w[None, :]
    return atoms, lik / lik.sum(axis=1, keepdims=True)


def oracle_prior_shares(z: np.ndarray, se: np.ndarray, mu_true: np.ndarray) -> np.ndarray:
    """The bagged rule with the true prior (the law of ``mu_true``) in place of the bagged NPMLEs."""
    atoms, post = _true_posterior(z, mu_true)
    at_zero = post[:, atoms == 0.0].sum(axis=1)
    mean = post @ atoms
    return _kept(np.where(at_zero < 0.5, mean, 0.0), z, se)


def _kept(mu: np.ndarray, z: np.ndarray, se: np.ndarray) -> np.ndarray:
    """Effects ``mu`` (in SEs) as shares, clear strings kept at their statistic (as :func:`bagged_shares`)."""
    blend = np.clip((z - CLEAR_Z) / (KEPT_Z - CLEAR_Z), 0.0, 1.0)
    out: np.ndarray = ((1.0 - blend) * mu + blend * z) * se
    return out


def _median_shares(z: np.ndarray, se: np.ndarray, mu_true: np.ndarray) -> np.ndarray:
    """The posterior median under the true prior (the law of ``mu_true``): the Bayes rule for absolute error."""
    atoms, post = _true_posterior(z, mu_true)
    cdf = np.cumsum(post, axis=1)
    return _kept(atoms[np.argmax(cdf >= 0.5, axis=1)], z, se)


def _gmodel(lik_v: np.ndarray, frac: np.ndarray, grid: np.ndarray, n: int, lam: float, df: int = 10,
            low_atom: bool = False) -> np.ndarray:
    """Efron's g-modeling (2016, Biometrika 103(1)): ``g = softmax(Q alpha)``, a free atom at 0 and a cubic
    B-spline log-density in ``log theta`` on the positive points, second differences penalized (P-spline,
    Eilers and Marx 1996), fitted by penalized marginal likelihood; one prior per row of ``frac``."""
    from scipy.interpolate import BSpline
    from scipy.optimize import minimize
    lt = np.log(grid[1:])
    inner = np.linspace(lt[0], lt[-1], df - 2)
    step = inner[1] - inner[0]
    knots = np.concatenate([lt[0] - step * np.arange(3, 0, -1), inner, lt[-1] + step * np.arange(1, 4)])
    basis = BSpline.design_matrix(lt, knots, 3).toarray()
    q = np.zeros((len(grid), basis.shape[1] + 1 + low_atom))
    q[0, 0] = 1.0
    q[1:, 1:basis.shape[1] + 1] = basis
    if low_atom:  # a free atom at the grid's lowest positive point (the effects below it), as the NPMLE's
        q[1, -1] = 1.0
    d2 = np.diff(np.eye(basis.shape[1]), 2, axis=0)
    pen = np.zeros((q.shape[1], q.shape[1]))
    pen[1:basis.shape[1] + 1, 1:basis.shape[1] + 1] = d2.T @ d2
    out = np.empty((frac.shape[0], len(grid)))
    for r in range(frac.shape[0]):
        cnt = frac[r] * n

        def obj(alpha: np.ndarray) -> tuple[float, np.ndarray]:
            eta = q @ alpha
            g = np.exp(eta - eta.max())
            g /= g.sum()
            f = np.maximum(lik_v @ g, 1e-300)
            post_sum = ((cnt / f) @ lik_v) * g
            val = -float(cnt @ np.log(f)) + lam * float(alpha @ pen @ alpha)
            grad = -(q.T @ (post_sum - cnt.sum() * g)) + 2 * lam * (pen @ alpha)
            return val, grad

        alpha = minimize(obj, np.zeros(q.shape[1]), jac=True, method="L-BFGS-B").x
        eta = q @ alpha
        g = np.exp(eta - eta.max())
        out[r] = g / g.sum()
    return out


def _bagged_variant(z: np.ndarray, se: np.ndarray, *, w0: float | None = None, kind: str = "atoms",
                    null_penalty: float = 0.0, rule: str = "hybrid") -> np.ndarray:
    """:func:`bagged_shares` with the null mass held at ``w0``, or with uniform components (``kind="uniform"``)."""
    from scipy.stats import norm
    zf = np.minimum(np.clip(z, -40, 40), PRIOR_CAP_Z)
    grid = prior_grid(float(np.max(zf)), BAGGING_GRID)
    values, counts = np.unique(np.round(zf * 20) / 20, return_counts=True)
    n = int(counts.sum())
    gen = np.random.default_rng(0)
    frac = np.vstack([counts / n, gen.multinomial(n, counts / n, size=N_PRIORS - 1) / n])

    def lik_of(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Likelihood of every component of the prior at ``x``, and the posterior mean under each."""
        if kind == "atoms" or kind.startswith("gmodel"):
            return lik_of_atoms(x)
        if kind == "mixed":
            la, ma = lik_of_atoms(x)
            lu, mu_ = lik_of_uniform(x)
            return np.hstack([la, lu[:, 1:]]), np.hstack([ma, mu_[:, 1:]])
        return lik_of_uniform(x)

    def lik_of_atoms(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ll = -0.5 * np.square(x[:, None] - grid[None, :])
        return np.exp(ll), np.broadcast_to(grid, ll.shape)

    def lik_of_uniform(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a = grid[1:]
        lo, hi = norm.cdf(-x)[:, None], norm.cdf(a[None, :] - x[:, None])
        mass = np.maximum(hi - lo, 1e-300)
        lik = np.hstack([np.exp(-0.5 * x[:, None] ** 2), math.sqrt(2 * math.pi) * mass / a[None, :]])
        mean = x[:, None] + (norm.pdf(x)[:, None] - norm.pdf(a[None, :] - x[:, None])) / mass
        return lik, np.hstack([np.zeros((len(x), 1)), np.clip(mean, 0, a[None, :])])

    lik_v, _ = lik_of(values)
    w = np.full((N_PRIORS, lik_v.shape[1]), 1.0 / lik_v.shape[1])
    if kind.startswith("gmodel"):
        w = _gmodel(lik_v, frac, grid, n, float(kind.split(":")[1]), low_atom=kind.endswith("low"))
    for _ in range(0 if kind.startswith("gmodel") else 500):
        dens = np.maximum(lik_v @ w.T, 1e-300)
        new = w * ((frac / dens.T) @ lik_v)
        if null_penalty:
            new[:, 0] += (null_penalty - 1.0) / n
            new /= new.sum(axis=1, keepdims=True)
        if w0 is not None:
            new[:, 1:] *= (1 - w0) / np.maximum(new[:, 1:].sum(axis=1, keepdims=True), 1e-300)
            new[:, 0] = w0
        w = new
    lik, means = lik_of(zf)
    if rule.startswith("avg"):
        w = w.mean(axis=0, keepdims=True)
    if rule.endswith("median"):  # posterior median under each prior (atoms only)
        post = lik[:, None, :] * w[None, :, :]
        cdf = np.cumsum(post / post.sum(axis=2, keepdims=True), axis=2)
        med = grid[np.argmax(cdf >= 0.5, axis=2)]  # (candidates, priors)
        positive = (med > 0).mean(axis=1) >= 0.5
        return _kept(np.where(positive, med.mean(axis=1), 0.0), z, se)
    dens = np.maximum(lik @ w.T, 1e-300)
    mean = ((lik * means) @ w.T) / dens
    at_zero = lik[:, :1] * w[:, 0][None, :] / dens
    effect = np.where(at_zero < 0.5 - 1e-12, mean, 0.0)
    positive = (effect > 0).mean(axis=1) >= 0.5
    return _kept(np.where(positive, effect.mean(axis=1), 0.0), z, se)


def run(col: Collection, variants: tuple[str, ...] = VARIANTS) -> dict[str, tuple[float, float]]:
    """(TV, decoys' mass) of every variant on one collection, plus diagnostics under ``"info"``."""
    with shares_inputs() as captured, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = rappor.Decoder().decode(col.aggregate, col.candidate_map)
    problem, design, fitted = captured["problem"], captured["design"], captured["fitted"]
    truth_cand = col.true_share
    absent = truth_cand == 0
    total_in_list = float(truth_cand.sum())
    u_true = 1.0 - total_in_list
    s_u = problem.n_distinct  # type: ignore[attr-defined]
    # True share per distinguishable column: its group's members summed.
    beta_true = np.zeros(s_u)
    slot = problem.slot  # type: ignore[attr-defined]
    np.add.at(beta_true, slot[slot >= 0], truth_cand[slot >= 0])
    u_fixed = (fixed_unexplained(captured["unexplained"], captured["unexplained_se"],  # type: ignore[arg-type]
                                 skewness_z=captured["skewness_z"])  # type: ignore[arg-type]
               if fitted.modelled_unexplained else 0.0)  # type: ignore[attr-defined]
    disp_cap = (max(1.0, fitted.rss / max(problem.n_rows - fitted.n_parameters, 1))  # type: ignore[attr-defined]
                if fitted.dispersion is None else fitted.dispersion)  # type: ignore[attr-defined]
    a, b = design.candidates, problem.b  # type: ignore[attr-defined]
    norms = design.col_sq_norms[:s_u]  # type: ignore[attr-defined]
    background = design.background if fitted.modelled_unexplained else None  # type: ignore[attr-defined]
    start = np.nan_to_num(fitted.coef)  # type: ignore[attr-defined]
    d_row = true_dispersion(col, problem)

    def shares(u: float, true_disp: bool, true_prior: bool, extra: str = "") -> np.ndarray:
        aa, bb, nn, bg, cap = a, b, norms, background, disp_cap
        if true_disp:
            scale = 1.0 / np.sqrt(d_row)
            import scipy.sparse as sp
            aa = sp.csc_matrix(sp.diags(scale) @ a)
            bb, bg, cap = b * scale, None if background is None else background * scale, 1.0
            nn = np.asarray(aa.multiply(aa).sum(axis=0)).ravel()
        offset = None if bg is None or u <= 0 else bg * u
        fit = coordinate_ascent(aa, bb, nn, start, offset=offset, screened=fitted.screened,  # type: ignore[attr-defined]
                                max_dispersion=cap)
        z = fit.statistic / fit.std_error
        mu_true = beta_true / fit.std_error
        if extra == "w0":
            sh = _bagged_variant(z, fit.std_error, w0=float(np.mean(beta_true == 0)))
        elif extra == "median":
            sh = _median_shares(z, fit.std_error, mu_true)
        elif extra in ("bag-median", "avg-median", "avg-hybrid"):
            sh = _bagged_variant(z, fit.std_error, rule=extra)
        elif extra.startswith("gmodel"):
            lam = {"gmodel": 3.0, "gmodel-median": 3.0, "gmodel-1": 1.0, "gmodel-10": 10.0, "gmodel-low": 1.0}[extra]
            sh = _bagged_variant(z, fit.std_error, kind=f"gmodel:{lam}" + (":low" if extra.endswith("low") else ""),
                                 rule="median" if extra.endswith("median") else "hybrid")
        elif extra == "mixed":
            sh = _bagged_variant(z, fit.std_error, kind="mixed")
        elif extra in ("ash", "ash-null"):
            sh = _bagged_variant(z, fit.std_error, kind="uniform", null_penalty=10.0 if extra == "ash-null" else 0.0)
        else:
            sh = oracle_prior_shares(z, fit.std_error, mu_true) if true_prior else bagged_shares(z, fit.std_error)
        sh = np.maximum(sh, 0.0)
        return capped_shares(sh, z >= KEPT_Z, max(1.0 - u, 0.0))

    out: dict[str, tuple[float, float]] = {}
    for name in variants:
        u = u_true if name in ("u", "u+prior", "all") else u_fixed
        coef = shares(u, name in ("disp", "all"), name in ("prior", "u+prior", "all"), name if name in EXTRA else "")
        per_cand = np.nan_to_num(problem.spread(coef, 0.0))  # type: ignore[attr-defined]
        if name == "default":
            assert np.allclose(per_cand, np.nan_to_num(res.proportion), atol=1e-12), "spy's default != decode's"
        tv = 0.5 * (float(np.abs(per_cand - truth_cand).sum()) + u_true)
        out[name] = (tv, float(per_cand[absent].sum()))
    out["info"] = (float(u_fixed), u_true)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--classes", default="repeat-10,repeat-30,flat-missing,flat-missing-1M,h1,f75-flat,f85,pq-near")
    parser.add_argument("--first-seed", type=int, default=100)
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--variants", default=",".join(VARIANTS), help=f"of {VARIANTS + EXTRA}")
    args = parser.parse_args(argv)
    variants = tuple(v for v in args.variants.split(",") if v != "default")
    variants = ("default",) + variants
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - optional
        pass
    else:
        threadpool_limits(1, user_api="blas")
    by_name = {c.name: c for c in CLASSES + SLOW_CLASSES}
    last = variants[-1]
    print("class | " + " | ".join(variants) + f" | decoys' mass default / {last} | u* / true u")
    for name in args.classes.split(","):
        rows = [run(collection(by_name[name], s), variants) for s in range(args.first_seed, args.first_seed + args.seeds)]
        tv = {v: np.mean([r[v][0] for r in rows]) for v in variants}
        sd = {v: np.std([r[v][0] - r["default"][0] for r in rows], ddof=1) / math.sqrt(len(rows)) for v in variants}
        dec = {v: np.mean([r[v][1] for r in rows]) for v in variants}
        info = np.mean([r["info"] for r in rows], axis=0)
        print(f"{name} | " + " | ".join(f"{tv[v]:.4f}" + (f" ({(tv[v] - tv['default']) / sd[v]:+.1f})" if sd[v] > 0 else "")
                                        for v in variants)
              + f" | {dec['default']:.3f} / {dec[last]:.3f} | {info[0]:.3f} / {info[1]:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
