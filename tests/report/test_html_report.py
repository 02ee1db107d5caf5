"""Tests for rappor.report._html: the page parses, every embedded image is a PNG, and headless
Chromium renders it through Playwright (where a Chromium is installed; skipped, saying how to get
one, where not)."""

from __future__ import annotations

import base64
import os
import shutil
import struct
import sys
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from rappor import hash_candidates
from rappor.cli import main
from rappor.report._html import render_report, write_report
from rappor.analysis._metrics import evaluate
from rappor.simulation import Population, simulate


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.images: list[str] = []
        self.links: list[str] = []
        self.tables = 0
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs.get("src", ""))
        if tag == "table":
            self.tables += 1
        for key in ("href", "src"):
            if key in attrs and tag != "img":
                self.links.append(attrs[key])

    def handle_data(self, data):
        self.text.append(data)


def _check_png(src: str) -> tuple[int, int]:
    prefix = "data:image/png;base64,"
    assert src.startswith(prefix)
    data = base64.b64decode(src[len(prefix):], validate=True)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    length, chunk = struct.unpack(">I4s", data[8:16])
    assert chunk == b"IHDR" and length == 13
    width, height = struct.unpack(">II", data[16:24])
    assert width > 0 and height > 0
    return width, height


def _scenario(params):
    pop = Population.zipf(5)
    sim = simulate(params, pop, 3_000, rng=0)
    strings = ["v1", "v2", "v3", "v4", "decoy<1>&"]
    prop = np.array([0.45, 0.2, 0.15, 0.1, 0.0])
    ci = SimpleNamespace(low=prop - 0.05, high=prop + 0.05)
    result = SimpleNamespace(strings=tuple(strings), proportion=prop, estimate=prop * 3000, std_error=np.full(5, 150.0),
                             pvalue=np.array([1e-9, 1e-5, 1e-3, 0.2, 0.9]), significant=np.array([1, 1, 1, 0, 0], bool),
                             confidence_interval=lambda confidence_level=0.95, kind="proportion": ci)
    metrics = evaluate(sim.truth, strings, prop, detected=result.significant, low=ci.low, high=ci.high)
    cmap = hash_candidates(strings, params)
    return sim, result, metrics, cmap


def test_report_parses_and_images_are_png(params, tmp_path):
    pytest.importorskip("matplotlib")
    sim, result, metrics, cmap = _scenario(params)
    path = tmp_path / "report.html"
    write_report(path, params=params, result=result, truth=sim.truth, metrics=metrics, aggregate=sim.aggregate,
                 candidate_map=cmap, details={"clients": sim.n_clients})
    text = path.read_text(encoding="utf-8")
    parser = _Collector()
    parser.feed(text)
    parser.close()
    assert len(parser.images) == 3  # estimates, residuals, epsilon
    for src in parser.images:
        _check_png(src)
    assert parser.links == []  # nothing loaded from elsewhere
    assert "http://" not in text and "https://" not in text
    body = "".join(parser.text)
    assert "total_variation" in body and "epsilon_inf" in body
    assert "decoy<1>&" in body  # escaped in the source, intact once parsed
    assert "decoy<1>&" not in text
    assert parser.tables >= 4


def test_report_without_result_has_privacy_section(params):
    text = render_report(params=params)
    assert "<h2>Privacy</h2>" in text and "<h2>Results</h2>" not in text


