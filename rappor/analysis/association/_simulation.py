"""Simulated multi-variable collections with a known joint distribution (private)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ..._util.lazy import lazy_module
from ..._util.memory import check_memory
from ..._util.validation import RngLike, check_int, check_rng
from ...collect._design import hash_candidates
from ...exceptions import InvalidParameterError
from ...params import Params
from ...client._reports import ReportBatch
from ...simulation._reports import _encode_rows, simulate_reports
from ._variables import BOOLEAN_CATEGORIES, OTHER, Variable, boolean_params

if TYPE_CHECKING:
    from scipy import stats
else:  # imported on first use: keeps `import rappor` light
    stats = lazy_module("scipy.stats")

__all__ = ["AssociationSimulation", "example_joint", "simulate_association", "total_variation"]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class AssociationSimulation:
    """A simulated collection of one report per variable per client.

    Attributes
    ----------
    variables : tuple of Variable
        With the candidate maps the analysis uses.
    reports : tuple of ReportBatch
        One batch per variable, rows aligned by client.
    values : tuple of tuple of str
        The possible values of each variable (``("TRUE", "FALSE")`` for a boolean).
    joint : ndarray
        The population's joint distribution over ``values``.
    held : ndarray of int64, shape (n_clients, n_variables)
        Each client's value of each variable (index into ``values``).
    report_clients : ndarray of int64, shape (n_reports,), or None
        The client (row of ``held``) of each report tuple, when clients report more than once
        (:func:`simulate_association`'s ``reports_per_client``); ``None``: report ``i`` is client ``i``'s.
    """

    variables: tuple[Variable, ...]
    reports: tuple[ReportBatch, ...]
    values: tuple[tuple[str, ...], ...]
    joint: npt.NDArray[np.float64]
    held: npt.NDArray[np.int64]
    report_clients: npt.NDArray[np.int64] | None = None

    @property
    def n_clients(self) -> int:
        """Number of clients."""
        return int(self.held.shape[0])

    def truth(self, categories: Sequence[Sequence[str]]) -> npt.NDArray[np.float64]:
        """The clients' realized joint distribution over ``categories`` (values that are not a
        category count as ``"Other"`` when it is one, and are left out otherwise)."""
        index = []
        keep = np.ones(self.n_clients, dtype=bool)
        for j, cats in enumerate(categories):
            lookup = {c: i for i, c in enumerate(cats)}
            other = lookup.get(OTHER, -1)
            mapping = np.array([lookup.get(v, other) for v in self.values[j]], dtype=np.int64)
            idx = mapping[self.held[:, j]]
            keep &= idx >= 0
            index.append(idx)
        shape = tuple(len(c) for c in categories)
        flat = np.ravel_multi_index(tuple(i[keep] for i in index), shape) if keep.any() else np.zeros(0, np.int64)
        counts = np.bincount(flat, minlength=int(np.prod(shape))).astype(np.float64)
        return (counts / self.n_clients).reshape(shape)


def total_variation(estimate: npt.ArrayLike, truth: npt.ArrayLike) -> float:
    """``0.5 * sum |estimate - truth|`` over the cells."""
    return 0.5 * float(np.abs(np.asarray(estimate, dtype=np.float64) - np.asarray(truth, dtype=np.float64)).sum())


def simulate_association(params: Params, joint: npt.ArrayLike, values: Sequence[Sequence[str] | None],
                         n_clients: int, *, candidates: Sequence[Sequence[str] | None] | None = None,
                         names: Sequence[str] | None = None, reports_per_client: int = 1,
                         rng: RngLike = None) -> AssociationSimulation:
    """Draw clients from a known joint distribution and encode their reports of every variable.

    Parameters
    ----------
    params : Params
        The collection's parameters (a boolean variable uses :func:`boolean_params`).
    joint : array-like of shape (U_1, U_2[, U_3])
        Probabilities (normalized here) of every combination of values.
    values : sequence
        Per variable: its distinct string values, or ``None`` for a boolean (axis of
        size 2: index 0 is TRUE, 1 is FALSE).
    n_clients : int
    candidates : sequence, optional
        Per string variable, the candidate list of the analysis (default: its values; a
        list without some of them leaves those strings outside the candidates).
    names : sequence of str, optional
        Variable names (default ``var1``, ``var2``, ...).
    reports_per_client : int, default=1
        Report tuples a client sends (a daily report of the same values): each variable's
        reports of one client share one permanent response, as RAPPOR's memoized client
        (:attr:`AssociationSimulation.report_clients` says whose each tuple is).
    rng : numpy.random.Generator, int or None

    Returns
    -------
    AssociationSimulation

    Notes
    -----
    Every client gets a uniform cohort and independent permanent responses per
    variable; the encoding is :func:`rappor.simulation.simulate_reports` (numpy's
    generator: for simulation only).
    """
    gen = check_rng(rng)
    n = check_int(n_clients, "n_clients", "simulate_association", low=1)
    repeats = check_int(reports_per_client, "reports_per_client", "simulate_association", low=1)
    # Checked before drawing: 256 bytes a report tuple per variable (measured peaks: 360 bytes a
    # client for a string and a boolean, 460 for two strings, k = 16).
    check_memory(256 * len(values) * n * repeats,
                 f"simulating {n:,} clients x {repeats} report(s) x {len(values)} variables",
                 remedy="simulate fewer clients")
    probs = np.asarray(joint, dtype=np.float64)
    if probs.ndim != len(values) or not 1 <= probs.ndim <= 3 or (probs < 0).any() or not probs.sum() > 0:
        msg = "The 'joint' parameter of simulate_association must be a non-negative table with one axis per variable."
        raise InvalidParameterError(msg)
    labels: list[tuple[str, ...]] = []
    for axis, vals in enumerate(values):
        labels.append(BOOLEAN_CATEGORIES if vals is None else tuple(vals))
        if probs.shape[axis] != len(labels[-1]):
            msg = f"Axis {axis} of 'joint' has {probs.shape[axis]} entries for {len(labels[-1])} values."
            raise InvalidParameterError(msg)
    probs = probs / probs.sum()
    cells = gen.choice(probs.size, size=n, p=probs.reshape(-1))
    held = np.stack(np.unravel_index(cells, probs.shape), axis=1).astype(np.int64)
    cohorts = gen.integers(0, params.num_cohorts, size=n, dtype=np.int64)
    names = [f"var{j + 1}" for j in range(len(values))] if names is None else list(names)
    # A client's reports share its permanent responses (one PRR unit a client and variable).
    whose = np.repeat(np.arange(n, dtype=np.int64), repeats) if repeats > 1 else None
    report_cohorts = cohorts if whose is None else cohorts[whose]
    variables, batches = [], []
    for j, vals in enumerate(values):
        if vals is None:
            bparams = boolean_params(params)
            table = np.array([[1], [0]], dtype=np.uint8)  # TRUE sets the bit
            words = _encode_rows(bparams, table, held[:, j], whose, gen)
            batches.append(ReportBatch(params=bparams, cohorts=report_cohorts, words=words))
            variables.append(Variable.boolean(names[j], params))
        else:
            rows = held[:, j] if whose is None else held[whose, j]
            batches.append(simulate_reports(params, list(vals), rows, report_cohorts, prr_units=whose, rng=gen))
            given = None if candidates is None else candidates[j]
            cand = list(vals) if given is None else list(given)
            variables.append(Variable.string(names[j], hash_candidates(cand, params)))
    return AssociationSimulation(variables=tuple(variables), reports=tuple(batches), values=tuple(labels),
                                 joint=probs, held=held, report_clients=whose)


def example_joint(kind: str, num_unique: int = 100, num_unique2: int = 10, *, remove_every: int = 0,
                  ) -> tuple[npt.NDArray[np.float64], list[list[str] | None], list[list[str] | None]]:
    """The joint distributions of ``rappor simulate-assoc`` and ``benchmarks/association.py``.

    Parameters
    ----------
    kind : {"string-bool", "string-string"}
        ``"string-bool"``: ``v1 .. vU`` with Zipf(1) frequencies and
        ``P(TRUE | v_i) = 0.2 + 0.1 (i mod 7)``.  ``"string-string"``: ``a1 .. aU`` with
        Zipf(1) frequencies and ``b`` given ``a_i`` a Poisson(1) law over ``b1 .. bU2``
        shifted by ``i mod U2`` (wrapping around).
    num_unique, num_unique2 : int
    remove_every : int, default=0
        Leave every ``R``-th value of each string variable out of its candidate list
        (0: keep all).

    Returns
    -------
    joint, values, candidates
        Arguments for :func:`simulate_association`.
    """
    from ...simulation._populations import Population

    u = check_int(num_unique, "num_unique", "example_joint", low=1)
    step = check_int(remove_every, "remove_every", "example_joint", low=0)

    def kept(vals: list[str]) -> list[str]:
        return [v for i, v in enumerate(vals) if not (step and i % step == step - 1)]

    first = Population.zipf(u)
    if kind == "string-bool":
        p_true = 0.2 + 0.1 * (np.arange(u) % 7)
        joint = np.column_stack([first.probabilities * p_true, first.probabilities * (1.0 - p_true)])
        vals = list(first.strings)
        return joint, [vals, None], [kept(vals), None]
    if kind == "string-string":
        u2 = check_int(num_unique2, "num_unique2", "example_joint", low=1)
        check_memory(32 * u * u2, f"a joint table of {u:,} x {u2:,} values", remedy="use fewer distinct values")
        base = stats.poisson.pmf(np.arange(u2), 1.0)
        cond = np.array([np.roll(base, i % u2) for i in range(u)])
        cond /= cond.sum(axis=1, keepdims=True)
        joint = first.probabilities[:, None] * cond
        a = [f"a{i + 1}" for i in range(u)]
        b = [f"b{j + 1}" for j in range(u2)]
        return joint, [a, b], [kept(a), kept(b)]
    msg = f"The 'kind' parameter of example_joint must be 'string-bool' or 'string-string'. Got {kind!r} instead."
    raise InvalidParameterError(msg)
