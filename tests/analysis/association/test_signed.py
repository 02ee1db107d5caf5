"""The signed maximum of the association likelihood and the intervals around it.

Statistical checks use fixed seeds; their tolerances are 4 standard errors of the quantity
checked, derived in a comment next to each.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.special import ndtri

from rappor import Params
from rappor.analysis.association import AssociationDecoder, simulate_association
from rappor.analysis.association import _decoder
from rappor.analysis.association._inference import constrained_covariance
from rappor.analysis.association._mixture import ProductLikelihood, fit_mixture
from rappor.analysis.association._signed import signed_maximum

PARAMS = Params(num_bloombits=16, num_hashes=2, num_cohorts=8, prob_p=0.25, prob_q=0.75, prob_f=0.5)
CANDIDATES = [f"s{i}" for i in range(16)]


def _joint() -> np.ndarray:
    """16 strings x boolean: three large strings, five small ones, eight absent (share 0)."""
    share = np.r_[[0.3, 0.2, 0.1], np.full(5, 0.4 / 13), np.zeros(8)]
    share /= share.sum()
    split = 0.2 + 0.3 * (np.arange(16) % 3)
    return np.stack([share * split, share * (1 - split)], axis=1)


def _decoder_options(**extra: object) -> dict[str, object]:
    return {"candidates": "all", "other": "none", "independence_test": False, "shrinkage": "none", **extra}


def _capture_likelihood(monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """Record the joint fit's likelihood and table (the first fit_mixture call of a decode)."""
    seen: dict[str, object] = {}

    def fit(lik: ProductLikelihood, **kwargs: object) -> object:
        out = fit_mixture(lik, **kwargs)  # type: ignore[arg-type]
        seen.setdefault("lik", lik)
        seen.setdefault("table", out.table.copy())
        return out

    monkeypatch.setattr(_decoder, "fit_mixture", fit)
    return seen


def test_signed_maximum_is_the_stationary_point_on_the_plane(monkeypatch: pytest.MonkeyPatch) -> None:
    # Eight absent strings: the constrained maximum holds some of their cells at 0, the
    # signed one lets them go below.  At the signed maximum the gradient is orthogonal to the
    # plane sum = 1 (every cell's gradient equal, to the Newton tolerance), the table sums to
    # 1, every report's likelihood stays positive, and the log-likelihood is at least the
    # constrained maximum's.
    seen = _capture_likelihood(monkeypatch)
    sim = simulate_association(PARAMS, _joint(), [CANDIDATES, None], 20_000, rng=3)
    res = AssociationDecoder(**_decoder_options()).decode(sim.reports, sim.variables)  # type: ignore[arg-type]
    lik, table = seen["lik"], seen["table"]
    assert isinstance(lik, ProductLikelihood) and isinstance(table, np.ndarray)
    assert res.diagnostics["interval_method"] == "signed maximum"
    assert res.signed_maximum is not None and res.signed_std_error is not None
    x = res.signed_maximum.reshape(-1)
    assert abs(x.sum() - 1.0) < 1e-9
    assert x.min() < 0.0 and table.min() >= 0.0
    d, grad = lik.forward_gradient(x)
    assert (d > 0).all()
    assert lik.log_likelihood(d) >= lik.log_likelihood(lik.forward(table)) - 1e-9
    info = lik.hessian(lik.weights / (d * d))
    cov = constrained_covariance(info)
    # Newton decrement g'Vg / 2 below the tolerance (1e-4 log-likelihood units) it stops at.
    assert 0.5 * float(grad @ cov @ grad) <= 1e-4
    np.testing.assert_allclose(res.signed_std_error.reshape(-1), np.sqrt(np.diag(cov)), rtol=1e-3)
    # The interval is the clipped Wald interval of the signed maximum, widened to hold the estimate.
    ci = res.confidence_interval(0.9)
    half = float(ndtri(0.95)) * res.signed_std_error
    np.testing.assert_allclose(ci.low, np.fmin(np.clip(res.signed_maximum - half, 0, 1), res.proportion), atol=1e-12)
    np.testing.assert_allclose(ci.high, np.fmax(np.clip(res.signed_maximum + half, 0, 1), res.proportion), atol=1e-12)


