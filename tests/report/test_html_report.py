"""Tests for rappor.report._html: the page parses, every embedded image is a PNG, and headless
Chromium renders it (where Debian's chromium is installed)."""

from __future__ import annotations

import base64
import struct
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from rappor import hash_candidates
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


_CHROMIUM = Path("/usr/bin/chromium")


@pytest.mark.skipif(not _CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium")
def test_report_renders_in_headless_chromium(params, tmp_path):
    # A real browser lays the page out and decodes the embedded PNGs: the screenshot must
    # be a PNG of the window size, mostly white page with dark text, and hold the plots'
    # saturated colours (only the decoded images have them; the page itself is grey).
    image = pytest.importorskip("matplotlib.image")
    sim, result, metrics, cmap = _scenario(params)
    page = tmp_path / "report.html"
    write_report(page, params=params, result=result, truth=sim.truth, metrics=metrics, aggregate=sim.aggregate,
                 candidate_map=cmap, details={"clients": sim.n_clients})
    shot = tmp_path / "shot.png"
    cmd = [str(_CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
           f"--screenshot={shot}", "--window-size=1200,2000", page.as_uri()]
    try:
        subprocess.run(cmd, capture_output=True, timeout=90, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail("headless chromium did not finish within 90 s")
    assert shot.exists(), "chromium wrote no screenshot"
    assert _check_png("data:image/png;base64," + base64.b64encode(shot.read_bytes()).decode()) == (1200, 2000)
    rgb = image.imread(shot)[..., :3]
    grey = rgb.mean(axis=2)
    assert (grey > 0.95).mean() > 0.5  # a white page ...
    assert (grey < 0.3).mean() > 0.005  # ... with text on it
    saturation = rgb.max(axis=2) - rgb.min(axis=2)
    assert (saturation > 0.4).sum() > 500  # the plots were decoded and drawn


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
    assert f"pvalue (passes if <= {threshold:.3g})" in text and "adjusted pvalue (passes if <= 0.05)" in text
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