def test_report_without_matplotlib_says_so(params, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # `import matplotlib.figure` fails
    text = render_report(params=params)
    assert "matplotlib is needed for plots: pip install &#x27;rappor[plot]&#x27;." in text and "<img" not in text


#: Where the browser test finds Chromium: $RAPPOR_CHROMIUM, else Debian's package.
_CHROMIUM = Path(os.environ.get("RAPPOR_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium")
_HOW_TO_GET_A_BROWSER = ("install Debian's chromium (apt-get install -y chromium, as .ci/run does) or point "
                         "RAPPOR_CHROMIUM at a Chromium executable; Playwright comes with the test extra "
                         "(pip install -e '.[test]'); 'playwright install' is not needed")
#: The browser window: a laptop's.
_VIEWPORT = {"width": 1280, "height": 900}


def _browser():
    """Playwright's entry point for a headless Chromium, or a skip saying how to get one."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs Playwright: " + _HOW_TO_GET_A_BROWSER)
    if not _CHROMIUM.exists():
        pytest.skip(f"needs a Chromium at {_CHROMIUM}: {_HOW_TO_GET_A_BROWSER}")
    return sync_api.sync_playwright


def _render(browser_api, page_path: Path, shots: Path, name: str) -> dict:
    """Open a report in headless Chromium; measure its images and widths; keep two screenshots
    (``NAME.png``, the first screen, and ``NAME-figures.png``, the figures)."""
    with browser_api() as playwright:
        browser = playwright.chromium.launch(executable_path=str(_CHROMIUM), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport=_VIEWPORT)
            page.goto(page_path.as_uri())
            page.wait_for_load_state("load")
            seen = page.evaluate("""({
                images: Array.from(document.images).map(img => ({
                    alt: img.alt, complete: img.complete, natural: img.naturalWidth, shown: img.width,
                    right: img.getBoundingClientRect().right})),
                page: document.documentElement.scrollWidth, window: document.documentElement.clientWidth,
                boxes: Array.from(document.querySelectorAll('.wide')).map(d => d.scrollWidth - d.clientWidth),
                captions: document.querySelectorAll('figure figcaption').length})""")
            page.screenshot(path=str(shots / f"{name}.png"))
            page.locator(".figs").screenshot(path=str(shots / f"{name}-figures.png"))
        finally:
            browser.close()
    for suffix in ("", "-figures"):
        _check_png("data:image/png;base64," + base64.b64encode((shots / f"{name}{suffix}.png").read_bytes()).decode())
    return seen


def _check_layout(seen: dict, n_images: int) -> None:
    """Every figure decoded, described and captioned, shown at its own size (labels drawn at
    10 pt and 100 dpi stay about 14 px high), inside the window; no sideways scrolling."""
    assert len(seen["images"]) == n_images == seen["captions"], seen
    for img in seen["images"]:
        assert img["complete"] and img["natural"] > 0, img  # decoded
        assert img["alt"], img
        assert img["shown"] >= 0.95 * img["natural"], img  # not scaled down: labels keep their size
        assert img["right"] <= _VIEWPORT["width"], img
    assert seen["page"] <= seen["window"], seen  # no horizontal scroll bar
    assert all(extra <= 0 for extra in seen["boxes"]), seen  # every table fits too


def test_report_renders_in_headless_chromium(tmp_path):
    """The README's demo report in a real browser (screenshots kept in $RAPPOR_SCREENSHOTS:
    docs/images/ holds report.png and report-figures.png made so)."""
    pytest.importorskip("matplotlib")
    browser_api = _browser()
    out = tmp_path / "demo"
    assert main(["simulate", "--out", str(out)]) == 0  # the README's demo, as written
    seen = _render(browser_api, out / "report.html", Path(os.environ.get("RAPPOR_SCREENSHOTS") or tmp_path), "report")
    _check_layout(seen, 3)


def test_association_report_renders_in_headless_chromium(tmp_path):
    """The association demo's heat maps, shown unscaled (cell labels at 8 pt or more are drawn only where they fit)."""
    pytest.importorskip("matplotlib")
    browser_api = _browser()
    out = tmp_path / "assoc"
    assert main(["simulate-assoc", "--pair", "string-string", "--clients", "50000", "--unique", "8", "--unique2",
                 "6", "--out", str(out)]) == 0
    seen = _render(browser_api, out / "report.html", Path(os.environ.get("RAPPOR_SCREENSHOTS") or tmp_path),
                   "association")
    _check_layout(seen, 1)


def _text(page: str) -> str:
    parser = _Collector()
    parser.feed(page)
    return " ".join(" ".join(parser.text).split())


def _decoded_page() -> tuple[str, object]:
    from rappor import Decoder, Params
    from rappor.analysis._metrics import evaluate_result

    params = Params(k=16, h=2, m=64, p=0.5, q=0.75, f=0.5)
    sim = simulate(params, Population.zipf(100), 100_000, rng=0)
    cmap = hash_candidates([f"v{i}" for i in range(1, 101)], params)
    result = Decoder().decode(sim.aggregate, cmap)
    page = render_report(params=params, result=result, truth=sim.truth, metrics=evaluate_result(result, sim.truth),
                         aggregate=sim.aggregate, candidate_map=cmap)
    return _text(page), result


def test_report_residual_heat_map_is_the_tested_fit():
    """Issue 16: the heat map was of the detected strings only (mean +0.60, mostly red) while the summary
    tested the fit with every share.  The caption now states whose residuals they are, with the summary's
    chi-square and its p-value, and their mean is about 0 (1,024 cells: 4 SE = 0.125)."""
    import re

    pytest.importorskip("matplotlib")
    text, result = _decoded_page()
    residual = result.summary()["residual"]
    assert "Residual heat map: standardized residuals per (cohort, bit) of the least-squares fit" in text
    assert f"Sum of squares {residual['chi2']:.1f} on {residual['dof']} degrees of freedom" in text
    (mean,) = re.findall(r"Residual heat map.*?; mean ([+-][0-9.]+)", text)
    assert abs(float(mean)) < 0.125


def test_report_says_what_decided_detected():
    """The level, the correction and the p-value threshold it comes to, next to the p-values."""
    text, result = _decoded_page()
    threshold = result.pvalue[result.significant].max()
    assert "Detected (7): adjusted p-value <= 0.05 (the significance level), adjusted by Benjamini-Hochberg" in text
    text = text.replace("_ ", "_")  # column names break after underscores (<wbr>)
    assert f"pvalue (passes if \u2264 {threshold:.3g})" in text and "adjusted_pvalue (passes if \u2264 0.05)" in text
    # The decoder's summary and the accuracy metrics use one meaning of "unexplained mass".
    summary = result.summary()
    assert "unexplained_mass estimated share of reports the candidates do not explain" in text
    assert "unallocated_mass 1 - allocated_mass" in text
    assert f"{summary['unexplained_mass']:.4g}" in text


def test_report_notes_ties_at_the_null_floor(data_dir):
    from rappor import Decoder
    from rappor.formats import read_counts, read_params

    sample = data_dir.parent.parent / "data" / "sample"
    params = read_params(sample / "params.csv")
    agg = read_counts(sample / "counts.csv", params)
    result = Decoder().decode(agg, hash_candidates((sample / "candidates.txt").read_text().split(), params))
    text = _text(render_report(params=params, result=result))
    assert "Tied p-values: v1, v2 share the p-value" in text and "floor of the random-string null" in text
