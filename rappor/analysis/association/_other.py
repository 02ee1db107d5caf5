"""The "other" category: how often each (cohort, bit) is 1 in reports of non-candidate strings (private).

``"undetected"`` (default)
    The strings of "other" are the candidates left out of the table, in the shares the
    marginal decode estimates for them, and strings outside the candidate list for the
    rest of the other mass, each of those a random string (Bloom bit rate
    ``1 - (1 - 1/k)^h``): ``o[c, j] = p01 + (p11 - p01) (sum_s w_s B[c, j, s] + w_rest u) /
    (sum_s w_s + w_rest)``.  Nothing in it is fitted to the bit counts beyond the
    decoder's shares: the rates of the two estimates below are, and the joint fit
    exploits that noise (``docs/association.md``, *The Other category*: with 1,024
    (cohort, bit) rates fitted to the same counts, "shrunk" raised a string variable's
    log-likelihood by about 250 and its Other share from 0.15 to 0.5).

    The shares are **cross-fitted** (:func:`cross_fitted_proportions`): the rates of a cohort
    come from the marginal decode of the *other* half of the cohorts, so that no cohort's
    Other is fitted to its own reports' noise (sample splitting; e.g. Chernozhukov et al. 2018,
    *Econometrics Journal* 21(1)).  With the shares from the same reports, a left-out candidate
    whose noise happened to be high weighs more in Other's composition, Other explains that
    noise, and the joint fit gives Other too much: with the categories fixed by the true
    shares, +1.5 of its standard error on average (10 design collections of 250,000 reports,
    f=0.75), about 0 with the clients' true composition, an independent collection's or the
    random string's (``docs/notes/association-measurements.md``).

    Where the marginal decode shows strings outside the candidates (:func:`outside_evidence`),
    ``u`` is replaced by their own Bloom-bit rates, estimated from the counts no candidate
    explains and shrunk towards ``u`` (:func:`outside_bit_rates`).  Those ``m k`` rates are
    fitted to counts, so they are cross-fitted too, across reports: each cohort's reports are
    dealt at random into two folds (:func:`report_folds`), and a report is modelled with the
    rates of the *other* fold's counts (:func:`undetected_other_probabilities`; Other has a
    row per (fold, cohort)).  Their noise enters the table's covariance
    (:mod:`~rappor.analysis.association._nuisance`).  At 10 M reports with outside strings
    the random string left 0.87 of the 95% intervals covering, these rates 0.95.

The two other estimates start from the counts that the candidates do not explain.  With ``N_c``
reports in cohort ``c``, candidate shares ``s_x`` (the marginal decode) and ``B[c, j, x]``
the candidates' Bloom bits, the candidates are expected to give
``N_c sum_x s_x (p01 + (p11 - p01) B[c, j, x])`` ones in bit ``j``; the rest come from the
``N_c (1 - sum_x s_x)`` reports of other strings.

``"reference"``
    google/rappor ``association.R`` ``GetOtherProbs``, reproduced exactly (checked
    against R): known counts ``ceiling(s_x N / m)`` per cohort (every cohort assumed of
    size ``N / m``); their expected ones per (cohort, bit) in the order R's
    ``dim(known_counts_by_cohort) <- c(m, k)`` leaves them, which is not the (cohort,
    bit) order (``sapply`` returned a ``k x m`` matrix): a bug of the reference; the rest
    clipped at 0, divided, then clipped to ``[0, 1]`` (``x / 0`` -> 1, ``0 / 0`` -> 0, in R's order).  At realistic noise
    most cells are pure noise, and a probability of exactly 0 or 1 makes every report
    with the opposite bit impossible for "other".
``"shrunk"``
    The same residual with the real cohort sizes, turned into the Bloom-bit rate of
    other strings ``b[c, j] = (o[c, j] - p01) / (p11 - p01)`` and shrunk towards its
    mean by the method-of-moments empirical Bayes factor ``tau^2 / (tau^2 + se[c, j]^2)``
    (James and Stein 1961; Efron and Morris 1975, JASA 70(350)), where ``se`` is the
    binomial standard error of the cell and ``tau^2`` the variance of the true rates
    beyond it; then clipped to ``[0, 1]``, so ``o`` stays in ``[p01, p11]``, the range any
    string can produce.  Heavy non-candidate strings show through where the counts carry
    them; elsewhere the estimate is the even spread of the decoder's unexplained column.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Literal, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from ...client._reports import ReportBatch
from ...collect._aggregate import Aggregate
from ...collect._design import CandidateMap
from ...params import Params
from ._repeats import client_bit_sums

__all__ = ["OtherMethod", "OutsideNoise", "OutsideResidual", "cross_fitted_proportions", "other_bit_probabilities",
           "outside_bit_rates", "outside_residual", "report_folds", "share_directions", "undetected_bit_probabilities",
           "undetected_other_probabilities"]

OtherMethod = Literal["shrunk", "reference"]

#: Folds of cohorts for :func:`cross_fitted_proportions`.
OTHER_FOLDS = 2
#: Folds of each cohort's reports for :func:`outside_bit_rates` (:func:`report_folds`).
REPORT_FOLDS = 2
#: Seed of :func:`report_folds`' deal.
REPORT_FOLD_SEED = 20_171_126


class _Marginal(Protocol):
    def decode(self, aggregate: Aggregate, cmap: CandidateMap) -> Any: ...


def cross_fitted_proportions(aggregate: Aggregate, cmap: CandidateMap, decoder: _Marginal,
                             folds: int = OTHER_FOLDS) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.intp]] | None:
    """Every candidate's marginal share estimated without the reports of each fold of cohorts.

    Cohort ``c`` is in fold ``c % folds``; fold ``f``'s shares come from ``decoder`` run on the
    reports of the cohorts outside ``f`` (the bit counts of ``f``'s cohorts set to 0).

    Parameters
    ----------
    aggregate : Aggregate
        Bit counts of the variable's reports.
    cmap : CandidateMap
    decoder : object with ``decode(aggregate, cmap)``
        The marginal decoder (its result's ``proportion``).
    folds : int, default=OTHER_FOLDS

    Returns
    -------
    (ndarray of shape (folds, n_candidates), ndarray of int of shape (m,)) or None
        The shares per fold and each cohort's fold; ``None`` when some fold's complement has
        no report (one cohort, or reports in fewer than two folds).
    """
    m = aggregate.params.num_cohorts
    fold_of = (np.arange(m) % folds).astype(np.intp)
    counts = np.asarray(aggregate.counts)
    out = np.empty((folds, len(cmap.strings)))
    for f in range(folds):
        rest = counts.copy()
        rest[fold_of == f] = 0
        if m < 2 or rest[:, 0].sum() == 0 or rest[:, 0].sum() == counts[:, 0].sum():
            return None
        result = decoder.decode(replace(aggregate, counts=rest), cmap)
        out[f] = np.asarray(result.proportion, dtype=np.float64)
    return out, fold_of


def report_folds(cohorts: npt.NDArray[np.int64], folds: int = REPORT_FOLDS, *,
                 clients: npt.NDArray[np.int64] | None = None) -> npt.NDArray[np.int64]:
    """Each report's fold, drawn uniformly at random (a fixed seed, :data:`REPORT_FOLD_SEED`).

    At random rather than by position, so that reports stored in some order (sorted by their
    bits, say) still give folds whose noise is independent; the fixed seed keeps a decode
    reproducible.  A cohort's folds differ in size by the binomial spread only.  With
    ``clients`` (each report's client code, :func:`~rappor.analysis.association._inputs.client_codes`)
    a client's reports share a fold: they share a permanent response, so reports of one client
    in two folds would tie the folds' noise together.
    """
    gen = np.random.default_rng(REPORT_FOLD_SEED)
    if clients is not None:
        by_client = gen.integers(0, folds, int(clients.max(initial=-1)) + 1)
        return np.asarray(by_client[clients], dtype=np.int64)
    out: npt.NDArray[np.int64] = np.asarray(gen.integers(0, folds, cohorts.shape[0]))
    return out


def bit_count_design_effect(batch: ReportBatch, clients: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    """Variance of each (cohort, bit) count of ones over its binomial variance, a client's reports together.

    A client's reports share one permanent response, so its ``R_i`` reports' ones ``S_ij`` in
    bit ``j`` vary together; the count's variance is estimated clustered by client,
    ``sum_i (S_ij - R_i p_cj)^2`` over the clients of cohort ``c`` (``p_cj`` the cohort's rate of
    ones; Liang and Zeger 1986), and divided by the binomial ``N_c p_cj (1 - p_cj)``.  1 where
    every client reports once (in expectation), or the binomial variance is 0.

    Returns
    -------
    ndarray of float64, shape (m, k)
    """
    params = batch.params
    m, k = params.num_cohorts, params.num_bloombits
    sums = client_bit_sums(batch, clients)
    cohort, per_client, ones = sums.cohorts, sums.reports, sums.ones
    reports = np.bincount(cohort, weights=per_client, minlength=m)
    rate = np.zeros((m, k))
    np.add.at(rate, cohort, ones)
    rate /= np.maximum(reports, 1.0)[:, None]
    robust = np.zeros((m, k))
    np.add.at(robust, cohort, (ones - per_client[:, None] * rate[cohort]) ** 2)
    binomial = reports[:, None] * rate * (1.0 - rate)
    out: npt.NDArray[np.float64] = np.where(binomial > 0, robust / np.where(binomial > 0, binomial, 1.0), 1.0)
    return out


class OutsideNoise(NamedTuple):
    """Sampling noise of Other's bit probabilities ``o`` (flat over rows and bits).

    ``Cov(o) = diag(variance) + directions directions'``: the bit counts' own binomial noise,
    and the marginal decode's share errors carried into the residual (one column a candidate).
    """

    variance: npt.NDArray[np.float64]
    directions: npt.NDArray[np.float64]


#: Largest ``m k x candidates`` array of share directions (:func:`outside_bit_rates`); above it the
#: share errors' part of the noise is left out.
MAX_DIRECTION_CELLS = 1 << 24


def outside_bit_rates(aggregate: Aggregate, cmap: CandidateMap, shares: npt.NDArray[np.float64],
                      share_std_errors: npt.NDArray[np.float64] | None = None,
                      design_effect: npt.NDArray[np.float64] | None = None,
                      ) -> tuple[npt.NDArray[np.float64], OutsideNoise | None]:
    """Bloom-bit rate of the strings outside the candidates, per (cohort, bit), shrunk towards a random string's.

    The bit counts that no candidate explains, ``ones - N_c sum_x s_x (p01 + (p11 - p01) B[c, j, x])``,
    come from the ``N_c (1 - S)`` reports of outside strings (``S = sum_x s_x``); debiased, that
    is their Bloom-bit rate ``b[c, j]`` with binomial variance ``se[c, j]^2``.  Each is shrunk
    towards the random string's rate ``u = 1 - (1 - 1/k)^h`` (the mean rate over a cohort's bits
    of any string, whatever it is) by the empirical Bayes factor ``F = tau^2 / (tau^2 + se^2)``,
    with ``tau^2 = max(mean((b - u)^2) - mean(se^2), 0)`` (method of moments; James and Stein
    1961, Efron and Morris 1975, JASA 70(350)).  A few heavy outside strings show through where
    the counts carry them; with ``tau^2 = 0`` every rate is ``u``, the random-string model.

    Parameters
    ----------
    aggregate : Aggregate
        Bit counts of the reports the rates are estimated from.
    cmap : CandidateMap
    shares : ndarray of float64, shape (n_candidates,)
        Every candidate's share (the marginal decode; ``nan`` and negative count as 0).
    share_std_errors : ndarray of float64, shape (n_candidates,), optional
        Their standard errors: an error ``e_x`` in ``s_x`` moves ``b`` by
        ``F (b - B[., ., x]) e_x / (1 - S)`` (the derivative of ``b``).
    design_effect : ndarray of float64, shape (m, k), optional
        Each count's variance over its binomial variance (clients that report more than
        once: :func:`bit_count_design_effect`); it scales ``se^2``.

    Returns
    -------
    (ndarray of float64 of shape (m, k), OutsideNoise or None)
        The shrunk rates, in ``[0, 1]``, and their noise (flat over ``(c, j)``): ``F^2 se^2``, and
        the share errors' directions when ``share_std_errors`` is given (none beyond
        :data:`MAX_DIRECTION_CELLS`).  ``None`` with ``tau^2 = 0``.
    """
    params = aggregate.params
    uniform = _random_string_rate(params)
    shape = (params.num_cohorts, params.num_bloombits)
    rates = np.full(shape, uniform)
    residual = outside_residual(aggregate, cmap, shares, design_effect)
    if residual is None:
        return rates, None
    present = residual.present
    rate, var = residual.rate[present], residual.variance[present]
    tau2 = max(float(np.mean((rate - uniform) ** 2) - np.mean(var)), 0.0)
    if tau2 == 0.0:
        return rates, None
    factor = np.zeros(shape)
    factor[present] = tau2 / (tau2 + var)
    raw = residual.rate
    rates = np.clip(uniform + factor * (raw - uniform), 0.0, 1.0)
    variance = np.zeros(shape)
    variance[present] = factor[present] ** 2 * var
    directions = share_directions(cmap, factor * present[:, None], raw, residual.outside, share_std_errors)
    return rates, OutsideNoise(variance.reshape(-1), directions)


class OutsideResidual(NamedTuple):
    """The counts no candidate explains, read as the outside strings' Bloom-bit rates (:func:`outside_residual`)."""

    rate: npt.NDArray[np.float64]
    variance: npt.NDArray[np.float64]
    outside: float
    present: npt.NDArray[np.bool_]


