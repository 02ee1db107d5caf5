"""One self-contained ``report.html`` for a decoded (simulated or real) collection.

The page holds the parameters and their privacy figures, the decoder's summary (the
unexplained mass, the residual chi-square test), the accuracy metrics with their meanings
(when the truth is known), the plots of :mod:`rappor.report._plots` embedded as base64 PNG images
(the residual heat map is that of the model the summary tests), and the results table
with the rule that decided "detected" and the p-value threshold it comes to.  It loads nothing from the network: no scripts, fonts or styles
from elsewhere, so it can be mailed or archived as one file.  Plots need matplotlib;
without it the page is written without them and says so.
"""

from __future__ import annotations

import base64
import html
import io
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from . import _plots as plots
from ._explain import detection_rule, floor_tie, outlook_text
from .._util.outputs import atomic_output
from .._util.paths import PathLike
from .._util.lazy import import_optional
from ..exceptions import MissingDependencyError
from ..analysis._metrics import METRIC_MEANINGS, Metrics, _detected_mask, _share_interval, fit_residuals
from ..params import Params
from ..privacy._accounting import loss

__all__ = ["render_report", "write_report"]

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; padding: 0 1em; max-width: 72em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.9em; font-variant-numeric: tabular-nums; }
td, th { padding: 0.2em 0.7em; border-bottom: 1px solid #eee; text-align: right; vertical-align: top; }
th { border-bottom: 1px solid #999; white-space: nowrap; }
td:first-child, th:first-child { text-align: left; }
td.text, th.text { text-align: left; color: #555; }
tr.detected { background: #eef5fb; } tr.detected td:first-child { font-weight: bold; }
code { font-size: 0.95em; }
.figs { display: flex; flex-wrap: wrap; align-items: flex-start; gap: 1em 2em; }
.figs img { max-width: 100%; height: auto; }
figure { margin: 0; max-width: 40em; }
.note { color: #666; font-size: 0.9em; }
"""


def _fmt(value: Any) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if math.isnan(v):
            return "&ndash;"
        if math.isinf(v):
            return "&infin;" if v > 0 else "&minus;&infin;"
        if 1e4 <= abs(v) < 1e15:  # counts: 20,750 rather than 2.075e+04
            return f"{v:,.0f}"
        return f"{v:.4g}"
    if value is None:
        return "&ndash;"
    return html.escape(str(value))


def _table(rows: Sequence[Sequence[Any]], header: Sequence[str] | None = None, *,
           row_classes: Sequence[str] | None = None, text_columns: Sequence[int] = ()) -> str:
    """An HTML table; columns in ``text_columns`` (after the first) are left-aligned prose."""
    def cell(tag: str, j: int, content: str) -> str:
        return f'<{tag} class="text">{content}</{tag}>' if j in text_columns else f"<{tag}>{content}</{tag}>"

    out = ["<table>"]
    if header:
        out.append("<tr>" + "".join(cell("th", j, html.escape(h)) for j, h in enumerate(header)) + "</tr>")
    for i, row in enumerate(rows):
        cls = f' class="{row_classes[i]}"' if row_classes and row_classes[i] else ""
        out.append(f"<tr{cls}>" + "".join(cell("td", j, _fmt(v)) for j, v in enumerate(row)) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'<img alt="" src="data:image/png;base64,{data}">'


def _figures(params: Params, result: Any, truth: Mapping[str, int] | None, aggregate: Any,
             candidate_map: Any) -> list[str]:
    try:
        Figure = import_optional("matplotlib.figure", "plots").Figure  # noqa: N806 - a class
    except MissingDependencyError as exc:
        return [f'<p class="note">{html.escape(str(exc))}</p>']
    images = []
    if result is not None:
        fig = Figure(figsize=(7, 5))
        plots.plot_estimates(result, truth, ax=fig.add_subplot())
        images.append(_png(fig))
        if aggregate is not None and candidate_map is not None:
            fig = Figure(figsize=(7, 4))
            plots.plot_fit_residuals(result, aggregate, candidate_map, ax=fig.add_subplot())
            images.append(_figure(_png(fig), _residual_caption(result, aggregate, candidate_map)))
    fig = Figure(figsize=(7, 4))
    plots.plot_epsilon(params, ax=fig.add_subplot())
    images.append(_png(fig))
    return images


def _figure(image: str, caption: str) -> str:
    return f'<figure>{image}<figcaption class="note">{caption}</figcaption></figure>'


def _residual_caption(result: Any, aggregate: Any, candidate_map: Any) -> str:
    """What the heat map shows: whose residuals, their chi-square and its test, their balance."""
    fit = fit_residuals(result, aggregate, candidate_map)
    res = fit.residuals[np.isfinite(fit.residuals)]
    summary = _summary(result)
    text = (f"Residual heat map: standardized residuals per (cohort, bit) of {html.escape(fit.model)}; the "
            f"non-candidate column's coefficient in this model is {fit.unexplained_mass:.3f}")
    if summary.get("unexplained_mass") is not None:
        text += (f" (the summary's unexplained_mass, {_fmt(summary['unexplained_mass'])}, is a separate, "
                 "unconstrained estimate: docs/decoder.md, Method 3)")
    text += f". Sum of squares {fit.chi2:.1f}"
    residual = summary.get("residual") or {}
    if residual.get("dof"):
        text += f" on {residual['dof']} degrees of freedom, p = {_fmt(residual.get('chi2_pvalue'))}"
    if res.size:
        text += (f"; mean {res.mean():+.3f}, {np.mean(res > 0):.0%} positive, largest |r| {np.abs(res).max():.2f} "
                 "(a fitting model: mean about 0, half positive, |r| rarely above 3-4).")
    return text


def _summary(result: Any) -> dict[str, Any]:
    summary = getattr(result, "summary", None)
    return dict(summary()) if callable(summary) else {}


def _summary_rows(result: Any) -> list[tuple[str, str, Any]]:
    """Rows ``(key, meaning, value)`` of ``result.summary()``: masses, the residual test, the configuration."""
    s = _summary(result)
    if not s:
        return []
    residual = s.get("residual") or {}
    rows: list[tuple[str, str, Any]] = [
        ("detected", "candidates reported as present", s.get("detected")),
        ("allocated_mass", "sum of the detected strings' estimated shares", s.get("allocated_mass")),
        ("unexplained_mass", "estimated share of reports the candidates do not explain (the non-candidate "
         "column; after screening, the detected candidates)", s.get("unexplained_mass")),
        ("unexplained_std_error", "its standard error", s.get("unexplained_std_error")),
        ("residual chi2", "sum of squared standardized residuals of the least-squares fit", residual.get("chi2")),
        ("residual dof", "its degrees of freedom", residual.get("dof")),
        ("residual chi2_pvalue", "P(chi-square >= chi2) if the model fits (small: missing strings or a poor fit)",
         residual.get("chi2_pvalue")),
        ("significance_level", "level the adjusted p-values are compared with", s.get("significance_level")),
        ("correction", "multiple-testing correction", s.get("correction")),
        ("estimator", "least-squares (the test decides)", s.get("estimator")),
    ]
    return rows


def _privacy_rows(params: Params) -> list[tuple[str, str, Any]]:
    """Rows ``(measure, meaning, value)``: :meth:`PrivacyLoss.table` and the bit probabilities."""
    return [*loss(params).table(), ("p11", "P(report bit 1 | Bloom bit 1)", params.p11),
            ("p01", "P(report bit 1 | Bloom bit 0)", params.p01)]


def _result_rows(result: Any, truth: Mapping[str, int] | None, max_rows: int) -> tuple[list[str], list[list[Any]],
                                                                                         list[str]]:
    strings = list(result.strings)
    est = np.asarray(result.proportion, dtype=np.float64)
    detected = _detected_mask(result)
    ci = _share_interval(result, 0.95) if callable(getattr(result, "confidence_interval", None)) else None
    rule = _rule(result)
    columns: list[tuple[str, Any]] = []
    for name in ("estimate", "std_error"):
        if getattr(result, name, None) is not None:
            columns.append((name, np.asarray(getattr(result, name), dtype=np.float64)))
    columns.append(("proportion", est))
    if getattr(result, "prop_std_error", None) is not None:
        columns.append(("prop_std_error", np.asarray(result.prop_std_error, dtype=np.float64)))
    if ci is not None:
        columns += [("prop_low_95", ci[0]), ("prop_high_95", ci[1])]
    if getattr(result, "pvalue", None) is not None:
        label = "pvalue"
        if rule is not None and math.isfinite(rule.pvalue_threshold):
            label = f"pvalue (passes if <= {rule.pvalue_threshold:.3g})"
        columns.append((label, np.asarray(result.pvalue, dtype=np.float64)))
    if getattr(result, "adjusted_pvalue", None) is not None and rule is not None:
        columns.append((f"adjusted pvalue (passes if <= {rule.level:g})",
                        np.asarray(result.adjusted_pvalue, dtype=np.float64)))
    header = ["string"] + [name for name, _ in columns] + ["detected"]
    total = sum(truth.values()) if truth else 0
    if truth:
        header.append("true proportion")
    order = np.lexsort((-est, ~detected))[:max_rows]
    rows, classes = [], []
    for i in order:
        row: list[Any] = [strings[i]] + [col[i] for _, col in columns] + [bool(detected[i])]
        if truth:
            row.append(truth.get(strings[i], 0) / total)
        rows.append(row)
        classes.append("detected" if detected[i] else "")
    return header, rows, classes


def _rule(result: Any) -> Any:
    """:func:`rappor.report._explain.detection_rule`, or None for a result without the test's fields."""
    needed = ("pvalue", "significant", "significance_level", "correction")
    return detection_rule(result) if all(getattr(result, name, None) is not None for name in needed) else None


def _result_notes(result: Any, shown: int) -> list[str]:
    notes = [f"{shown} of {len(result.strings)} candidates, detected first."]
    rule = _rule(result)
    if rule is not None:
        notes.append(html.escape(rule.text))
    tie = floor_tie(result) if getattr(result, "pvalue", None) is not None else None
    if tie is not None:
        notes.append("Tied p-values: " + html.escape(tie.text))
    return [f'<p class="note">{note}</p>' for note in notes]


def _outlook_parts(outlook: Any, params: Params, result: Any, metrics: Metrics | None) -> list[str]:
    """The planner's outlook (:func:`rappor.privacy.detection_outlook`): its text, and found vs expected."""
    found = int(_detected_mask(result).sum()) if result is not None else None
    rows: list[tuple[str, str, Any]] = [
        ("smallest detectable share", "share detected with probability 1/2 at this size (the planner)",
         outlook.frequency),
        ("smallest detected share", "smallest true share among the detected strings",
         metrics.smallest_detected if metrics is not None else None),
        ("expected detected", "true candidates a decode of this size finds, on average (the planner)",
         outlook.expected),
        ("detected", "found by this decode", found),
        ("true candidates above", "true candidates with a share at least the detectable one", outlook.above),
    ]
    return [f'<p class="note">{html.escape(outlook_text(outlook, params, found=found))}</p>',
            _table(rows, ["figure", "meaning", "value"], text_columns=(1,))]


def render_report(*, params: Params, result: Any = None, truth: Mapping[str, int] | None = None,
                  metrics: Metrics | None = None, aggregate: Any = None, candidate_map: Any = None,
                  title: str = "RAPPOR report", details: Mapping[str, Any] | None = None,
                  max_rows: int = 500, outlook: Any = None) -> str:
    """The HTML text of a self-contained report (see :func:`write_report`)."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    if details:
        parts += ["<h2>Collection</h2>", _table(list(details.items()))]
    parts += ["<h2>Parameters</h2>",
              _table([[params.k, params.h, params.m, params.p, params.q, params.f]], ["k", "h", "m", "p", "q", "f"]),
              "<h2>Privacy</h2>", _table(_privacy_rows(params), ["measure", "meaning", "value"], text_columns=(1,))]
    if result is not None and _summary_rows(result):
        parts += ["<h2>Decoder summary</h2>", _table(_summary_rows(result), ["key (summary())", "meaning", "value"],
                                                     text_columns=(1,))]
    if outlook is not None:
        parts += ["<h2>What a decode of this size can find</h2>", *_outlook_parts(outlook, params, result, metrics)]
    if metrics is not None:
        meanings = [(key, METRIC_MEANINGS.get(key, ""), value) for key, value in metrics.as_dict().items()]
        parts += ["<h2>Accuracy against the truth</h2>",
                  _table(meanings, ["metric", "meaning", "value"], text_columns=(1,))]
    parts += ['<h2>Plots</h2><div class="figs">', *_figures(params, result, truth, aggregate, candidate_map), "</div>"]
    if result is not None:
        header, rows, classes = _result_rows(result, truth, max_rows)
        parts += ["<h2>Results</h2>", *_result_notes(result, len(rows)), _table(rows, header, row_classes=classes)]
    parts.append("</body></html>\n")
    return "\n".join(parts)


def write_report(path: PathLike, **kwargs: Any) -> None:
    """Write :func:`render_report` to ``path`` atomically.

    Parameters
    ----------
    path : str or os.PathLike
    **kwargs
        ``params`` (required), ``result`` (a DecodeResult), ``truth`` (true counts),
        ``metrics``, ``aggregate`` and ``candidate_map`` (for the residual plot),
        ``title``, ``details`` (extra rows describing the collection), ``max_rows``, ``outlook``
        (a :class:`rappor.privacy.DetectionOutlook`: what a decode of this size can find).
    """
    text = render_report(**kwargs)
    with atomic_output(path) as fh:
        fh.write(text)
