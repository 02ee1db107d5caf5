"""google/rappor's full association recipe, re-implemented from its R code (private to the benchmarks).

What ``bin/decode_assoc.R`` runs (``ComputeDistributionEM(..., ignore_other = FALSE)`` in
``analysis/R/association.R``, google/rappor a13fa96), written here from that code alone -- it
uses nothing of ``rappor.analysis.association`` -- so that the benchmarks compare ``rappor decode-assoc``
with the method a user of google/rappor actually gets:

1. per variable, the bit counts (``ComputeCounts``) and the marginal decode ``Decode``
   (``analysis/R/decode.R``): ``EstimateBloomCounts``; five fits, the first on the
   estimates and four on ``Resample``-d ones (Gaussian noise of their standard errors,
   standard errors times sqrt 2); each fit is ``FitDistribution``: ``FitLasso`` (glmnet,
   non-negative, no standardization, intercept; the last fit of its path) when there
   are more than ``0.8 x`` as many candidates as (cohort, bit) rows, then lsei
   (``alternative.R``: weighted least squares, weights ``1 / std`` capped at twice
   their median, subject to ``x >= 0``, ``sum x <= 1`` and ``X x <= clamp(Y + 3 std,
   0.01, 1)``); a candidate is reported when its mean over the five fits exceeds
   ``1e-6 + 2 sd``; its proportion is ``floor(N mean) / N``;
2. a boolean (``k = 1``) has the categories ``TRUE, FALSE`` and no Other; a string
   variable gets ``Other`` with the bit rates of ``GetOtherProbs`` (including its two
   defects: the ``(cohort, bit)`` table scrambled by ``dim<-``, and clipping before
   ``Inf`` is replaced);
3. ``GetCondProb`` for every report (the map read by ``ReadMapFile`` is a pattern
   matrix, so a bit set by two hashes counts once);
4. ``EM``: the uniform table, then ``UpdatePij`` until no cell moves by ``1e-6`` or
   after ``max_em_iters = 1000`` steps.

It returns ``None`` where ``ComputeDistributionEM`` does (a variable whose marginal decode
reports nothing: ``decode_assoc.R`` then stops with "ComputeDistributionEM failed.").

glmnet's path is reproduced with scikit-learn's coordinate descent over glmnet's own
lambda sequence and stopping rules (100 lambdas from ``max |X_c' y_c| / n`` down to
``1e-4`` or ``0.01`` of it; stop when the deviance ratio gains less than ``1e-5`` of itself
or passes 0.999, or more than ``pmax`` candidates are active); lsei is solved as a
non-negative least squares problem, and by SLSQP only when that solution breaks one of
the two other constraints.

Also :func:`simulate_google`: a collection encoded by google/rappor's client rules (MD5
Bloom bits, its HMAC PRR keyed by the client's id, fresh IRR; a boolean as a one-bit
Bloom filter), with maps from its ``hash_candidates.py`` hashing.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize

import rappor
from rappor.analysis.association import BOOLEAN_CATEGORIES, AssociationSimulation, Variable, boolean_params
from rappor.collect import google_bloom_bits_table, google_prr_batch, hash_candidates_google

__all__ = ["RecipeFit", "full_recipe", "google_decode", "simulate_google"]


# --- 1. the marginal decode (decode.R, alternative.R) -------------------------------------------------

def estimate_bloom_counts(counts: np.ndarray, params: rappor.Params) -> tuple[np.ndarray, np.ndarray]:
    """``EstimateBloomCounts``: per (cohort, bit) the share of reports whose Bloom bit is 1, and its std."""
    p11, p01 = params.p11, params.p01
    p2 = p11 - p01
    n = counts[:, :1].astype(np.float64)
    v = counts[:, 1:].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        est = (v - p01 * n) / p2 / n
        p_hat = np.clip((v - p01 * n) / (n * p2), 0.0, 1.0)
        r = p_hat * p11 + (1 - p_hat) * p01
        std = np.sqrt(n * r * (1 - r) / p2**2) / n
    est[np.isinf(est)] = 0.0
    return est, std


def _glmnet_last(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``FitLasso``: the coefficients of the last fit on glmnet's path (lower limit 0, intercept, unstandardized)."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import lasso_path

    nobs, nvars = x.shape
    xc = x - x.mean(axis=0)
    yc = y - y.mean()
    lam_max = float(np.abs(xc.T @ yc).max()) / nobs
    if lam_max <= 0:
        return np.zeros(nvars)
    ratio = 1e-4 if nobs > nvars else 0.01
    lambdas = lam_max * ratio ** (np.arange(100) / 99)
    pmax = min(500, nobs * 0.8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        _, coefs, _ = lasso_path(xc, yc, alphas=lambdas, positive=True, tol=1e-7, max_iter=10_000)
    tss = float(yc @ yc)
    last, rsq_prev = 0, 0.0
    for i in range(100):
        b = coefs[:, i]
        if np.count_nonzero(b) > pmax:
            break  # glmnet drops the fit that exceeds pmax and stops
        last = i
        resid = yc - xc @ b
        rsq = 1.0 - float(resid @ resid) / tss if tss > 0 else 1.0
        if i >= 4 and (rsq - rsq_prev < 1e-5 * rsq or rsq > 0.999):
            break
        rsq_prev = rsq
    return np.asarray(coefs[:, last])


def _lsei(x: np.ndarray, est: np.ndarray, std: np.ndarray) -> np.ndarray:
    """``ConstrainedLinModel``: lsei with ``MakeLseiModel``'s weights and constraints."""
    y = est.reshape(-1)
    w = 1.0 / std.reshape(-1)
    finite = np.isfinite(w)
    w_median = float(np.median(w[finite])) if finite.any() else 1.0
    w = np.where(w > 2 * w_median, 2 * w_median, w)
    w = w / w.mean()
    a = x * w[:, None]
    b = y * w
    cap = np.clip(y + 3 * std.reshape(-1), 0.01, 1.0)
    sol, _ = optimize.nnls(a, b, maxiter=50 * x.shape[1] + 1000)
    if sol.sum() <= 1 + 1e-9 and (x @ sol <= cap + 1e-9).all():
        return sol
    cons = [{"type": "ineq", "fun": lambda z: 1.0 - z.sum(), "jac": lambda z: -np.ones_like(z)},
            {"type": "ineq", "fun": lambda z: cap - x @ z, "jac": lambda z: -x}]
    start = sol / max(1.0, sol.sum(), float((x @ sol / cap).max()))
    res = optimize.minimize(lambda z: float(np.sum((a @ z - b) ** 2)), start,
                            jac=lambda z: 2 * a.T @ (a @ z - b), bounds=[(0, None)] * x.shape[1],
                            constraints=cons, method="SLSQP", options={"maxiter": 500, "ftol": 1e-12})
    return np.maximum(res.x, 0.0)


