"""A self-contained HTML report of an association analysis: heat maps of the joint table (private)."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .._util.outputs import atomic_output
from .._util.paths import PathLike
from .._util.lazy import import_optional
from ._html import _STYLE, _png, _table
from ..exceptions import MissingDependencyError
from ..params import Params
from ..analysis.association._privacy import multi_variable_privacy
from ..analysis.association._result import AssociationResult

__all__ = ["render_association_report", "write_association_report"]

#: Categories shown per axis in a heat map (the largest shares first when there are more).
MAX_HEATMAP_CATEGORIES = 40


def _heatmaps(result: AssociationResult, truth: npt.NDArray[np.float64] | None) -> str:
    try:
        Figure = import_optional("matplotlib.figure", "heat maps").Figure  # noqa: N806 - a class
    except MissingDependencyError as exc:
        return f'<p class="note">{html.escape(str(exc))}</p>'
    table = result.proportion if result.proportion.ndim == 2 else result.proportion.reshape(result.shape[0], -1)
    rows = np.sort(np.argsort(-table.sum(axis=1), kind="stable")[:MAX_HEATMAP_CATEGORIES])
    cols = np.sort(np.argsort(-table.sum(axis=0), kind="stable")[:MAX_HEATMAP_CATEGORIES])
    labels_y = [result.categories[0][i] for i in rows]
    if result.proportion.ndim == 2:
        labels_x = [result.categories[1][j] for j in cols]
    else:  # three variables: the last two flattened
        pairs = [(a, b) for a in result.categories[1] for b in result.categories[2]]
        labels_x = [f"{pairs[j][0]} / {pairs[j][1]}" for j in cols]
    panels = [("estimate", table)]
    if truth is not None:
        panels.append(("truth", truth.reshape(table.shape)))
    top = max(float(p[1][np.ix_(rows, cols)].max()) for p in panels) or 1.0
    fig = Figure(figsize=(3.2 + 0.35 * len(cols) * len(panels), 1.6 + 0.28 * len(rows)))
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    image = None
    for ax, (name, values) in zip(axes, panels):
        sub = values[np.ix_(rows, cols)]
        image = ax.imshow(sub, cmap="viridis", vmin=0.0, vmax=top, aspect="auto")
        ax.set_title(name)
        ax.set_xticks(range(len(cols)), labels_x, rotation=60, ha="right", fontsize=7)
        ax.set_yticks(range(len(rows)), labels_y if ax is axes[0] else [], fontsize=7)
        ax.set_xlabel(" / ".join(result.variables[1:]))
        if len(rows) * len(cols) <= 200:
            for i in range(len(rows)):
                for j in range(len(cols)):
                    ax.text(j, i, f"{sub[i, j]:.2f}", ha="center", va="center", fontsize=6,
                            color="white" if sub[i, j] < 0.6 * top else "black")
    axes[0].set_ylabel(result.variables[0])
    if image is not None:
        fig.colorbar(image, ax=list(axes), shrink=0.8, label="share of clients")
    return _png(fig)


def render_association_report(*, result: AssociationResult, params: Params, kinds: Sequence[str],
                              truth: npt.NDArray[np.float64] | None = None, metrics: Mapping[str, Any] | None = None,
                              details: Mapping[str, Any] | None = None,
                              title: str = "RAPPOR association analysis") -> str:
    """The HTML text of the report: collection, parameters, privacy, fit, heat maps, joint table."""
    cost = multi_variable_privacy(params, kinds)
    privacy_rows = [[name, kind, e1, einf] for name, kind, e1, einf in
                    zip(result.variables, kinds, cost.epsilon_one, cost.epsilon_inf)]
    privacy_rows.append(["all (epsilons add)", "", cost.total_epsilon_one, cost.total_epsilon_inf])
    test = result.independence
    fit_rows: list[list[Any]] = [
        ["reports", result.n_reports], ["distinct (cohort, bits) patterns", result.n_patterns],
        ["table", " x ".join(str(c) for c in result.shape)], ["method", result.method],
        ["iterations", result.iterations], ["converged", result.converged],
        ["log-likelihood gap (certified)", result.gap],
    ]
    if test is not None:
        fit_rows += [["independence: likelihood ratio", test.statistic], ["degrees of freedom", test.df],
                     ["p-value", test.pvalue]]
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{html.escape(title)}</title>", f"<style>{_STYLE}</style></head><body>",
             f"<h1>{html.escape(title)}</h1>"]
    if details:
        parts += ["<h2>Collection</h2>", _table(list(details.items()))]
    parts += ["<h2>Parameters</h2>",
              _table([[params.k, params.h, params.m, params.p, params.q, params.f]], ["k", "h", "m", "p", "q", "f"]),
              "<h2>Privacy of one client</h2>",
              _table(privacy_rows, ["variable", "kind", "epsilon one report", "epsilon permanent"]),
              "<h2>Fit</h2>", _table(fit_rows)]
    if metrics:
        parts += ["<h2>Accuracy against the truth</h2>", _table(list(metrics.items()))]
    parts += ["<h2>Joint distribution</h2>", '<div class="figs">', _heatmaps(result, truth), "</div>"]
    table = result.table()
    names = list(table.dtype.names or ())
    rows = [[row[n] if i < len(result.variables) else float(row[n]) for i, n in enumerate(names)] for row in table]
    header = names
    if truth is not None:
        header = names + ["true proportion"]
        rows = [r + [float(t)] for r, t in zip(rows, truth.reshape(-1))]
    parts += ["<h2>Table</h2>", _table(rows, header, text_columns=tuple(range(1, len(result.variables))))]
    parts.append("</body></html>\n")
    return "\n".join(parts)


def write_association_report(path: PathLike, **kwargs: Any) -> None:
    """Write :func:`render_association_report` to ``path`` atomically."""
    text = render_association_report(**kwargs)
    with atomic_output(path) as fh:
        fh.write(text)