def outside_residual(aggregate: Aggregate, cmap: CandidateMap, shares: npt.NDArray[np.float64],
                     design_effect: npt.NDArray[np.float64] | None = None) -> OutsideResidual | None:
    """The outside strings' debiased Bloom-bit rate per (cohort, bit) and its variance, before any shrinkage.

    ``b[c, j] = ((ones - N_c sum_x s_x (p01 + (p11 - p01) B[c, j, x])) / (N_c (1 - S)) - p01) / (p11 - p01)``
    with binomial variance ``o (1 - o) / (N_c ((1 - S) (p11 - p01))^2)`` (``o`` the cell's rate of
    ones), times ``design_effect`` when given; see :func:`outside_bit_rates`.

    Returns
    -------
    OutsideResidual or None
        ``rate`` and ``variance`` of shape (m, k): the estimate in the cohorts ``present`` (at least
        one expected report of an outside string), the random string's rate and 0 elsewhere;
        ``outside`` the mass ``1 - S``.  ``None`` when no mass is left outside the candidates, no
        cohort is present, or ``p11 == p01``.
    """
    params = aggregate.params
    p11, p01 = params.p11, params.p01
    shares = np.clip(np.nan_to_num(np.asarray(shares, dtype=np.float64)), 0.0, None)
    outside = 1.0 - float(shares.sum())
    counts = aggregate.counts.astype(np.float64)
    n_c, ones = counts[:, 0], counts[:, 1:]
    present = n_c * outside >= 1.0
    if outside <= 0.0 or not present.any() or p11 == p01:
        return None
    known = _known_bits(cmap, np.arange(shares.size, dtype=np.intp), shares)
    n = n_c[present, None]
    expected = n * (float(shares.sum()) * p01 + known[present] * (p11 - p01))
    observed = ones[present] / n
    var = observed * (1.0 - observed) / (n * (outside * (p11 - p01)) ** 2)
    if design_effect is not None:
        var = var * design_effect[present]
    shape = (params.num_cohorts, params.num_bloombits)
    rate = np.full(shape, _random_string_rate(params))
    rate[present] = ((ones[present] - expected) / (n * outside) - p01) / (p11 - p01)
    variance = np.zeros(shape)
    variance[present] = var
    return OutsideResidual(rate, variance, outside, present)


