"""One decode on arrays (private): the steps of the method in order.

This module owns the order of the steps (:func:`estimate`) and what they hand each
other: the configuration (:class:`DecodeOptions`), the fit of the distinguishable
candidates (:class:`_DistinctFit`) and the per-candidate result (:class:`Estimates`).

1. :func:`~._problem.weighted_problem`: debias and whiten the counts, merge the
   candidates that set the same bits in every cohort (they cannot be told apart);
2. orthogonal designs (every row holds exactly one candidate): the closed form,
   :func:`~._fit.closed_form_fit`, tested against the normal;
3. otherwise add one column for the strings that are *not* candidates (their ones
   spread evenly over the bits), whose coefficient is the unexplained mass; when there
   are more candidates than ``0.8`` times the (cohort, bit) rows, screen them with a
   non-negative Lasso (:mod:`._screen`); fit non-negative least squares with the total
   share capped at 1 (:func:`~._fit.fit_support`), test each candidate's share > 0
   against the null (:func:`~._null.null_pvalues`), adjust (:mod:`._adjust`) and add
   the left-out candidates that pass to the model until none is left out;
4. residual diagnostics, and with ``shares="all"``
   (default) every candidate's share from the empirical-Bayes regression
   (:func:`~._shares.regression_shares`), the detections staying the test's;
5. spread the results back to every candidate (group members copy their group's).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ..._util import tails
from ..._util.lazy import lazy_module
from ..._util.validation import RngLike, check_rng
from ...params import Params
from ._adjust import DetectionRule
from ._dispersion import residual_skewness
from ._fit import (closed_form_fit, fit_support, free_column_coefficient, in_span, max_std_residual, orthogonal_part,
                   whitened_residuals)
from ._null import RandomStringNull, normal_pvalues, null_pvalues
from ._problem import Array, IntArray, WeightedDesign, WeightedProblem, fitted_rates, reweighted, weighted_problem
from ._result import DecodeDiagnostics
from ._screen import cv_lasso_alpha, lasso_screen
from ._shares import fixed_unexplained, regression_shares

if TYPE_CHECKING:
    import scipy.sparse as sp
else:  # imported on first use: keeps `import rappor` and CLI start-up light
    sp = lazy_module("scipy.sparse")

#: Seed of the random-string null (and of the cross-validation folds) when ``rng`` is None:
#: decoding stays deterministic.
DEFAULT_SEED = 0
#: Screen with the Lasso when the distinct candidates exceed this share of the rows
#: (google/rappor ``decode.R`` uses the same 0.8).
SCREEN_RATIO = 0.8


@dataclass(frozen=True, slots=True, kw_only=True)
class DecodeOptions:
    """A :class:`~rappor.analysis.decoder.Decoder`'s configuration, validated, as :func:`estimate` reads it."""

    significance_level: float
    correction: str
    lasso_alpha: float | str | None
    screening: str
    model_unexplained: bool
    max_refits: int
    null: str
    rng: RngLike
    shares: str = "detected"

    @property
    def rule(self) -> DetectionRule:
        """The null, correction and level that decide detection."""
        return DetectionRule(null=self.null, correction=self.correction, level=self.significance_level)

    def generator(self) -> np.random.Generator:
        """``rng`` as a generator (the fixed :data:`DEFAULT_SEED` when None)."""
        return check_rng(DEFAULT_SEED if self.rng is None else self.rng)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Estimates:
    """Per-candidate results of one decode (input order), and its diagnostics (no time yet)."""

    proportion: Array
    prop_std_error: Array
    pvalue: Array
    adjusted_pvalue: Array
    group: IntArray
    diagnostics: DecodeDiagnostics
    fitted_proportion: Array | None = None  # the test's least-squares shares, when proportion differs


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class _DistinctFit:
    """The fit of the distinguishable candidates, by either path (closed form or constrained)."""

    coef: Array
    se: Array
    pvalue: Array
    unexplained: tuple[float, float]  # the fit's own unexplained mass and its SE
    reported_unexplained: tuple[float, float] | None  # what is reported instead, when it differs
    rss: float
    n_parameters: int
    dispersion: float | None  # None: max(1, rss / dof)
    modelled_unexplained: bool
    screened: bool
    lasso_alpha: float | None
    selected: int
    refits: int
    null_law: str
    null: RandomStringNull | None


