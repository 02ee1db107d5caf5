"""The benchmarks' hooks into private steps record without changing what they compute."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from rappor.testing import ascent_prior, coordinate_ascent


def _regression() -> tuple[sp.csc_matrix, np.ndarray, np.ndarray]:
    # 40 rows, 12 candidates of 0/1 columns; three have a share, the rest none.
    rng = np.random.default_rng(3)
    a = sp.csc_matrix((rng.random((40, 12)) < 0.3).astype(np.float64))
    beta = np.zeros(12)
    beta[:3] = [0.3, 0.2, 0.1]
    b = a @ beta + rng.normal(scale=0.02, size=40)
    return a, b, np.asarray(a.multiply(a).sum(axis=0)).ravel()


def test_ascent_prior_records_the_last_prior_and_changes_nothing() -> None:
    a, b, sq = _regression()
    plain = coordinate_ascent(a, b, sq, np.zeros(12))
    with ascent_prior() as record:
        recorded = coordinate_ascent(a, b, sq, np.zeros(12))
    # The same ascent, to the bit: the hook only wraps two steps.
    np.testing.assert_array_equal(recorded.mean, plain.mean)
    assert recorded.sweeps == plain.sweeps and recorded.dispersion == plain.dispersion
    grid, weights = np.asarray(record["grid"]), np.asarray(record["weights"])
    # A prior: support from 0 upward, weights a probability vector over it (normalized by the
    # step itself, so to rounding).
    assert grid.shape == weights.shape and grid[0] == 0.0 and (np.diff(grid) > 0).all()
    assert (weights >= 0).all() and abs(weights.sum() - 1.0) < 1e-12
    # The hooks are undone after the block: a later ascent records nothing more.
    coordinate_ascent(a, b, 2 * sq, np.zeros(12))
    np.testing.assert_array_equal(record["grid"], grid)


def test_association_other_routes_each_decode_through_the_functions_given_then_undoes() -> None:
    # Repeated reports with strings outside the candidates (as tests/analysis/association/test_clusters.py,
    # one collection): the decoder's Other reaches both functions, which here return the default's
    # result, so the decode is the same to the bit; after the block the defaults are back.
    import rappor
    from rappor.analysis.association import AssociationDecoder, example_joint, simulate_association
    from rappor.analysis.association import _other, _repeats
    from rappor.testing import association_other

    params = rappor.Params(num_bloombits=32, num_hashes=2, num_cohorts=32, prob_p=0.25, prob_q=0.75, prob_f=0.5)
    joint, values, cands = example_joint("string-bool", 50, remove_every=3)
    sim = simulate_association(params, joint, values, 3000, candidates=cands, reports_per_client=30, rng=21)
    plain = AssociationDecoder(rng=0).decode(sim.reports, sim.variables, clients=sim.report_clients)
    before = (_repeats._variable_log_factor, _other.outside_bit_rates)
    calls: list[str] = []

    def factor(default: Any, *args: Any) -> Any:
        calls.append("factor")
        return default(*args)

    def rates(default: Any, *args: Any) -> Any:
        calls.append("rates")
        return default(*args)

    with association_other(client_log_factor=factor, outside_rates=rates):
        routed = AssociationDecoder(rng=0).decode(sim.reports, sim.variables, clients=sim.report_clients)
    assert "factor" in calls and "rates" in calls  # Other by fold: the outside strings showed
    np.testing.assert_array_equal(routed.proportion, plain.proportion)
    assert (_repeats._variable_log_factor, _other.outside_bit_rates) == before