def share_directions(cmap: CandidateMap, slope: npt.NDArray[np.float64], raw: npt.NDArray[np.float64], outside: float,
                     share_std_errors: npt.NDArray[np.float64] | None) -> npt.NDArray[np.float64]:
    """How the share errors move rates estimated from the residual: ``slope (raw - B[., ., x]) e_x / (1 - S)``.

    ``slope`` (m, k) is the estimator's derivative in the residual rate ``raw`` (the shrinkage
    factor, 0 outside the present cohorts), ``e_x`` each candidate's standard error; flat over
    ``(c, j)``, a column per candidate with a finite positive error (none beyond
    :data:`MAX_DIRECTION_CELLS`).
    """
    se = np.zeros(0) if share_std_errors is None else np.asarray(share_std_errors, dtype=np.float64)
    used = np.flatnonzero(np.isfinite(se) & (se > 0))  # an unknown or infinite error has no direction to carry
    if used.size * raw.size > MAX_DIRECTION_CELLS:
        used = used[:0]
    bits = np.asarray(cmap.matrix[:, used].toarray(), dtype=np.float64)  # (m k, used)
    directions: npt.NDArray[np.float64] = (slope / outside).reshape(-1, 1) * (raw.reshape(-1, 1) - bits) * se[used]
    return directions