def estimate(options: DecodeOptions, counts: npt.NDArray[np.int64], matrix: sp.csc_matrix,
             params: Params) -> Estimates:
    """Decode ``counts`` (an Aggregate's table) against ``matrix`` (a CandidateMap's)."""
    problem = weighted_problem(counts, matrix, params)
    # One whitened copy of the design serves the fit and the shares (1.5 GB at 1 M candidates).
    design = None if problem.orthogonal else problem.weighted_design()
    fitted = _closed_form(problem) if design is None else _constrained(problem, design, options)
    rates = fitted_rates(problem, whitened_residuals(problem, fitted.coef, fitted.unexplained[0]
                                                     if fitted.modelled_unexplained else None))
    if rates is not None:  # the rows' variances at the first fit's rates: one reweighting step
        design = None  # the first fit's whitened design goes before the second is built (1.5 GB at 1 M candidates)
        problem = reweighted(problem, rates)
        design = None if problem.orthogonal else problem.weighted_design()
        fitted = _closed_form(problem) if design is None else _constrained(problem, design, options)
    dof = max(problem.n_rows - fitted.n_parameters, 1)
    fit_unexplained = fitted.unexplained[0]
    raw, raw_se = fitted.reported_unexplained or fitted.unexplained
    null = fitted.null
    residuals = whitened_residuals(problem, fitted.coef, fit_unexplained if fitted.modelled_unexplained else None)
    skew, skew_se = residual_skewness(residuals)  # nan below 3 residuals (skew_se too)
    diagnostics = DecodeDiagnostics(
        cohorts_used=int(problem.n_rows // params.num_bloombits), distinguishable=int(problem.n_distinct),
        unexplained_mass=min(max(raw, 0.0), 1.0), unexplained_std_error=raw_se, unexplained_mass_unclipped=raw,
        modelled_unexplained=fitted.modelled_unexplained,
        chi2=float(fitted.rss), dof=int(dof), chi2_pvalue=float(tails.chi2_sf(fitted.rss, dof)),
        dispersion=float(max(1.0, fitted.rss / dof) if fitted.dispersion is None else fitted.dispersion),
        max_abs_std_residual=max_std_residual(residuals), residuals=_by_cohort_and_bit(residuals, problem),
        screened=fitted.screened, lasso_alpha=fitted.lasso_alpha, selected=fitted.selected, refits=fitted.refits,
        null_law=fitted.null_law, null_mean=None if null is None else null.mean,
        null_sd=None if null is None else null.sd, null_skewness=None if null is None else null.skewness,
        null_exact=None if null is None else null.exact, pvalue_floor=None if null is None else null.floor,
        residual_skewness=skew, residual_skewness_se=skew_se, weight_rates=_by_cohort_and_bit(problem.rate, problem),
    )
    coef = fitted.coef
    adjusted = options.rule.adjust(fitted.pvalue)
    fitted_proportion: Array | None = None
    if options.shares == "all" and problem.n_distinct:
        fitted_proportion = problem.spread(coef, math.nan)
        coef = _all_shares(problem, problem.weighted_design() if design is None else design, fitted, raw, raw_se,
                           skew / skew_se)
    return Estimates(proportion=problem.spread(coef, math.nan), prop_std_error=problem.spread(fitted.se, math.nan),
                     pvalue=problem.spread(fitted.pvalue, math.nan), adjusted_pvalue=problem.spread(adjusted, math.nan),
                     group=problem.group, diagnostics=diagnostics,
                     fitted_proportion=fitted_proportion)


def _all_shares(problem: WeightedProblem, design: WeightedDesign, fitted: _DistinctFit, unexplained: float,
                unexplained_se: float, skewness_z: float) -> Array:
    """Every distinguishable candidate's empirical-Bayes share (:func:`~._shares.regression_shares`);
    ``skewness_z``: the fit's residual skewness over its standard error (:func:`~._shares.fixed_unexplained`)."""
    u_star = (fixed_unexplained(unexplained, unexplained_se, skewness_z=skewness_z)
              if fitted.modelled_unexplained else 0.0)
    s_u = problem.n_distinct
    return regression_shares(design.candidates, problem.b, design.col_sq_norms[:s_u], np.nan_to_num(fitted.coef),
                             background=design.background if fitted.modelled_unexplained else None,
                             unexplained=u_star, screened=fitted.screened,
                             dispersion=max(1.0, fitted.rss / max(problem.n_rows - fitted.n_parameters, 1))
                             if fitted.dispersion is None else fitted.dispersion)


def _by_cohort_and_bit(values: Array, problem: WeightedProblem) -> Array:
    """Per-row ``values`` as a ``(num_cohorts, num_bloombits)`` table, nan for cohorts without reports."""
    m, k = problem.params.num_cohorts, problem.params.num_bloombits
    out = np.full(m * k, math.nan)
    out[problem.rows] = values
    return out.reshape(m, k)


def _closed_form(problem: WeightedProblem) -> _DistinctFit:
    """Orthogonal designs: independent normal estimates, no residual structure to model."""
    fit = closed_form_fit(problem)
    return _DistinctFit(coef=fit.coef, se=fit.se, pvalue=normal_pvalues(fit.z), unexplained=fit.unexplained,
                        reported_unexplained=None, rss=fit.rss, n_parameters=len(fit.coef), dispersion=None,
                        modelled_unexplained=False, screened=False, lasso_alpha=None, selected=problem.n_distinct,
                        refits=0, null_law="normal", null=None)


def _constrained(problem: WeightedProblem, design: WeightedDesign, options: DecodeOptions) -> _DistinctFit:
    """Screen, fit with shares >= 0 summing to at most 1, test, add what passes, refit."""
    s_u, b, rule = problem.n_distinct, problem.b, options.rule
    screen = options.screening == "lasso" or (options.screening == "auto" and s_u > SCREEN_RATIO * problem.n_rows)
    if screen:
        selected, lasso_alpha = _screen(problem, design, options)
    else:
        selected, lasso_alpha = np.arange(s_u), None
    in_model = design.candidates[:, selected] if screen else design.candidates  # (not screened: no copy)
    bg_perp = orthogonal_part(in_model, design.background) if options.model_unexplained else None
    use_bg = options.model_unexplained and not in_span(in_model, design.background, perp=bg_perp)
    # When not use_bg, the non-candidate column is in no support: its coefficient stays 0.
    extra = np.array([s_u], dtype=np.int64) if use_bg else np.zeros(0, np.int64)
    refits = 0
    rng = options.generator()
    while True:
        fit = fit_support(design.a, b, np.union1d(selected, extra), max_sum=1.0, use_dispersion=True,
                          col_sq_norms=design.col_sq_norms)
        pvalue, null = null_pvalues(problem, design, fit, extra, rule, rng, screened=bool(screen))
        detected = rule.detected(pvalue)
        new = np.setdiff1d(np.flatnonzero(detected), fit.support)
        # Stop when nothing new is detected, or every new one was in this fit already (its
        # constrained estimate is 0: refitting would give the same answer).
        if len(new) == 0 or refits >= options.max_refits or np.all(np.isin(new, selected)):
            break
        selected = np.union1d(fit.support[fit.support < s_u], new)
        refits += 1
    reported: tuple[float, float] | None = None
    if use_bg:
        unexplained = (float(fit.coef[s_u]), float(fit.se[s_u]))
        # What is reported is the *unconstrained* coefficient of the non-candidate column
        # with every candidate in the model (after screening: every detected one): unbiased,
        # where the fit's (shares >= 0) lets absent candidates soak up the mass (500 absent
        # candidates: 0.00 for a truth of 1).
        if screen:
            reported = free_column_coefficient(design.candidates[:, np.flatnonzero(detected)], design.background, b,
                                               dispersion=fit.dispersion)
        else:
            reported = free_column_coefficient(design.candidates, design.background, b, dispersion=fit.dispersion,
                                               perp=bg_perp)
    else:
        unexplained = fit.one_minus_sum()
    return _DistinctFit(coef=fit.coef[:s_u], se=fit.se[:s_u], pvalue=pvalue, unexplained=unexplained,
                        reported_unexplained=reported, rss=fit.rss, n_parameters=len(fit.support),
                        dispersion=fit.dispersion, modelled_unexplained=bool(use_bg), screened=bool(screen),
                        lasso_alpha=lasso_alpha, selected=int(len(selected)), refits=refits, null_law=options.null,
                        null=null)


def _screen(problem: WeightedProblem, design: WeightedDesign, options: DecodeOptions) -> tuple[IntArray, float]:
    """The candidates the Lasso keeps, and its penalty."""
    s_u = problem.n_distinct
    penalty = options.lasso_alpha
    if penalty == "cv":
        free = design.background if options.model_unexplained else None
        penalty = cv_lasso_alpha(design.candidates, problem.b, problem.cohort_of_row, free=free, rule="1se",
                                 rng=options.generator())
    alpha = None if penalty is None else float(penalty)  # a number once "cv" is resolved (validated by Decoder)
    if options.model_unexplained:
        return lasso_screen(design.a, problem.b, significance=float(options.significance_level), n_tests=s_u,
                            lasso_alpha=alpha, free_last=True, col_sq_norms=design.col_sq_norms)
    return lasso_screen(design.candidates, problem.b, significance=float(options.significance_level), n_tests=s_u,
                        lasso_alpha=alpha, free_last=False, col_sq_norms=design.col_sq_norms[:s_u])
