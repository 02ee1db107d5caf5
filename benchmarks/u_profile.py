"""The unexplained mass as an empirical-Bayes hyperparameter: profile of the shares' evidence over ``u``.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/u_profile.py [--classes f75-flat,issue4] [--first-seed 100]
        [--seeds 6] [--grid 0.02] [--profiles]

The default shares (:mod:`rappor.analysis.decoder._shares`) fix the unexplained mass ``u`` *before*
the regression (a ramp on ``u_hat / SE`` and the residual skewness).  Here ``u`` is a hyperparameter
like the prior ``G`` and the noise ``phi``: for every ``u`` of a grid (``0, step, 2 step, ...`` up to
``u_hat + 3 SE``, plus the default's and the true one) the regression is fitted with the
non-candidate column fixed at ``u`` (:func:`~rappor.analysis.decoder._shares.coordinate_ascent`, its
prior refitted) and scored by

* ``elbo``: the mean-field evidence lower bound the ascent maximizes (Carbonetto and Stephens 2012,
  eq. 9; Kim et al. 2022, "mr.ash", eq. 12): ``-n/2 log(2 pi phi) - (||r||^2 + sum ||a_j||^2
  Var q_j) / 2 phi - sum KL(q_j || G)``, with the ascent's own ``phi``, prior and posteriors;
* ``elbo1``: the same with ``phi`` held at the least-squares fit's dispersion for every ``u`` (so
  that only the fit and the prior move);
* ``bma``: no single ``u``: the shares averaged over the grid with weights ``exp(elbo)`` (a flat
  prior on ``u``); ``bma0`` the same with half the prior on ``u = 0`` (the list is complete) and
  half uniform on [0, 1];
* ``zlik``: the log-likelihood of the final z-scores under their NPMLE (what the bagged priors
  maximize), which ignores the fit of the bits.

Each score's maximizer over the grid (a parabola through the best point and its neighbours) gives
an estimate ``u_elbo``, ``u_elbo1``, ``u_zlik``; the shares are recomputed at it (the full rule:
bagged priors, cap) and scored by total variation.  ``null``: the least-squares estimate of ``u``
with the candidates whose posterior mass at 0 exceeds one half (at the default ``u``) held at 0 --
the decoys' evidence read directly; ``genie`` and ``genie-raw``: the same with the truly absent
candidates held at 0 (what a perfect reading of the decoys could give), through the default's ramp
and clipped.  A notes script (``docs/notes/decoder-rounds.md``, "Issue 23,
session 5"), not part of the package.
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
from rappor.testing import (BAGGING_GRID, KEPT_Z, PRIOR_CAP_Z, ascent_prior, bagged_shares,  # noqa: E402
                            capped_shares, coordinate_ascent, fixed_unexplained, npmle_prior, shares_inputs)

ESTIMATES = ("default", "true", "elbo", "elbo1", "zlik", "null", "bma", "bma0", "genie", "genie-raw")


def _posteriors(stat: np.ndarray, se: np.ndarray, grid: np.ndarray, w: np.ndarray) -> np.ndarray:
    ll = np.log(np.maximum(w, 1e-300))[None, :] - 0.5 * np.square((stat[:, None] - grid[None, :]) / se[:, None])
    ll -= ll.max(axis=1, keepdims=True)
    p = np.exp(ll)
    out: np.ndarray = p / p.sum(axis=1, keepdims=True)
    return out


def elbo(target: np.ndarray, a: object, norms2: np.ndarray, stat: np.ndarray, grid: np.ndarray, w: np.ndarray,
         phi: float) -> tuple[float, np.ndarray]:
    """The mean-field ELBO at posteriors ``q_j`` on ``grid`` given the statistics (module docstring); and P(0)."""
    se = np.sqrt(phi / norms2)
    post = _posteriors(stat, se, grid, w)
    mean = post @ grid
    var = np.maximum(post @ np.square(grid) - np.square(mean), 0.0)
    resid = target - a @ mean  # type: ignore[operator]
    wl = np.log(np.maximum(w, 1e-300))
    with np.errstate(divide="ignore", invalid="ignore"):
        kl = np.where(post > 0, post * (np.log(np.maximum(post, 1e-300)) - wl[None, :]), 0.0).sum(axis=1)
    n = len(target)
    val = -0.5 * n * math.log(2 * math.pi * phi) - (float(resid @ resid) + float(norms2 @ var)) / (2 * phi) - float(kl.sum())
    return val, post[:, 0]


def zlik(z: np.ndarray) -> float:
    """Log-likelihood of the z-scores (capped as the bagged priors cap them) under their own NPMLE."""
    zf = np.minimum(np.clip(z, -40.0, 40.0), PRIOR_CAP_Z)
    grid, w = npmle_prior(zf, n_grid=BAGGING_GRID, n_iter=500)
    dens = np.exp(-0.5 * np.square(zf[:, None] - grid[None, :])) @ w
    return float(np.sum(np.log(np.maximum(dens, 1e-300))))


def _argmax(us: np.ndarray, vals: np.ndarray) -> float:
    """Maximizer over the grid ``us`` (sorted), refined by a parabola through the best point and its neighbours."""
    i = int(np.argmax(vals))
    if 0 < i < len(us) - 1:
        x, y = us[i - 1:i + 2], vals[i - 1:i + 2]
        den = (x[0] - x[1]) * (x[0] - x[2]) * (x[1] - x[2])
        a2 = (x[2] * (y[1] - y[0]) + x[1] * (y[0] - y[2]) + x[0] * (y[2] - y[1])) / den
        b2 = (x[2] ** 2 * (y[0] - y[1]) + x[1] ** 2 * (y[2] - y[0]) + x[0] ** 2 * (y[1] - y[2])) / den
        if a2 < 0:
            return float(np.clip(-b2 / (2 * a2), x[0], x[2]))
    return float(us[i])


def _ls_unexplained(a: object, b: np.ndarray, bg: np.ndarray, keep: np.ndarray) -> tuple[float, float]:
    """Least-squares coefficient of the non-candidate column with only the candidates ``keep``, and its
    standard error ``sqrt(phi / ||c_perp||^2)`` (Frisch-Waugh-Lovell; ``phi`` the Pearson dispersion, >= 1)."""
    import scipy.sparse as sp
    from scipy.sparse.linalg import lsqr
    ak = a[:, keep]  # type: ignore[index]
    x = sp.hstack([ak, sp.csc_matrix(bg[:, None])]).tocsc()
    coef = lsqr(x, b, atol=1e-14, btol=1e-14, iter_lim=50000)[0]
    proj = lsqr(ak, bg, atol=1e-14, btol=1e-14, iter_lim=50000)[0]
    perp = bg - ak @ proj
    resid = b - x @ coef
    phi = max(1.0, float(resid @ resid) / max(len(b) - x.shape[1], 1))
    return float(coef[-1]), math.sqrt(phi / float(perp @ perp))


def run(col: Collection, step: float) -> dict[str, object]:
    with shares_inputs() as cap, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = rappor.Decoder().decode(col.aggregate, col.candidate_map)
    problem, design, fitted = cap["problem"], cap["design"], cap["fitted"]
    truth = col.true_share
    u_true = 1.0 - float(truth.sum())
    s_u = problem.n_distinct  # type: ignore[attr-defined]
    u_hat, u_se = float(cap["unexplained"]), float(cap["unexplained_se"])  # type: ignore[arg-type]
    u_def = fixed_unexplained(u_hat, u_se, skewness_z=cap["skewness_z"])  # type: ignore[arg-type]
    disp = (max(1.0, fitted.rss / max(problem.n_rows - fitted.n_parameters, 1))  # type: ignore[attr-defined]
            if fitted.dispersion is None else fitted.dispersion)  # type: ignore[attr-defined]
    a, b = design.candidates, problem.b  # type: ignore[attr-defined]
    norms = design.col_sq_norms[:s_u]  # type: ignore[attr-defined]
    bg = design.background  # type: ignore[attr-defined]
    start = np.nan_to_num(fitted.coef)  # type: ignore[attr-defined]
    screened = bool(fitted.screened)  # type: ignore[attr-defined]

    def fit(u: float) -> dict[str, object]:
        with ascent_prior() as spy:
            f = coordinate_ascent(a, b, norms, start, offset=bg * u if u > 0 else None, screened=screened,
                                  max_dispersion=disp)
        target = b - bg * u
        z = f.statistic / f.std_error
        sh = capped_shares(np.maximum(bagged_shares(z, f.std_error), 0.0), z >= KEPT_Z, max(1.0 - u, 0.0))
        per = np.nan_to_num(problem.spread(sh, 0.0))  # type: ignore[attr-defined]
        tv = 0.5 * (float(np.abs(per - truth).sum()) + u_true)
        grid, w = spy["grid"], spy["weights"]
        e, p0 = elbo(target, a, norms, f.statistic, grid, w, f.dispersion)  # type: ignore[arg-type]
        e1, _ = elbo(target, a, norms, f.statistic, grid, w, disp)  # type: ignore[arg-type]
        return {"tv": tv, "per": per, "elbo": e, "elbo1": e1, "zlik": zlik(z), "p0": p0, "phi": f.dispersion,
                "decoys": float(per[truth == 0].sum())}

    top = max(min(u_hat + 3 * u_se, 1.0), 2 * step)
    us = sorted(set(np.round(np.arange(0.0, top + 1e-9, step), 6).tolist()) | {round(u_def, 6)})
    fits = {u: fit(u) for u in us}
    out: dict[str, object] = {"u_true": u_true, "u_hat": u_hat, "u_se": u_se}
    grid_u = np.array(us)
    est = {"default": u_def, "true": u_true}
    for key in ("elbo", "elbo1", "zlik"):
        est[key] = _argmax(grid_u, np.array([fits[u][key] for u in us]))  # type: ignore[misc]
    # The decoys' evidence directly: least squares of u with the candidates most likely absent at 0.
    p0 = fits[round(u_def, 6)]["p0"]
    est["null"] = min(max(_ls_unexplained(a, b, bg, np.flatnonzero(np.asarray(p0) <= 0.5))[0], 0.0), 1.0)
    # What the decoys could tell at best: u with the true absent candidates removed (a genie's list),
    # through the default's ramp ("genie") and clipped ("genie-raw").
    beta_true = np.zeros(s_u)
    slot = problem.slot  # type: ignore[attr-defined]
    np.add.at(beta_true, slot[slot >= 0], truth[slot >= 0])
    u_g, se_g = _ls_unexplained(a, b, bg, np.flatnonzero(beta_true > 0))
    est["genie"] = fixed_unexplained(u_g, se_g, skewness_z=cap["skewness_z"])  # type: ignore[arg-type]
    est["genie-raw"] = min(max(u_g, 0.0), 1.0)
    out["genie_se"] = se_g
    for key, u in est.items():
        r = fits.get(u) or fit(u)
        out[key] = (u, r["tv"], r["decoys"])
    # Bayesian averaging over u (flat prior on the evenly spaced grid, weights exp(ELBO)): the shares
    # averaged, not the u.
    even = [u for u in us if abs(u / step - round(u / step)) < 1e-9]
    ev = np.array([fits[u]["elbo"] for u in even])  # type: ignore[misc]
    wts = np.exp(ev - ev.max())
    wts /= wts.sum()
    per = sum(wt * fits[u]["per"] for wt, u in zip(wts, even))  # type: ignore[misc]
    out["bma"] = (float(wts @ np.array(even)), 0.5 * (float(np.abs(per - truth).sum()) + u_true),
                  float(per[truth == 0].sum()))
    # The same with a point mass 1/2 on "the list is complete" (u = 0) and 1/2 spread uniformly on [0, 1]
    # (the grid's points stand for intervals of width ``step``; beyond the grid the ELBO is negligible).
    wts0 = np.exp(ev - ev.max()) * step / 2.0
    wts0[0] += math.exp(ev[0] - ev.max()) / 2.0
    wts0 /= wts0.sum()
    per0 = sum(wt * fits[u]["per"] for wt, u in zip(wts0, even))  # type: ignore[misc]
    out["bma0"] = (float(wts0 @ np.array(even)), 0.5 * (float(np.abs(per0 - truth).sum()) + u_true),
                   float(per0[truth == 0].sum()))
    # The ELBO's curvature in u (a parabola through the whole evenly spaced profile): the standard
    # error of u it implies, against u_hat's.
    if len(even) >= 3:
        a2 = np.polyfit(np.array(even), ev, 2)[0]
        out["elbo_se"] = 1.0 / math.sqrt(-2.0 * a2) if a2 < 0 else math.inf
    else:
        out["elbo_se"] = math.nan
    out["profile"] = [(u, fits[u]["elbo"], fits[u]["elbo1"], fits[u]["zlik"], fits[u]["tv"]) for u in us]
    tv_decode = 0.5 * (float(np.abs(np.nan_to_num(res.proportion) - truth).sum()) + u_true)
    if abs(out["default"][1] - tv_decode) > 1e-9:  # type: ignore[index]
        raise AssertionError(f"the default u's shares are not the decode's: {out['default']} vs {tv_decode}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--classes", default="f75-flat,flat-missing,flat-missing-1M,f85,issue4,high-privacy,"
                                             "uniform-100,repeat-10")
    parser.add_argument("--first-seed", type=int, default=100)
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--grid", type=float, default=0.02)
    parser.add_argument("--profiles", action="store_true", help="print every collection's profile")
    args = parser.parse_args(argv)
    by_name = {c.name: c for c in CLASSES + SLOW_CLASSES}
    print("class | " + " | ".join(f"{e} TV (u)" for e in ESTIMATES) + " | u_hat +- SE")
    for name in args.classes.split(","):
        rows = []
        for s in range(args.first_seed, args.first_seed + args.seeds):
            r = run(collection(by_name[name], s), args.grid)
            rows.append(r)
            if args.profiles:
                print(f"  {name} seed {s}: true u {r['u_true']:.3f} u_hat {r['u_hat']:.3f} +- {r['u_se']:.3f}; "
                      + ", ".join(f"{e} {r[e][0]:.3f}" for e in ESTIMATES[2:]))  # type: ignore[index]
                for u, e, e1, zl, tv in r["profile"]:  # type: ignore[attr-defined]
                    print(f"    u {u:.3f} elbo {e:.2f} elbo1 {e1:.2f} zlik {zl:.2f} tv {tv:.4f}")
        base = np.array([r["default"][1] for r in rows])  # type: ignore[index]
        cells = []
        for e in ESTIMATES:
            tv = np.array([r[e][1] for r in rows])  # type: ignore[index]
            u = np.mean([r[e][0] for r in rows])  # type: ignore[index]
            d = tv - base
            se = np.std(d, ddof=1) / math.sqrt(len(d)) if len(d) > 1 else 0.0
            cells.append(f"{tv.mean():.4f}" + (f" ({d.mean() / se:+.1f})" if se > 0 else "") + f" u {u:.3f}")
        gap = np.mean([abs(r["elbo"][0] - min(max(r["u_hat"], 0.0), 1.0)) for r in rows])  # type: ignore[index]
        print(f"{name} | " + " | ".join(cells) + f" | {np.mean([r['u_hat'] for r in rows]):.3f} +- "
              f"{np.mean([r['u_se'] for r in rows]):.3f} | ELBO's SE {np.median([r['elbo_se'] for r in rows]):.3f}"
              f" | mean abs(u_elbo - clip u_hat) {gap:.3f} | genie's SE {np.mean([r['genie_se'] for r in rows]):.3f}",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