def undetected_other_probabilities(batch: ReportBatch, aggregate: Aggregate, cmap: CandidateMap,
                                   columns: npt.NDArray[np.intp], marginal: Any,
                                   decoder: _Marginal, folds: npt.NDArray[np.int64] | None,
                                   clients: npt.NDArray[np.int64] | None = None,
                                   ) -> tuple[npt.NDArray[np.float64], OutsideNoise | None]:
    """The ``"undetected"`` Other's bit probabilities, cross-fitted twice (see the module docstring).

    The left-out candidates' shares come from the other fold of cohorts
    (:func:`cross_fitted_proportions`); the outside strings' Bloom-bit rates from the other
    folds of each cohort's reports (:func:`outside_bit_rates`, with ``folds`` from
    :func:`report_folds`), where the marginal decode gives evidence of outside strings
    (:func:`outside_evidence`); elsewhere a random string's.  ``marginal`` is the variable's
    marginal decode (its ``proportion``, ``prop_std_error`` and diagnostics).  ``clients``
    (each report's client code, where some client reports more than once) scales the rates'
    binomial noise by the counts' design effect (:func:`bit_count_design_effect`).

    Returns
    -------
    (ndarray of float64 of shape (m, k) or (F m, k), OutsideNoise or None)
        The probabilities: row ``c`` for cohort ``c``; or, where the outside strings' rates
        differ from a random string's (``tau^2 > 0`` in some fold), row ``f m + c`` for the
        reports of fold ``f`` in cohort ``c``, with the noise of those probabilities (flat over
        rows and bits).
    """
    proportions = np.asarray(marginal.proportion, dtype=np.float64)
    split = cross_fitted_proportions(aggregate, cmap, decoder) if columns.size < len(cmap) else None
    by_fold, fold_of = (proportions, None) if split is None else split

    def probabilities(outside: npt.NDArray[np.float64] | None) -> npt.NDArray[np.float64]:
        return undetected_bit_probabilities(cmap, columns, by_fold, fold_of, outside=outside)

    if folds is None or len(batch) == 0 or not outside_evidence(marginal):
        return probabilities(None), None
    share_se = getattr(marginal, "prop_std_error", None)
    # The probability is linear in the rates: its slope from the rates 0 and 1 (the same in every fold).
    shape = (batch.params.num_cohorts, batch.params.num_bloombits)
    slope = (probabilities(np.ones(shape)) - probabilities(np.zeros(shape))).reshape(-1)
    rows, noises = [], []
    for f in range(int(folds.max()) + 1):
        keep = folds != f
        rest = ReportBatch(params=batch.params, cohorts=batch.cohorts[keep], words=batch.words[keep])
        effect = None if clients is None else bit_count_design_effect(rest, clients[keep])
        rates, noise = outside_bit_rates(Aggregate.from_reports(rest), cmap, proportions, share_se, effect)
        rows.append(probabilities(rates))
        noises.append(None if noise is None else OutsideNoise(slope ** 2 * noise.variance, slope[:, None] * noise.directions))
    if all(noise is None for noise in noises):
        return rows[0], None
    width = max(n.directions.shape[1] for n in noises if n is not None)
    size = rows[0].size
    return np.concatenate(rows), OutsideNoise(
        np.concatenate([np.zeros(size) if n is None else n.variance for n in noises]),
        np.concatenate([np.zeros((size, width)) if n is None else n.directions for n in noises]))


