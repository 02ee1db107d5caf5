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

#: Resolution of the embedded plots: shown at one image pixel per CSS pixel, a 10 pt label is 14 px high.
_DPI = 100

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; padding: 0 1em; max-width: 72em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.9em; font-variant-numeric: tabular-nums; }
td, th { padding: 0.2em 0.5em; border-bottom: 1px solid #eee; text-align: right; vertical-align: top; }
th { border-bottom: 1px solid #999; }
tr.groups th { border-bottom: 1px solid #ccc; font-weight: normal; }
.wide { overflow-x: auto; max-width: 100%; }
td:first-child, th:first-child { text-align: left; }
td.text, th.text { text-align: left; color: #555; }
tr.detected { background: #eef5fb; } tr.detected td:first-child { font-weight: bold; }
code { font-size: 0.95em; }
.figs { display: flex; flex-wrap: wrap; align-items: flex-start; gap: 1em 2em; }
.figs img { max-width: 100%; height: auto; }
figure { margin: 0; max-width: 100%; } figcaption { max-width: 45em; }
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
           row_classes: Sequence[str] | None = None, text_columns: Sequence[int] = (),
           header_html: str | None = None) -> str:
    """An HTML table (in a box that scrolls sideways rather than widen the page); columns in
    ``text_columns`` (after the first) are left-aligned prose; ``header_html`` replaces the
    header row built from ``header``."""
    def cell(tag: str, j: int, content: str) -> str:
        return f'<{tag} class="text">{content}</{tag}>' if j in text_columns else f"<{tag}>{content}</{tag}>"

    out = ['<div class="wide"><table>']
    if header_html is not None:
        out.append(header_html)
    elif header:
        out.append("<tr>" + "".join(cell("th", j, _name(h)) for j, h in enumerate(header)) + "</tr>")
    for i, row in enumerate(rows):
        cls = f' class="{row_classes[i]}"' if row_classes and row_classes[i] else ""
        out.append(f"<tr{cls}>" + "".join(cell("td", j, _fmt(v)) for j, v in enumerate(row)) + "</tr>")
    out.append("</table></div>")
    return "\n".join(out)


def _name(column: str) -> str:
    """A column name for a header cell: escaped, and free to break after its underscores."""
    return html.escape(column).replace("_", "_<wbr>")


def _png(fig: Any, alt: str) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=_DPI, bbox_inches="tight")
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def _figures(params: Params, result: Any, truth: Mapping[str, int] | None, aggregate: Any,
             candidate_map: Any) -> list[str]:
    """The plots, each a ``<figure>`` with alt text and a caption saying what it shows."""
    try:
        Figure = import_optional("matplotlib.figure", "plots").Figure  # noqa: N806 - a class
    except MissingDependencyError as exc:
        return [f'<p class="note">{html.escape(str(exc))}</p>']
    images = []
    if result is not None:
        fig = Figure(figsize=(7, 5))
        plots.plot_estimates(result, truth, ax=fig.add_subplot())
        images.append(_figure(_png(fig, _ESTIMATES_ALT if truth is not None else _RANKS_ALT),
                              _estimates_caption(result, truth)))
        if aggregate is not None and candidate_map is not None:
            fig = Figure(figsize=(7, 4))
            plots.plot_fit_residuals(result, aggregate, candidate_map, ax=fig.add_subplot())
            images.append(_figure(_png(fig, "Heat map of the standardized residual of every cohort and bit"),
                                  _residual_caption(result, aggregate, candidate_map)))
    fig = Figure(figsize=(7, 4))
    plots.plot_epsilon(params, ax=fig.add_subplot())
    images.append(_figure(_png(fig, "Privacy loss epsilon against the number of reports, by accounting"),
                          "Privacy loss of T reports of changing values by four accountings (log-log axes); "
                          "the dotted line is epsilon_inf, the bound for any number of reports of one value."))
    return images


_ESTIMATES_ALT = "Scatter plot of each candidate's estimated share against its true share, with 95% intervals"
_RANKS_ALT = "Each candidate's estimated share by rank, with 95% intervals"


def _estimates_caption(result: Any, truth: Mapping[str, int] | None) -> str:
    """What the estimates plot draws: which share carries the interval, and the axes' scale."""
    two = getattr(result, "fitted_proportion", None) is not None and not np.allclose(
        np.asarray(result.fitted_proportion, dtype=np.float64), np.asarray(result.proportion, dtype=np.float64),
        equal_nan=True)
    text = ("Estimated against true share of the largest candidates" if truth is not None
            else "Estimated share of the largest candidates by rank")
    if two:
        text += (": dots are the test's least-squares shares (fitted_proportion) with their 95% intervals "
                 "(prop_low_95 to prop_high_95), diamonds the reported shares (proportion, "
                 f"{html.escape(str(getattr(result, 'share_estimator', '')))})")
    else:
        text += ": dots with their 95% intervals (prop_low_95 to prop_high_95)"
    return text + ". Axes are logarithmic above the smallest share shown and linear below it, so shares of 0 sit at 0."


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
        ("allocated_mass", METRIC_MEANINGS["allocated_mass"], s.get("allocated_mass")),
        ("unexplained_mass", "estimated share of reports the candidates do not explain (the non-candidate "
         "column; after screening, the detected candidates)", s.get("unexplained_mass")),
        ("unexplained_std_error", "its standard error", s.get("unexplained_std_error")),
        ("residual chi2", "sum of squared standardized residuals of the least-squares fit", residual.get("chi2")),
        ("residual dof", "its degrees of freedom", residual.get("dof")),
        ("residual chi2_pvalue", "P(chi-square >= chi2) if the model fits (small: missing strings or a poor fit)",
         residual.get("chi2_pvalue")),
        ("significance_level", "level the adjusted p-values are compared with", s.get("significance_level")),
        ("correction", "multiple-testing correction", s.get("correction")),
        ("estimator", "estimator of the test: fitted_proportion, its standard error, interval and p-value",
         s.get("estimator")),
        ("shares", "which candidates get a share: all (every candidate) or detected", s.get("shares")),
        ("share_estimator", "estimator of proportion, the reported shares", s.get("share_estimator")),
    ]
    return rows


def _privacy_rows(params: Params) -> list[tuple[str, str, Any]]:
    """Rows ``(measure, meaning, value)``: :meth:`PrivacyLoss.table` and the bit probabilities."""
    return [*loss(params).table(), ("p11", "P(report bit 1 | Bloom bit 1)", params.p11),
            ("p01", "P(report bit 1 | Bloom bit 0)", params.p01)]


def _result_rows(result: Any, truth: Mapping[str, int] | None, max_rows: int) -> tuple[list[str], list[list[Any]],
                                                                                         list[str]]:
    """Header, rows and row classes of the results table: ``results.csv``'s rows and columns.

    A :class:`~rappor.decoder.DecodeResult` gives the rows of its ``results.csv``
    (:meth:`~rappor.decoder.DecodeResult.ranking`, largest share first) with every column of
    its :meth:`~rappor.decoder.DecodeResult.table` (the interval that of ``results.csv``);
    another result object, the candidates with their shares, detected first.
    """
    strings = list(result.strings)
    detected = _detected_mask(result)
    table_of = getattr(result, "table_array", None)
    ranking = getattr(result, "ranking", None)
    columns: list[tuple[str, Any]] = []
    if callable(table_of) and callable(ranking):
        table = table_of()
        order = np.asarray(ranking(), dtype=np.int64)[:max_rows]
        names = [name for name in _HTML_COLUMNS if name in (table.dtype.names or ())]
        if result.shares == "detected" or np.array_equal(table["proportion"], table["fitted_proportion"],
                                                         equal_nan=True):
            names = [name for name in names if name != "fitted_proportion"]
        columns = [(name, table[name]) for name in names]
    else:
        est = np.asarray(result.proportion, dtype=np.float64)
        ci = _share_interval(result, 0.95) if callable(getattr(result, "confidence_interval", None)) else None
        for name in ("proportion", "estimate", "std_error", "prop_std_error"):
            if getattr(result, name, None) is not None:
                columns.append((name, np.asarray(getattr(result, name), dtype=np.float64)))
        if ci is not None:
            columns += [("prop_low_95", ci[0]), ("prop_high_95", ci[1])]
        for name in ("pvalue", "adjusted_pvalue"):
            if getattr(result, name, None) is not None:
                columns.append((name, np.asarray(getattr(result, name), dtype=np.float64)))
        order = np.lexsort((-est, ~detected))[:max_rows]
    header = ["string"] + [name for name, _ in columns] + ["detected"]
    total = sum(truth.values()) if truth else 0
    if truth:
        header.append("true proportion")
    rows, classes = [], []
    for i in order:
        row: list[Any] = [strings[i]] + [col[i] for _, col in columns] + [bool(detected[i])]
        if truth:
            row.append(truth.get(strings[i], 0) / total)
        rows.append(row)
        classes.append("detected" if detected[i] else "")
    return header, rows, classes


#: The results table's columns, in the order shown: the reported share, then the test's.
_HTML_COLUMNS = ("proportion", "estimate", "fitted_proportion", "std_error", "prop_std_error", "prop_low_95",
                 "prop_high_95", "pvalue", "adjusted_pvalue")


def _result_header(result: Any, header: Sequence[str]) -> str:
    """The results table's two header rows: which estimator each group of columns belongs to, then the
    columns (``results.csv``'s names), with the pass threshold of the p-values."""
    rule = _rule(result)
    notes = {}
    if rule is not None:
        if math.isfinite(rule.pvalue_threshold):
            notes["pvalue"] = f"passes if &le; {rule.pvalue_threshold:.3g}"
        notes["adjusted_pvalue"] = f"passes if &le; {rule.level:g}"
    cells = "".join(f"<th>{_name(name)}" + (f' <br><span class="note">({notes[name]})</span>' if name in notes
                                                   else "") + "</th>" for name in header)
    groups = ""
    if "fitted_proportion" in header:
        share = html.escape(str(getattr(result, "share_estimator", "")))
        test = header.index("fitted_proportion")
        last = max(header.index(name) for name in header if name in _HTML_COLUMNS)
        groups = (f'<tr class="groups"><th></th><th colspan="{test - 1}" class="text">the reported share '
                  f"({share}): the distribution</th>"
                  f'<th colspan="{last - test + 1}" class="text">the test (least squares): its share, standard '
                  "errors, 95% interval and p-values</th>"
                  f'<th colspan="{len(header) - last - 1}"></th></tr>')
    return groups + f"<tr>{cells}</tr>"


def _rule(result: Any) -> Any:
    """:func:`rappor.report._explain.detection_rule`, or None for a result without the test's fields."""
    needed = ("pvalue", "significant", "significance_level", "correction")
    return detection_rule(result) if all(getattr(result, name, None) is not None for name in needed) else None


def _result_notes(result: Any, shown: int) -> list[str]:
    if callable(getattr(result, "ranking", None)):
        rows = len(result.ranking())
        notes = [f"The rows of results.csv, largest share first: {shown} of {rows} shown "
                 f"({len(result.strings)} candidates; results.csv lists "
                 + ("those detected)." if result.shares == "detected" else "those with a share or detected).")]
    else:
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
        parts += ["<h2>Results</h2>", *_result_notes(result, len(rows)),
                  _table(rows, header, row_classes=classes, header_html=_result_header(result, header))]
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