def _fit_distribution(est: np.ndarray, std: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``FitDistribution``: Lasso to choose the support when there are many candidates, then lsei on it."""
    s = x.shape[1]
    support = np.arange(s)
    if s > est.size * 0.8:
        support = np.flatnonzero(_glmnet_last(x, est.reshape(-1)) > 0)
    coefs = np.zeros(s)
    if support.size:
        coefs[support] = _lsei(x[:, support], est, std)
    return coefs


def google_decode(counts: np.ndarray, cmap: rappor.CandidateMap, rng: np.random.Generator
                  ) -> tuple[np.ndarray, np.ndarray]:
    """``Decode(counts, map, params)$fit``: the reported candidates' columns and proportions, largest first."""
    params = cmap.params
    k, m = params.num_bloombits, params.num_cohorts
    n_total = float(counts[:, 0].sum())
    keep = np.flatnonzero(counts[:, 0] != 0)
    rows = (keep[:, None] * k + np.arange(k)[None, :]).reshape(-1)
    x = cmap.matrix[rows].toarray()
    est, std = estimate_bloom_counts(counts, params)
    est, std = est[keep], std[keep]
    fits = []
    for r in range(5):
        if r == 0:
            e, s = est, std
        else:  # Resample
            e, s = est + rng.normal(0.0, 1.0, est.shape) * std, std * np.sqrt(2.0)
        fits.append(_fit_distribution(e, s, x))
    coefs = np.array(fits)
    ave = n_total * coefs.mean(axis=0)
    ssd = n_total * coefs.std(axis=0, ddof=1)
    reported = np.flatnonzero(ave > 1e-6 + 2 * ssd)
    order = reported[np.argsort(-ave[reported], kind="stable")]
    return order, np.floor(ave[order]) / n_total


# --- 2-4. Other, conditional probabilities, EM (association.R) ----------------------------------------

def get_other_probs(counts: np.ndarray, cmap: rappor.CandidateMap, columns: np.ndarray,
                    proportion: np.ndarray) -> np.ndarray:
    """``GetOtherProbs``: per (cohort, bit), the probability that "Other" reports a 1 (shape ``(m, k)``)."""
    params = cmap.params
    k, m = params.num_bloombits, params.num_cohorts
    pstar, qstar = params.p01, params.p11
    n_total = float(counts[:, 0].sum())
    known = np.ceil(proportion * n_total / m)
    sum_known = known.sum()
    # sapply over cohorts gives a k x m matrix (column c: cohort c's map %*% known) ...
    per_cohort = np.stack([cmap.matrix[c * k:(c + 1) * k][:, columns] @ known for c in range(m)], axis=1)
    # ... which dim(.) <- c(m, k) reinterprets, column-major, as m x k.
    known_bits = per_cohort.reshape(-1, order="F").reshape((m, k), order="F")
    known_bits = (sum_known - known_bits) * pstar + known_bits * qstar
    reduced = counts.astype(np.float64) - np.column_stack([np.full(m, sum_known), known_bits])
    reduced[reduced < 0] = 0
    with np.errstate(divide="ignore", invalid="ignore"):
        probs = reduced[:, 1:] / reduced[:, :1]
    probs[probs > 1] = 1  # before NaN and Inf are replaced: x / 0 with x > 0 becomes 1
    probs[np.isnan(probs)] = 0
    return probs


def string_conditionals(batch: rappor.ReportBatch, cmap: rappor.CandidateMap, columns: np.ndarray,
                        prob_other: np.ndarray | None) -> np.ndarray:
    """``GetCondProbStringReports``: ``P(report | candidate)`` per report (and Other last), shape (n, C)."""
    params = cmap.params
    k, m = params.num_bloombits, params.num_cohorts
    pstar, qstar = params.p01, params.p11
    sets = cmap.matrix[:, columns].toarray().reshape(m, k, len(columns)) > 0
    n = len(batch)
    out = np.empty((n, len(columns) + (prob_other is not None)))
    for lo in range(0, n, 1 << 14):
        hi = min(n, lo + (1 << 14))
        chunk = rappor.ReportBatch(params=batch.params, cohorts=batch.cohorts[lo:hi], words=batch.words[lo:hi])
        r = chunk.bits().astype(bool)
        coh = batch.cohorts[lo:hi]
        log_p = np.where(r, np.log(pstar), np.log1p(-pstar)).sum(axis=1)
        swap = np.where(r, np.log(qstar) - np.log(pstar), np.log1p(-qstar) - np.log1p(-pstar))
        out[lo:hi, :len(columns)] = np.exp(log_p[:, None] + np.einsum("nk,nks->ns", swap, sets[coh]))
        if prob_other is not None:
            po = prob_other[coh]
            out[lo:hi, -1] = np.where(r, po, 1.0 - po).prod(axis=1)
    return out


def boolean_conditionals(batch: rappor.ReportBatch) -> np.ndarray:
    """``GetCondProbBooleanReports``: ``(qstar, pstar)`` for a 1 and ``(1 - qstar, 1 - pstar)`` for a 0: TRUE, FALSE."""
    params = batch.params
    one = batch.bits()[:, 0].astype(bool)
    return np.where(one[:, None], [params.p11, params.p01], [1 - params.p11, 1 - params.p01])


def em(conds: Sequence[np.ndarray], *, max_em_iters: int = 1000, epsilon: float = 1e-6) -> tuple[np.ndarray, int]:
    """``EM`` with ``UpdatePij``: ``pij <- mean_i(pij * L_i / sum(pij * L_i))`` from the uniform table."""
    first = conds[0]
    rest = conds[1] if len(conds) > 1 else np.ones((first.shape[0], 1))
    for c in conds[2:]:
        rest = (rest[:, :, None] * c[:, None, :]).reshape(first.shape[0], -1)
    n = first.shape[0]
    shape = tuple(c.shape[1] for c in conds)
    pij = np.full((first.shape[1], rest.shape[1]), 1.0 / (first.shape[1] * rest.shape[1]))
    i = 0
    for i in range(1, max_em_iters + 1):
        d = np.einsum("ij,ij->i", first @ pij, rest)
        with np.errstate(divide="ignore"):
            inv = np.where(d > 0, 1.0 / d, 0.0)
        new = pij * (first.T @ (rest * inv[:, None])) / n
        dif = float(np.abs(new - pij).max())
        pij = new
        if dif < epsilon:
            break
    return pij.reshape(shape), i


@dataclass
class RecipeFit:
    """What ``ComputeDistributionEM`` returns: the categories of every variable, the joint table, the EM steps."""

    categories: list[list[str]]
    table: np.ndarray
    iterations: int


def full_recipe(reports: Sequence[rappor.ReportBatch], variables: Sequence[Variable], *,
                rng: np.random.Generator, max_em_iters: int = 1000,
                marginals: Sequence[tuple[np.ndarray, np.ndarray] | None] | None = None) -> RecipeFit | None:
    """``ComputeDistributionEM(reports, ..., ignore_other = FALSE)`` (``None`` when a marginal reports nothing).

    ``marginals`` (per variable: columns and proportions, ``None`` for a boolean) replaces the
    marginal decodes, as its ``marginals`` argument does.
    """
    conds, cats = [], []
    for j, (batch, var) in enumerate(zip(reports, variables)):
        if var.kind == "boolean":
            conds.append(boolean_conditionals(batch))
            cats.append(list(BOOLEAN_CATEGORIES))
            continue
        counts = rappor.Aggregate.from_reports(batch).counts
        given = None if marginals is None else marginals[j]
        columns, proportion = given if given is not None else google_decode(counts, var.candidate_map, rng)
        if len(columns) == 0:
            return None
        prob_other = get_other_probs(counts, var.candidate_map, columns, proportion)
        conds.append(string_conditionals(batch, var.candidate_map, columns, prob_other))
        cats.append([var.candidate_map.strings[c] for c in columns] + ["Other"])
    table, iterations = em(conds, max_em_iters=max_em_iters)
    return RecipeFit(categories=cats, table=table, iterations=iterations)


# --- google/rappor's client rules ---------------------------------------------------------------------

def _irr(prr: np.ndarray, params: rappor.Params, gen: np.random.Generator) -> np.ndarray:
    """The IRR: each bit 1 with probability q where the PRR is 1, p where it is 0."""
    u = gen.random(prr.shape)
    return np.where(prr > 0, u < params.prob_q, u < params.prob_p).astype(np.uint8)


def simulate_google(params: rappor.Params, joint: np.ndarray, values: Sequence[Sequence[str] | None], n: int, *,
                    candidates: Sequence[Sequence[str] | None], rng: int,
                    reports_per_client: int = 1) -> AssociationSimulation:
    """Draw ``n`` clients from ``joint`` and encode their reports of every variable by google/rappor's client rules.

    Client ``i``'s secret is ``c<i>`` (as google/rappor's simulator), its cohort uniform;
    every variable gets its own PRR under that secret (keyed by the Bloom filter, so
    two variables with the same Bloom filter share it, as its client does).  With
    ``reports_per_client`` R, each client sends R report tuples: R IRRs of each PRR (the
    memoized client of a daily report); ``report_clients`` says whose each tuple is.
    """
    gen = np.random.default_rng(rng)
    probs = np.asarray(joint, dtype=np.float64)
    probs = probs / probs.sum()
    cells = gen.choice(probs.size, size=n, p=probs.reshape(-1))
    held = np.stack(np.unravel_index(cells, probs.shape), axis=1).astype(np.int64)
    cohorts = gen.integers(0, params.num_cohorts, size=n, dtype=np.int64)
    secrets = [f"c{i}".encode() for i in range(n)]
    whose = np.repeat(np.arange(n, dtype=np.int64), reports_per_client) if reports_per_client > 1 else None
    per_report = cohorts if whose is None else cohorts[whose]

    def repeated(prr: np.ndarray) -> np.ndarray:  # a client's PRR in each of its reports
        return prr if whose is None else prr[whose]

    variables, batches, labels = [], [], []
    for j, vals in enumerate(values):
        if vals is None:
            bparams = boolean_params(params)
            bloom = (held[:, j] == 0).astype(np.uint8)[:, None]  # index 0 is TRUE: the bit set
            prr = repeated(google_prr_batch(secrets, bloom, bparams))
            batches.append(rappor.ReportBatch.from_bits(bparams, per_report, _irr(prr, bparams, gen)))
            variables.append(Variable.boolean(f"var{j + 1}", params))
            labels.append(BOOLEAN_CATEGORIES)
            continue
        k = params.num_bloombits
        table = google_bloom_bits_table(list(vals), params)  # (U, m, h)
        weights = np.left_shift(np.uint64(1), table.astype(np.uint64))
        blooms = np.bitwise_or.reduce(weights, axis=2)  # (U, m): each value's Bloom filter per cohort
        prr = repeated(google_prr_batch(secrets, blooms[held[:, j], cohorts], params))
        irr = _irr(prr, params, gen)
        batches.append(rappor.ReportBatch.from_bits(params, per_report, irr[:, :k]))
        cand = list(vals) if candidates[j] is None else list(candidates[j])
        variables.append(Variable.string(f"var{j + 1}", hash_candidates_google(cand, params)))
        labels.append(tuple(vals))
    return AssociationSimulation(variables=tuple(variables), reports=tuple(batches), values=tuple(labels),
                                 joint=probs, held=held, report_clients=whose)