def _random_string_rate(params: Params) -> float:
    """Probability that a random string sets a given Bloom bit: ``1 - (1 - 1/k)^h``."""
    return 1.0 - (1.0 - 1.0 / params.num_bloombits) ** params.num_hashes


def undetected_bit_probabilities(cmap: CandidateMap, columns: npt.NDArray[np.intp],
                                 proportions: npt.NDArray[np.float64],
                                 fold_of: npt.NDArray[np.intp] | None = None,
                                 outside: npt.NDArray[np.float64] | None = None) -> npt.NDArray[np.float64]:
    """P(report bit = 1 | the client's string is not among ``columns``), per cohort and bit.

    Parameters
    ----------
    cmap : CandidateMap
    columns : ndarray of int
        The candidates of the table (columns of ``cmap``).
    proportions : ndarray of float64, shape (n_candidates,) or (folds, n_candidates)
        The marginal decode's share of every candidate (``nan`` and negative count as 0);
        per fold of cohorts with ``fold_of`` (:func:`cross_fitted_proportions`).
    fold_of : ndarray of int, shape (m,), optional
        Each cohort's row of ``proportions``.
    outside : ndarray of float64, shape (m, k), optional
        The Bloom-bit rate of the strings outside the candidates (:func:`outside_bit_rates`);
        by default a random string's.

    Returns
    -------
    ndarray of float64, shape (m, k)
        ``p01 + (p11 - p01) r`` with ``r`` the Bloom bit rate of the mixture of the other
        candidates (weights: their shares) and of the outside strings (weight: the rest of
        ``1 - sum(shares of columns)``).  See the module docstring.
    """
    if fold_of is not None:
        per_fold = [undetected_bit_probabilities(cmap, columns, row, outside=outside) for row in np.asarray(proportions)]
        return np.stack([per_fold[f][c] for c, f in enumerate(fold_of)])
    params = cmap.params
    shares = np.clip(np.nan_to_num(np.asarray(proportions, dtype=np.float64)), 0.0, None)
    left_out = np.ones(shares.size, dtype=bool)
    left_out[columns] = False
    weights = np.where(left_out, shares, 0.0)
    rest = max(1.0 - float(shares[columns].sum()) - float(weights.sum()), 0.0)
    total = float(weights.sum()) + rest
    uniform = _random_string_rate(params)
    if total <= 0.0:
        rate = np.full((params.num_cohorts, params.num_bloombits), uniform)
    else:
        rate = (_known_bits(cmap, np.arange(shares.size, dtype=np.intp), weights)
                + rest * (uniform if outside is None else outside)) / total
    probabilities: npt.NDArray[np.float64] = params.p01 + (params.p11 - params.p01) * np.clip(rate, 0.0, 1.0)
    return probabilities


