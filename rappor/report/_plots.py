"""Plots of decoded collections and privacy curves (needs the ``plot`` extra: matplotlib).

matplotlib is imported on first use (:mod:`rappor._util.lazy`), so ``import rappor.report._plots`` is
cheap and ``import rappor`` never loads it; without it a plot raises
:class:`~rappor.exceptions.MissingDependencyError` naming the ``plot`` extra.  Every function takes an optional ``ax`` and returns
the :class:`matplotlib.axes.Axes` it drew on, so figures can be composed freely::

    fig, (left, right) = plt.subplots(1, 2)
    plot_estimates(result, truth=sim.truth, ax=left)
    plot_epsilon(params, ax=right)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .._util.lazy import lazy_module
from ..analysis._metrics import _detected_mask, _share_interval, bit_residuals, fit_residuals
from ..params import Params
from ..privacy._accounting import loss

if TYPE_CHECKING:  # pragma: no cover
    import matplotlib.pyplot as plt
    from matplotlib.axes import Axes

    from ..collect._aggregate import Aggregate
    from ..collect._design import CandidateMap
else:
    plt = lazy_module("matplotlib.pyplot", "plots")

__all__ = ["plot_epsilon", "plot_estimates", "plot_fit_residuals", "plot_residuals"]


def _axes(ax: Axes | None) -> Axes:
    if ax is not None:
        return ax
    _, new = plt.subplots()
    return new


def plot_estimates(result: Any, truth: Mapping[str, int] | None = None, *, confidence_level: float = 0.95,
                   max_strings: int = 40, ax: Axes | None = None) -> Axes:
    """Estimated share of each candidate with its confidence interval, against the truth.

    Parameters
    ----------
    result : DecodeResult
        Or any object with ``strings``, ``proportion``, ``detected``/``significant`` and
        ``confidence_interval()``.
    truth : mapping of str to int, optional
        True report counts; with it the plot is estimated share (y) against true share
        (x) with the line ``y = x``; without it, estimates by rank.
    confidence_level : float, default=0.95
    max_strings : int, default=40
        Show the candidates with the largest estimates (and true shares) only.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
    """
    ax = _axes(ax)
    strings = list(result.strings)
    est = np.asarray(result.proportion, dtype=np.float64)
    detected = _detected_mask(result)
    interval = _share_interval(result, confidence_level) if callable(getattr(result, "confidence_interval", None)) else None
    low, high = interval if interval is not None else (est, est)
    if truth is not None:
        total = sum(truth.values()) or 1
        true_share = np.array([truth.get(s, 0) / total for s in strings], dtype=np.float64)
        keep = np.argsort(-np.maximum(est, true_share), kind="stable")[:max_strings]
        x = true_share[keep]
        ax.set_xlabel("true share of reports")
        top = float(max(np.nanmax(high[keep], initial=0.0), np.max(x, initial=0.0), 1e-3))
        ax.plot([0, top], [0, top], color="0.6", linewidth=1, linestyle="--", label="y = x")
    else:
        keep = np.argsort(-est, kind="stable")[:max_strings]
        x = np.arange(1, keep.size + 1, dtype=np.float64)
        ax.set_xlabel("rank")
    y = est[keep]
    err = np.vstack([np.maximum(y - low[keep], 0), np.maximum(high[keep] - y, 0)])
    det = detected[keep]
    for mask, label, color in ((det, "detected", "C0"), (~det, "not detected", "C3")):
        if mask.any():
            ax.errorbar(x[mask], y[mask], yerr=err[:, mask], fmt="o", markersize=3, capsize=2, color=color,
                        label=label, linewidth=0.8)
    ax.axhline(0, color="0.8", linewidth=0.8)
    ax.set_ylabel(f"estimated share ({confidence_level:.0%} interval)")
    ax.set_title("Estimated vs true frequencies" if truth is not None else "Estimated frequencies")
    ax.legend(loc="upper left", fontsize="small")
    return ax


def plot_residuals(aggregate: Aggregate, candidate_map: CandidateMap, proportion: npt.ArrayLike, *,
                   ax: Axes | None = None) -> Axes:
    """Standardized residuals per (cohort, bit) under given shares, as a heat map
    (:func:`rappor.analysis.bit_residuals`).  For a decode's own model use
    :func:`plot_fit_residuals`.

    Returns
    -------
    matplotlib.axes.Axes
    """
    return _heat_map(bit_residuals(aggregate, candidate_map, proportion), "Residuals per (cohort, bit)", ax)


def plot_fit_residuals(result: Any, aggregate: Aggregate, candidate_map: CandidateMap, *,
                       ax: Axes | None = None) -> Axes:
    """Heat map of the residuals of a decode's model (:func:`rappor.analysis.fit_residuals`):
    the fit whose chi-square the summary tests.

    Returns
    -------
    matplotlib.axes.Axes
    """
    fit = fit_residuals(result, aggregate, candidate_map)
    summary = result.summary() if callable(getattr(result, "summary", None)) else {}
    residual = summary.get("residual") or {}
    title = "Residuals of the tested fit (all shares + unexplained)\n"
    title += (f"chi-square {fit.chi2:.1f} on {residual['dof']} dof, p = {residual['chi2_pvalue']:.2g}"
              if residual.get("dof") else f"sum of squares {fit.chi2:.1f}")
    return _heat_map(fit.residuals, title, ax)


def _heat_map(res: npt.NDArray[np.float64], title: str, ax: Axes | None) -> Axes:
    ax = _axes(ax)
    finite = res[np.isfinite(res)]
    lim = max(3.0, float(np.abs(finite).max()) if finite.size else 3.0)
    image = ax.imshow(res, aspect="auto", cmap="RdBu_r", vmin=-lim, vmax=lim, interpolation="nearest")
    ax.figure.colorbar(image, ax=ax, label="standardized residual")
    ax.set_xlabel("bit")
    ax.set_ylabel("cohort")
    ax.set_title(title, fontsize="medium")
    return ax


def plot_epsilon(params: Params, *, max_reports: int = 100, delta: float = 1e-6, ax: Axes | None = None) -> Axes:
    """Privacy loss of ``T`` reports of changing values, by accounting, for ``T = 1 .. max_reports``.

    Draws basic composition (``T epsilon_one``), advanced composition, zCDP and the best
    (epsilon, delta) bound of :func:`rappor.privacy.loss`, and the bound
    ``epsilon_inf`` that holds for any number of reports of one unchanged value.

    Returns
    -------
    matplotlib.axes.Axes
    """
    ax = _axes(ax)
    ts = np.unique(np.geomspace(1, max(int(max_reports), 1), num=16).round().astype(int))
    rows = [loss(params, reports=int(t), delta=delta) for t in ts]
    curves = {
        "basic composition (delta = 0)": [r.epsilon_basic for r in rows],
        "advanced composition": [r.epsilon_advanced for r in rows],
        "zCDP": [r.epsilon_zcdp for r in rows],
        "best (epsilon, delta)": [r.epsilon_delta for r in rows],
    }
    for label, values in curves.items():
        ax.plot(ts, values, marker=".", label=label)
    if np.isfinite(params.epsilon_inf):
        ax.axhline(params.epsilon_inf, color="k", linestyle=":", label="epsilon_inf (one value, any T)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("reports of changing values, T")
    ax.set_ylabel(f"epsilon (delta = {delta:g} where used)")
    ax.set_title(f"Privacy loss, k={params.k} h={params.h} p={params.p:g} q={params.q:g} f={params.f:g}")
    ax.legend(fontsize="small")
    return ax
