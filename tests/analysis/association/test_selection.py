"""Where choosing the categories from the same reports moves the table, and the intervals that cover it."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np

from rappor import Params
from rappor.analysis.association import AssociationDecoder, example_joint, simulate_association
from rappor.analysis.association._inference import constrained_covariance
from rappor.analysis.association._selection import marginal_other_table, selection_shift


def _covariance(cells: int, seed: int) -> np.ndarray:
    """The inverse of a random positive definite information on the simplex."""
    rng = np.random.default_rng(seed)
    root = rng.normal(size=(3 * cells, cells))
    return constrained_covariance(root.T @ root)


def test_selection_shift_lowers_each_detected_total_by_its_excess() -> None:
    # The likelihood's quadratic maximum with each excess category's total lowered by its
    # excess: those totals move by exactly -delta (to rounding), the table's sum does not
    # move (the covariance lives on the simplex), the categories without excess are free.
    cov = _covariance(8, 0)
    shift = selection_shift(cov, (4, 2), [np.array([0.01, 0.0, 0.02, 0.0]), None])
    assert shift is not None and shift.shape == (4, 2)
    np.testing.assert_allclose(shift.sum(axis=1)[[0, 2]], [0.01, 0.02], atol=1e-12)
    assert abs(shift.sum()) < 1e-12
    assert np.abs(shift[[1, 3]]).sum() > 1e-6


def test_selection_shift_is_none_without_excess_or_resolved_covariance() -> None:
    cov = _covariance(6, 1)
    assert selection_shift(cov, (3, 2), [np.zeros(3), None]) is None
    assert selection_shift(cov, (3, 2), [None, None]) is None
    cov[0, :] = cov[:, 0] = np.inf
    assert selection_shift(cov, (3, 2), [np.array([0.01, 0.0, 0.0]), None]) is None


def test_intervals_cover_the_table_moved_by_the_selection() -> None:
    # A string x boolean decode whose categories are detected: its intervals are the union of
    # the signed maximum's and the same around the moved table -- never narrower than without
    # the move, wider somewhere; with every candidate in the table nothing is selected.
    params = Params(num_bloombits=16, num_hashes=2, num_cohorts=16, prob_p=0.25, prob_q=0.75, prob_f=0.5)
    share = np.r_[0.3, 0.2, 0.1, np.full(6, 0.05), np.full(5, 0.02), np.zeros(2)]
    share /= share.sum()
    joint = np.stack([0.4 * share, 0.6 * share], axis=1)
    names = [f"s{i}" for i in range(len(share))]
    sim = simulate_association(params, joint, [names, None], 50_000, rng=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = AssociationDecoder(independence_test=False).decode(sim.reports, sim.variables)
        every = AssociationDecoder(candidates="all", other="none", independence_test=False).decode(
            sim.reports, sim.variables)
    assert res.selection_shift is not None and every.selection_shift is None
    assert res.signed_covariance is not None  # its diagonal is the signed standard errors' square
    np.testing.assert_allclose(np.sqrt(np.diag(res.signed_covariance)).reshape(res.shape), res.signed_std_error)
    # the detected categories' totals move down by their expected excess, which is >= 0
    excess = res.marginal_results[0].selection_excess()
    columns = [res.marginal_results[0].strings.index(c) for c in res.categories[0][:-1]]
    np.testing.assert_allclose(res.selection_shift.sum(axis=1)[:-1][excess[columns] > 0],
                               excess[columns][excess[columns] > 0], atol=1e-10)
    plain = dataclasses.replace(res, selection_shift=None).confidence_interval()
    ci = res.confidence_interval()
    assert (ci.low <= plain.low).all() and (ci.high >= plain.high).all()
    assert ((ci.low < plain.low) | (ci.high > plain.high)).any()


def test_marginal_other_table_sets_each_other_total_and_moves_the_rest_by_the_covariance() -> None:
    # Both variables strings (Other last on each axis): the moved table's Other totals are the
    # targets (to rounding: the move stays inside [0, 1] here, so nothing is clipped), it sums to 1,
    # and the move is V A (A'VA)^-1 (A't - o) of the quadratic approximation.
    cov = _covariance(12, 1)
    table = np.random.default_rng(2).dirichlet(np.full(12, 5.0)).reshape(4, 3)
    targets = [table[-1].sum() + 0.01, table[:, -1].sum() - 0.005]
    out = marginal_other_table(table, cov, [(0, targets[0]), (1, targets[1])])
    assert out is not None and out[1] == 0.0
    moved = out[0]
    np.testing.assert_allclose([moved[-1].sum(), moved[:, -1].sum()], targets, atol=1e-12)
    assert abs(moved.sum() - 1.0) < 1e-12
    a = np.zeros((12, 2))
    a[np.arange(9, 12), 0] = 1.0
    a[np.arange(2, 12, 3), 1] = 1.0
    delta = a.T @ table.reshape(-1) - np.array(targets)
    np.testing.assert_allclose(moved.reshape(-1), table.reshape(-1) - cov @ a @ np.linalg.solve(a.T @ cov @ a, delta),
                               atol=1e-12)
    # A variable without Other is left alone; none at all gives None.
    one = marginal_other_table(table, cov, [(0, targets[0]), None])
    assert one is not None and abs(one[0][-1].sum() - targets[0]) < 1e-12
    assert marginal_other_table(table, cov, [None, None]) is None


def test_default_decode_reports_the_marginal_decodes_other_total() -> None:
    # String x boolean: the reported Other total is the marginal decode's 1 - (categories' shares)
    # within the mass that the clipping at 0 took off (and rescaling gave back), the boolean split's
    # shrinkage keeps it, and other_share="fit" reports the fit's own table.
    params = Params(num_bloombits=32, num_hashes=2, num_cohorts=16, prob_p=0.25, prob_q=0.75, prob_f=0.5)
    joint, values, cands = example_joint("string-bool", 30)
    sim = simulate_association(params, joint, values, 50_000, candidates=cands, rng=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = AssociationDecoder(independence_test=False).decode(sim.reports, sim.variables)
        fit = AssociationDecoder(independence_test=False, other_share="fit").decode(sim.reports, sim.variables)
    target = res.diagnostics["marginal_other_share"][0]
    assert abs(res.proportion[-1].sum() - target) <= res.diagnostics["marginal_other_clipped"] + 1e-12
    np.testing.assert_allclose(res.maximum_likelihood, fit.maximum_likelihood, atol=1e-12)
    assert abs(fit.proportion[-1].sum() - target) > 1e-3
