"""One decode, one story: `rappor simulate`'s report.html, results.csv, metrics.json and printed
table show the same rows, numbers, labels and intervals.

The page is parsed with :mod:`html.parser` (what a browser reads, not the generator's
variables); the HTML shows 4 significant digits (counts of 10,000 and more as whole numbers),
so each of its numbers must equal results.csv's rounded the same way.
"""

from __future__ import annotations

import csv
import json
import math
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from rappor.cli import main


class _Tables(HTMLParser):
    """Every table of the page as rows of cell texts, the header rows included."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.cell: list[str] | None = None
        self.captions: list[str] = []
        self.alts: list[str] = []
        self._in_caption = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self.cell = []
        elif tag == "figcaption":
            self._in_caption = True
            self.captions.append("")
        elif tag == "img":
            self.alts.append(dict(attrs).get("alt") or "")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self.cell is not None:
            self.tables[-1][-1].append(" ".join("".join(self.cell).split()))
            self.cell = None
        elif tag == "figcaption":
            self._in_caption = False

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)
        if self._in_caption:
            self.captions[-1] += data


def _shown(value: str) -> str:
    """A results.csv number as the report shows it (html_report._fmt, after unescaping)."""
    x = float(value.replace("Inf", "inf").replace("NA", "nan"))
    if math.isnan(x):
        return "\u2013"
    if math.isinf(x):
        return "\u221e" if x > 0 else "\u2212\u221e"
    if 1e4 <= abs(x) < 1e15:
        return f"{x:,.0f}"
    return f"{x:.4g}"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The README's demo, smaller: 20,000 clients over 40 Zipf strings and 10 decoys."""
    pytest.importorskip("matplotlib")
    out = tmp_path_factory.mktemp("demo") / "out"
    capture = tmp_path_factory.mktemp("stdout") / "printed.txt"
    import contextlib

    with open(capture, "w", encoding="utf-8") as fh, contextlib.redirect_stdout(fh):
        assert main(["simulate", "--clients", "20000", "--unique", "40", "--decoys", "10", "--seed", "3",
                     "--out", str(out)]) == 0
    return out, capture.read_text(encoding="utf-8")


def _results_table(page: _Tables) -> list[list[str]]:
    (table,) = [t for t in page.tables if t and any(row[:1] == ["string"] for row in t)]
    return table


def test_report_results_table_is_results_csv(demo):
    out, _ = demo
    page = _Tables()
    page.feed((out / "report.html").read_text(encoding="utf-8"))
    table = _results_table(page)
    (header,) = [row for row in table if row[:1] == ["string"]]
    body = table[table.index(header) + 1:]
    with open(out / "results.csv", newline="") as fh:
        saved = list(csv.DictReader(fh))
    # Every row of results.csv, in its order (the demo has fewer than the page's 500).
    assert [row[0] for row in body] == [r["string"] for r in saved]
    names = [cell.split(" (passes if")[0] for cell in header]
    numeric = [name for name in saved[0] if name not in ("string", "detected")]
    assert set(numeric) <= set(names), (numeric, names)
    for row, expected in zip(body, saved):
        cells = dict(zip(names, row))
        for name in numeric:
            assert cells[name] == _shown(expected[name]), (row[0], name, cells[name], expected[name])
        assert cells["detected"] == ("yes" if expected["detected"] == "true" else "no")
    # The interval is about fitted_proportion (its own estimate), and the header says so.
    for r in saved:
        assert float(r["prop_low_95"]) <= float(r["fitted_proportion"]) <= float(r["prop_high_95"]), r
    groups = " ".join(table[0])
    assert "the reported share (empirical-Bayes)" in groups and "the test (least squares)" in groups


def test_report_summary_labels_and_masses_agree(demo):
    out, printed = demo
    text = (out / "report.html").read_text(encoding="utf-8")
    page = _Tables()
    page.feed(text)
    rows = {row[0]: row for table in page.tables for row in table if len(row) == 3}
    saved = json.loads((out / "metrics.json").read_text())
    # The estimators: the test's and the shares', named alike in metrics.json and the page.
    assert saved["simulation"]["estimator"] == "least-squares"
    assert saved["simulation"]["share_estimator"] == "empirical-Bayes"
    assert rows["share_estimator"][2] == "empirical-Bayes" and rows["estimator"][2] == "least-squares"
    # allocated_mass: one number and one meaning in the summary, the metrics and the printout.
    with open(out / "results.csv", newline="") as fh:
        total = sum(float(r["proportion"]) for r in csv.DictReader(fh))
    assert saved["metrics"]["allocated_mass"] == pytest.approx(total, rel=1e-12)
    (meaning,) = {row[1] for table in page.tables for row in table if row[0] == "allocated_mass"}
    assert meaning.startswith("sum of results.csv's proportion column")
    assert [row[2] for table in page.tables for row in table if row[0] == "allocated_mass"] == [
        f"{total:.4g}"] * 2
    (line,) = [line for line in printed.splitlines() if line.startswith("allocated mass")]
    assert f"{total:.4f}" in line and meaning in " ".join(line.split())


def test_printed_table_is_results_csv(demo):
    out, printed = demo
    lines = printed.splitlines()
    header = next(line for line in lines if line.startswith("string"))
    assert header.split() == ["string", "true", "proportion", "fitted_proportion", "95%", "interval", "pvalue",
                              "detected"]
    with open(out / "results.csv", newline="") as fh:
        saved = {r["string"]: r for r in csv.DictReader(fh)}
    rows = [line for line in lines[lines.index(header) + 2:] if re.match(r"^(v|decoy)", line)]
    assert rows
    for line in rows:
        name, _true, share, fitted, low, high, _p, _det = line.replace("[", " ").replace("]", " ").replace(
            ",", " ").split()
        r = saved[name]
        assert (share, fitted, low, high) == tuple(f"{float(r[k]):.4f}" for k in (
            "proportion", "fitted_proportion", "prop_low_95", "prop_high_95"))
    assert "fitted_proportion: the test's least-squares share" in " ".join(printed.split())


def test_report_figures_have_alt_text_and_captions(demo):
    out, _ = demo
    page = _Tables()
    page.feed((out / "report.html").read_text(encoding="utf-8"))
    assert len(page.alts) == 3 and all(len(alt) > 20 for alt in page.alts)
    assert len(page.captions) == 3 and all(len(caption) > 40 for caption in page.captions)
    assert "fitted_proportion" in page.captions[0] and "logarithmic" in page.captions[0]