def _known_bits(cmap: CandidateMap, columns: npt.NDArray[np.intp], weights: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """``sum_x weights[x] B[c, j, x]`` as an ``(m, k)`` array."""
    params = cmap.params
    sub = cmap.matrix[:, columns]
    return np.asarray(sub @ weights, dtype=np.float64).reshape(params.num_cohorts, params.num_bloombits)


def other_bit_probabilities(aggregate: Aggregate, cmap: CandidateMap, columns: npt.NDArray[np.intp],
                            shares: npt.NDArray[np.float64], method: OtherMethod = "shrunk") -> npt.NDArray[np.float64]:
    """P(report bit = 1 | the client's string is not a candidate), per cohort and bit.

    Parameters
    ----------
    aggregate : Aggregate
        Bit counts of the variable's reports.
    cmap : CandidateMap
    columns : ndarray of int
        The candidates of the analysis (columns of ``cmap``).
    shares : ndarray of float64, shape (len(columns),)
        Their estimated shares (the marginal decode's proportions).
    method : {"shrunk", "reference"}, default="shrunk"
        See the module docstring.

    Returns
    -------
    ndarray of float64, shape (m, k)
    """
    params = aggregate.params
    p11, p01 = params.p11, params.p01
    counts = aggregate.counts.astype(np.float64)
    n_c, ones = counts[:, 0], counts[:, 1:]
    shares = np.clip(np.nan_to_num(np.asarray(shares, dtype=np.float64)), 0.0, None)
    if method == "reference":
        total = n_c.sum()
        known = np.ceil(shares * total / params.num_cohorts)
        sum_known = known.sum()
        known_bits = _known_bits(cmap, columns, known)
        # GetOtherProbs builds this (cohort, bit) table with sapply (k x m) and then sets
        # dim(.) <- c(m, k), which reorders the cells unless m = 1: reproduced here.
        m, k = known_bits.shape
        known_bits = known_bits.reshape(-1).reshape(k, m).T
        expected = (sum_known - known_bits) * p01 + known_bits * p11
        reduced_n = np.maximum(n_c - sum_known, 0.0)
        reduced = np.maximum(ones - expected, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            probs = reduced / reduced_n[:, None]
        # R clips at 1 before replacing NaN and Inf by 0: x / 0 is 1 for x > 0, and 0 / 0 is 0.
        return np.where(np.isnan(probs), 0.0, np.minimum(probs, 1.0))
    if shares.sum() > 1.0:
        shares = shares / shares.sum()
    other_share = 1.0 - float(shares.sum())
    k = params.num_bloombits
    uniform = _random_string_rate(params)
    if other_share * float(n_c.sum()) < 1.0:
        return np.full((params.num_cohorts, k), p01 + (p11 - p01) * uniform)
    known_bits = _known_bits(cmap, columns, shares)  # share of reports whose Bloom bit is 1, by cell
    expected = n_c[:, None] * (shares.sum() * p01 + known_bits * (p11 - p01))
    n_other = n_c * other_share
    present = n_other > 0
    rate = np.full_like(ones, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate[present] = ((ones[present] - expected[present]) / n_other[present, None] - p01) / (p11 - p01)
        observed = np.where(n_c[:, None] > 0, ones / n_c[:, None], p01)
        var = n_c[:, None] * observed * (1.0 - observed) / (n_other[:, None] * (p11 - p01)) ** 2
    cells = np.isfinite(rate)
    if not cells.any():
        return np.full((params.num_cohorts, k), p01 + (p11 - p01) * uniform)
    weights = np.where(cells, n_other[:, None], 0.0)
    center = float((np.where(cells, rate, 0.0) * weights).sum() / weights.sum())
    spread = float(np.mean((rate[cells] - center) ** 2) - np.mean(var[cells]))
    tau2 = max(spread, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(cells, tau2 / (tau2 + var), 0.0)
    factor = np.nan_to_num(factor, nan=0.0)
    center = min(max(center, 0.0), 1.0) if math.isfinite(center) else uniform
    shrunk = center + factor * np.where(cells, rate - center, 0.0)
    return p01 + (p11 - p01) * np.clip(shrunk, 0.0, 1.0)


#: One-sided level at which a marginal decode's unexplained mass is evidence of strings outside the
#: candidates (its z-score above the standard normal's 95% quantile).
OUTSIDE_EVIDENCE_Z = 1.6448536269514722


def other_pools_outside_strings(selection: tuple[Any, ...]) -> bool:
    """Whether a string variable's Other holds strings outside its candidates, by its marginal decode.

    Without such strings Other is the undetected candidates, small and alike the detected ones; with
    them it pools many strings, and the conditionals' prior of the candidates does not describe it
    (:func:`~rappor.analysis.association._conditionals.shrink_conditionals` then estimates its cells
    by their posterior mean).  The evidence is the marginal decode's unexplained mass (unbiased
    with every candidate in its model) above 0 at the one-sided 5% level; unknown counts as evidence.
    """
    columns, labels, marginal, _ = selection
    return len(labels) > len(columns) and outside_evidence(marginal)


def outside_evidence(marginal: Any) -> bool:
    """Whether a marginal decode's unexplained mass is above 0 at the one-sided 5% level (unknown: yes)."""
    diag = getattr(marginal, "diagnostics", None)
    mass = float(getattr(diag, "unexplained_mass_unclipped", math.nan))
    se = float(getattr(diag, "unexplained_std_error", math.nan))
    if not (math.isfinite(mass) and math.isfinite(se) and se > 0):
        return True
    return mass / se >= OUTSIDE_EVIDENCE_Z


def marginal_other_share(axis: int, selection: tuple[Any, ...]) -> tuple[int, float] | None:
    """``(axis, 1 - the marginal decode's shares of the categories)`` of a string variable with Other."""
    columns, labels, marginal, _ = selection
    if marginal is None or len(labels) == len(columns):
        return None
    shares = np.clip(np.nan_to_num(np.asarray(marginal.proportion, dtype=np.float64)[columns]), 0.0, None)
    return axis, max(1.0 - float(shares.sum()), 0.0)
