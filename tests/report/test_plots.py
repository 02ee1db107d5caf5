"""Tests for rappor.report._plots (skipped without matplotlib)."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from rappor import Params, hash_candidates  # noqa: E402
from rappor.report._plots import plot_epsilon, plot_estimates, plot_fit_residuals, plot_residuals  # noqa: E402
from rappor.simulation import Population, simulate  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _result():
    ci = SimpleNamespace(low=np.array([0.4, 0.2, -0.05]), high=np.array([0.6, 0.4, 0.05]))
    return SimpleNamespace(strings=("a", "b", "decoy"), proportion=np.array([0.5, 0.3, 0.0]),
                           significant=np.array([True, True, False]),
                           confidence_interval=lambda confidence_level=0.95, kind="proportion": ci)


def test_plot_estimates_with_truth_returns_given_axes():
    fig, ax = plt.subplots()
    out = plot_estimates(_result(), {"a": 55, "b": 45}, ax=ax)
    assert out is ax
    assert "true" in ax.get_xlabel()
    assert len(ax.lines) >= 1  # the y = x line


def test_plot_estimates_without_truth_creates_axes():
    ax = plot_estimates(_result())
    assert ax.get_xlabel() == "rank"


def test_plot_residuals_heatmap(params):
    pop = Population.zipf(3)
    sim = simulate(params, pop, 2_000, rng=0)
    ax = plot_residuals(sim.aggregate, hash_candidates(list(pop.strings), params), pop.probabilities)
    assert ax.images[0].get_array().shape == (params.m, params.k)


def test_plot_fit_residuals_titles_the_tested_fit(params):
    from rappor import Decoder
    from rappor.analysis._metrics import fit_residuals

    pop = Population.zipf(5)
    sim = simulate(params, pop, 5_000, rng=0)
    cmap = hash_candidates(list(pop.strings), params)
    result = Decoder().decode(sim.aggregate, cmap)
    ax = plot_fit_residuals(result, sim.aggregate, cmap)
    residual = result.summary()["residual"]
    assert ax.get_title().startswith("Residuals of the tested fit")
    assert f"chi-square {residual['chi2']:.1f} on {residual['dof']} dof" in ax.get_title()
    np.testing.assert_array_equal(ax.images[0].get_array(), fit_residuals(result, sim.aggregate, cmap).residuals)


def test_plot_epsilon_curves(params):
    pytest.importorskip("rappor.privacy._accounting")
    ax = plot_epsilon(params, max_reports=10)
    labels = [line.get_label() for line in ax.lines]
    assert any("basic" in label for label in labels)
    assert any("epsilon_inf" in label for label in labels)


def test_import_rappor_does_not_load_matplotlib():
    code = "import sys, rappor, rappor.report._plots; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