def test_signed_maximum_equals_the_constrained_one_away_from_the_boundary(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every cell far from 0 (no absent string, 50,000 reports): the constrained maximum is
    # the signed one, so Newton stops at once (or after a step of the fit's tolerance).
    seen = _capture_likelihood(monkeypatch)
    joint = np.array([[0.3, 0.1], [0.1, 0.2], [0.2, 0.1]])
    sim = simulate_association(PARAMS, joint, [["a", "b", "c"], None], 50_000, rng=1)
    res = AssociationDecoder(**_decoder_options()).decode(sim.reports, sim.variables)  # type: ignore[arg-type]
    assert res.signed_maximum is not None and res.signed_std_error is not None
    # The fit is certified within 1e-3 log-likelihood units: within 0.05 standard errors.
    assert np.all(np.abs(res.signed_maximum - res.proportion) <= 0.05 * res.signed_std_error)
    assert res.diagnostics["signed_iterations"] <= 2


def test_signed_maximum_is_none_without_an_interior_maximum() -> None:
    # Unresolved directions (an infinite covariance) and a start outside the domain give None.
    lik = ProductLikelihood([np.array([[0.5, 0.5], [0.6, 0.4]]), np.ones((2, 1))], np.array([3.0, 2.0]))
    table = np.array([0.5, 0.5])
    assert signed_maximum(lik, table, np.full((2, 2), np.inf)) is None
    lik0 = ProductLikelihood([np.array([[1.0, 0.0], [0.0, 1.0]]), np.ones((2, 1))], np.array([3.0, 2.0]))
    assert signed_maximum(lik0, np.array([1.0, 0.0]), np.eye(2)) is None
    # Two reports that each only one category explains: the maximum is at the boundary of
    # the domain (L . pi > 0 for both needs pi in (0, 1)), the interior one is 3/5.
    found = signed_maximum(lik0, np.array([0.5, 0.5]), np.array([[0.05, -0.05], [-0.05, 0.05]]))
    assert found is not None
    np.testing.assert_allclose(found.table, [0.6, 0.4], atol=1e-3)


def test_signed_intervals_cover_at_their_level_in_every_band() -> None:
    # 20 collections of 20,000 clients (fixed seeds), 17 x 2 cells each.  The signed
    # maximum is asymptotically normal around the truth with the inverse information as
    # covariance, also for a share of 0, so:
    # * cells of true share 0: the clipped interval misses only when the signed estimate is
    #   above z se, probability 0.025: coverage about 0.975;
    # * positive cells: 0.95, up to 0.975 for those within a few se of 0 (clipping);
    # * the mean of z = (signed - truth) / se over the absent cells is 0 (the signed
    #   estimate of a share of 0 is centred on it, not held above it).
    # Tolerances: 4 binomial standard errors of the pooled coverage at the level
    # (cells of one table are correlated, the seeds fixed), and for the mean z 4 / sqrt(20)
    # (each seed's mean of correlated standard normals has variance at most 1).
    truths, covered, zs = [], [], []
    dec = AssociationDecoder(**_decoder_options())  # type: ignore[arg-type]
    for seed in range(20):
        sim = simulate_association(PARAMS, _joint(), [CANDIDATES, None], 20_000, rng=100 + seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = dec.decode(sim.reports, sim.variables)
        truth = sim.truth(res.categories)
        ci = res.confidence_interval()
        assert res.signed_maximum is not None and res.signed_std_error is not None
        truths.append(truth.reshape(-1))
        covered.append(((ci.low <= truth) & (truth <= ci.high)).reshape(-1))
        absent = truth.reshape(-1) == 0
        zs.append(float(np.mean(((res.signed_maximum - truth) / res.signed_std_error).reshape(-1)[absent])))
    truth, hit = np.concatenate(truths), np.concatenate(covered)
    zero = truth == 0
    n0, n1 = int(zero.sum()), int((~zero).sum())
    assert n0 >= 300 and n1 >= 300
    assert hit[zero].mean() >= 0.975 - 4 * np.sqrt(0.975 * 0.025 / n0), hit[zero].mean()
    share = float(hit[~zero].mean())
    assert 0.95 - 4 * np.sqrt(0.95 * 0.05 / n1) <= share <= 0.975 + 4 * np.sqrt(0.975 * 0.025 / n1), share
    assert abs(np.mean(zs)) <= 4 / np.sqrt(20), zs
