"""Tests of the passes over the data of ``rappor.analysis.association._mixture``."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pytest

import rappor.analysis.association._threads as threads_module
from rappor import CandidateMap, Params, ReportBatch
from rappor.analysis.association._likelihood import CodedLikelihood, bit_index_table, likelihoods
from rappor.analysis.association._mixture import BLOCK_ROWS, ProductLikelihood, fit_mixture


def _coded(rows: int, seed: int) -> CodedLikelihood:
    """A coded string factor: 12 candidates + Other over ``rows`` patterns."""
    gen = np.random.default_rng(seed)
    params = Params(num_bloombits=16, num_hashes=2, num_cohorts=4, prob_p=0.3, prob_q=0.8, prob_f=0.4)
    k, m = params.num_bloombits, params.num_cohorts
    cmap = CandidateMap.from_indices(params, [f"s{i}" for i in range(12)],
                                     [[c * k + int(b) for c in range(m) for b in gen.integers(0, k, 2)]
                                      for _ in range(12)])
    cohorts = np.sort(gen.integers(0, m, rows))
    batch = ReportBatch.from_bits(params, cohorts, gen.integers(0, 2, size=(rows, k)))
    index, num_bits = bit_index_table(cmap, np.arange(12))
    coded, _ = likelihoods(params, batch.cohorts, batch.words, index, num_bits, gen.uniform(0.2, 0.8, (m, k)))
    assert isinstance(coded, CodedLikelihood)
    return coded


def _coded_by_boolean(rows: int, seed: int) -> ProductLikelihood:
    """:func:`_coded` times a boolean."""
    gen = np.random.default_rng(seed + 1000)
    flag = np.where(gen.random(rows)[:, None] < 0.4, [[0.75, 0.25]], [[0.25, 0.75]])
    return ProductLikelihood([_coded(rows, seed), flag], gen.integers(1, 4, rows).astype(np.float64))


def _coded_alone(rows: int, seed: int) -> ProductLikelihood:
    """:func:`_coded` as the only variable (the Hessian's single-factor Gram)."""
    gen = np.random.default_rng(seed + 2000)
    return ProductLikelihood([_coded(rows, seed)], gen.integers(1, 4, rows).astype(np.float64))


def _coded_by_dense(rows: int, seed: int) -> ProductLikelihood:
    """:func:`_coded` times three categories with a row of their own per pattern (the Hessian over every cell)."""
    gen = np.random.default_rng(seed + 3000)
    return ProductLikelihood([_coded(rows, seed), gen.dirichlet(np.ones(3), rows)],
                             gen.integers(1, 4, rows).astype(np.float64))


# The three ways a pass sums a Hessian: per distinct row of a boolean, one factor, every cell.
LIKELIHOODS = [_coded_by_boolean, _coded_alone, _coded_by_dense]


def test_forward_gradient_is_forward_then_gradient() -> None:
    lik = _coded_by_boolean(3 * BLOCK_ROWS + 17, 0)
    gen = np.random.default_rng(1)
    table, base = gen.dirichlet(np.ones(lik.size)), gen.uniform(0.0, 0.1, lik.rows)
    d, grad = lik.forward_gradient(table)
    np.testing.assert_allclose(d, lik.forward(table), rtol=1e-13)
    np.testing.assert_allclose(grad, lik.gradient(lik.weights / d), rtol=1e-12)
    # With a base (the line search's d at the current table): the gradient at base + L . table.
    delta, grad_at = lik.forward_gradient(table, base=base)
    np.testing.assert_allclose(delta, d, rtol=1e-13)
    np.testing.assert_allclose(grad_at, lik.gradient(lik.weights / (base + d)), rtol=1e-12)


def _every_pass(lik: ProductLikelihood, table: npt.NDArray[np.float64], v: npt.NDArray[np.float64],
                sample: npt.NDArray[np.intp]) -> tuple[npt.NDArray[np.float64], ...]:
    """Every kind of pass over the data: forward, gradient, both fused, the Hessian (all rows and a
    sample) and a whole fit."""
    return (lik.forward(table), lik.gradient(v), lik.forward_gradient(table)[1], lik.hessian(v),
            lik.hessian(v, sample, 2.0), fit_mixture(lik).table)


@pytest.mark.parametrize("make", LIKELIHOODS)
@pytest.mark.parametrize("threads", [2, 3])
def test_passes_on_several_threads_equal_one_thread(monkeypatch: pytest.MonkeyPatch, threads: int,
                                                    make: Callable[[int, int], ProductLikelihood]) -> None:
    # Disjoint row ranges in parallel (each thread its own expansion buffer): the same sums up to
    # the order of the additions (relative 1e-12 on sums of a few thousand positive terms).
    lik = make(5 * BLOCK_ROWS + 3, 2)
    gen = np.random.default_rng(3)
    table, v = gen.dirichlet(np.ones(lik.size)), gen.random(lik.rows)
    sample = np.sort(gen.choice(lik.rows, 3 * BLOCK_ROWS, replace=False))
    monkeypatch.setattr(threads_module, "MAX_THREADS", 1)
    one = _every_pass(lik, table, v, sample)
    monkeypatch.setattr(threads_module, "MAX_THREADS", threads)
    monkeypatch.setattr(threads_module, "pass_threads", lambda: threads)  # whatever the machine's cores
    many = _every_pass(lik, table, v, sample)
    for a, b in zip(one[:3], many[:3]):
        np.testing.assert_allclose(b, a, rtol=1e-12)
    # The blocks (float32 products) are the same in every range; only the order in which their
    # float64 sums add up differs. The bound is the float32 products' own error (relative 1e-6), kept loose.
    for a, b in zip(one[3:5], many[3:5]):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5 * float(np.abs(a).max()))
    np.testing.assert_allclose(many[5], one[5], atol=1e-6)  # the same steps up to rounding


def test_likelihood_codes_on_several_threads_equal_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    # Row ranges cut through cohorts (3 threads over 70,000 patterns in 4 cohorts): the same codes
    # and Other values, each row computed alike whichever thread does it.
    monkeypatch.setattr(threads_module, "MAX_THREADS", 1)
    one = _coded(70_000, 5)
    monkeypatch.setattr(threads_module, "MAX_THREADS", 3)
    monkeypatch.setattr(threads_module, "pass_threads", lambda: 3)
    many = _coded(70_000, 5)
    np.testing.assert_array_equal(many.codes, one.codes)
    assert one.other is not None and many.other is not None
    np.testing.assert_array_equal(many.other, one.other)


@pytest.mark.parametrize("make", LIKELIHOODS)
@pytest.mark.parametrize("threads", [1, 2])
def test_passes_give_the_same_bits_whatever_the_cores(monkeypatch: pytest.MonkeyPatch, threads: int,
                                                      make: Callable[[int, int], ProductLikelihood]) -> None:
    # The row ranges follow MAX_THREADS alone, so a machine with fewer cores runs the same ranges
    # in fewer threads and adds the same partial sums in the same order: equal to the bit.
    lik = make(5 * BLOCK_ROWS + 3, 2)
    gen = np.random.default_rng(4)
    table, v = gen.dirichlet(np.ones(lik.size)), gen.random(lik.rows)
    sample = np.sort(gen.choice(lik.rows, 3 * BLOCK_ROWS, replace=False))
    monkeypatch.setattr(threads_module, "MAX_THREADS", 3)
    monkeypatch.setattr(threads_module, "pass_threads", lambda: 3)
    many = _every_pass(lik, table, v, sample)
    monkeypatch.setattr(threads_module, "pass_threads", lambda: threads)
    fewer = _every_pass(lik, table, v, sample)
    for a, b in zip(many, fewer):
        np.testing.assert_array_equal(b, a)


@pytest.mark.parametrize("sparse_start", [False, True])
def test_sqp_stops_when_its_steps_no_longer_move_the_table(monkeypatch: pytest.MonkeyPatch,
                                                           sparse_start: bool) -> None:
    # A step that leaves the table where it is (as at the gap's numerical floor: 10 M reports, the
    # gap held at 0.44 for 900 steps of 1e-16) ends the fit after STALL_STEPS such steps, unconverged,
    # instead of running to the iteration cap; from a sparse start the working set first takes in
    # the cells its gradient asks for, then stops.
    import rappor.analysis.association._mixture as mixture

    gen = np.random.default_rng(11)
    lik = ProductLikelihood([gen.random((400, 40)) ** 4, np.tile([[0.3, 0.8], [0.7, 0.2]], (200, 1))],
                            gen.integers(1, 4, 400).astype(np.float64))

    def still(lik_, x, d, grad, sample, scale):  # type: ignore[no-untyped-def]
        return x.copy(), d, None

    monkeypatch.setattr(mixture, "_sqp_step", still)
    start = None
    if sparse_start:
        start = np.zeros(lik.size)
        start[:4] = 0.25
    fit = fit_mixture(lik, tolerance=-1.0, max_iterations=1000, start=start)
    assert not fit.converged
    if sparse_start:
        assert mixture.STALL_STEPS <= fit.iterations < 1000 // 4
    else:
        assert fit.iterations == mixture.STALL_STEPS
