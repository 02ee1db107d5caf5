"""The association decoder: configuration, then one call from reports to a joint table (private)."""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt

from ..._util.lazy import lazy_module
from ..._util.validation import (
    CheckedParameters,
    ParameterCheck,
    RngLike,
    check_bool,
    check_int,
    check_probability,
    check_real,
    check_rng,
    check_rng_parameter,
    options_check,
)
from ..._util.results import ConfidenceInterval
from ...collect._aggregate import Aggregate
from ...exceptions import ConvergenceWarning, DecodeError, InvalidParameterError, RapporWarning
from ...client._reports import ReportBatch
from ._inference import clustered_tail_bound, design_effects, independence_null_draws, projected_draws
from ._likelihood import CodedLikelihood, Factor, group_reports, likelihood_factors
from ._mixture import FitResult, ProductLikelihood, _single_thread, fit_mixture
from ._profile import profile_intervals
from ._other import (OutsideNoise, marginal_other_share, other_bit_probabilities, other_pools_outside_strings, report_folds,
                     undetected_other_probabilities)
from ._result import AssociationResult, IndependenceTest
from ._selection import marginal_other_table, selection_shift
from ._conditionals import string_pair_estimate
from ._shrinkage import nested_split_posterior, shrink_boolean_split, with_splits
from ._nuisance import client_nuisance_products, nuisance_covariance, with_nuisance
from ._clusters import cluster_score_products, repeats_clients, repeats_without_ids
from ._repeats import client_factor_bytes, client_factors, client_reports
from ._inputs import check_fit_memory, check_inputs, client_codes, client_rows
from ._signed import observed_covariance, signed_maximum
from ._threads import shared_threads
from ._variables import OTHER, Variable

if TYPE_CHECKING:
    from scipy import special

    from ..decoder import Decoder
else:  # imported on first use: keeps `import rappor` light (scipy.special, not scipy.stats: 0.7 s to import)
    special = lazy_module("scipy.special")

__all__ = ["AssociationDecoder"]

#: Largest table (cells) for which standard errors are computed by default (the
#: information matrix is cells x cells and costs patterns x cells^2 to form).
MAX_COVARIANCE_CELLS = 2048
#: Dense per-client factors (bytes) always taken for the exact likelihood of repeated reports (_repeats); above
#: it only while no larger than the reports' patterns (_inputs.client_rows), else those patterns are fitted and
#: the covariance clustered by client (_clusters).
MAX_CLIENT_FACTOR_BYTES = 1 << 30
#: Largest table whose standard errors account for the boundary (projected normal); larger
#: tables get the inverse information, which overstates them near the boundary.
MAX_PROJECTED_CELLS = 512
#: Monte Carlo draws of the projected normal (relative error of a variance about 2%).
PROJECTION_DRAWS = 1000
#: The stages of a decode, as :meth:`AssociationDecoder.decode` reports them to ``progress``.
STAGES = ("marginal decodes", "likelihoods", "fit", "standard errors", "independence test", "shrinkage")
#: Draws of the independence statistic's law (Monte Carlo error of a p-value of 0.05: 0.007).
INDEPENDENCE_DRAWS = 1000


def _check_marginal_decoder(value: Any, name: str, owner: str) -> None:
    if value is not None and not hasattr(value, "decode"):
        msg = f"The {name!r} parameter of {owner} must be a rappor.Decoder or None. Got {value!r} instead."
        raise InvalidParameterError(msg)


def _check_profile_level(value: Any, name: str, owner: str) -> None:
    if value is not None:
        check_probability(value, name, owner, open_low=True, open_high=True)


class AssociationDecoder(CheckedParameters):
    """Estimate the joint distribution of two or three variables from per-client report tuples.

    Parameters
    ----------
    candidates : {"detected", "all"}, default="detected"
        Categories of a string variable: the candidates its marginal decode detects (as
        google/rappor ``decode_assoc.R``) or every candidate of its map.
    other : {"undetected", "shrunk", "reference", "none"}, default="undetected"
        The category of strings that are not among them, with per-(cohort, bit)
        probabilities of a 1: those of the candidates left out of the table in their
        marginal shares plus, for the rest, the outside strings' rates estimated from the
        other half of each cohort's reports where the marginal decode shows such strings,
        else a random string's (``"undetected"``); estimated
        from the counts the candidates leave unexplained, shrunk towards their mean
        (``"shrunk"``: fitted to the same counts, it biases the table towards "Other");
        exactly as google/rappor's ``GetOtherProbs`` (``"reference"``); or no such
        category (``"none"``: the mass of other strings is then spread over the
        candidates).  See :mod:`rappor.analysis.association._other`.
    method : {"sqp", "em"}, default="sqp"
        Maximizer of the likelihood: sequential quadratic programming (mix-SQP; a handful
        of iterations) or google/rappor's EM iteration (thousands at realistic noise).
        Both maximize the same likelihood.
    max_iterations : int, default=1000
        Iteration cap (``decode_assoc.R --max-em-iters``).
    tolerance : float, default=1e-3
        Convergence: the certified gap to the maximum log-likelihood.
    std_errors : bool, default=True
        Compute the covariance of the table (tables up to 2048 cells).
    independence_test : bool, default=True
        Likelihood-ratio test of independence (one more fit per variable).
    decoder : rappor.Decoder or None, default=None
        Decoder of the string variables' marginals (``rappor.Decoder()`` by default).
    intervals : {"signed", "projected", "wald"}, default="signed"
        Intervals of the cells (:meth:`AssociationResult.confidence_interval`).
        ``"signed"``: the Wald interval of the likelihood's maximum over signed tables (cells
        may go below 0; its inverse information as covariance), clipped to ``[0, 1]`` and
        widened to hold the estimate -- it does not inherit the constrained maximum's bias at
        the boundary (:mod:`rappor.analysis.association._signed`); where that maximum does
        not exist, the ``"projected"`` interval.  ``"projected"``: ``estimate ± z *
        std_error`` with the upper end raised to the ``(1 + level) / 2`` quantile of the
        estimate's projected-normal law where that law is truncated at 0
        (:func:`rappor.analysis.association._inference.boundary_interval`).  ``"wald"``: the
        plain ``estimate ± z * std_error`` (the first versions' default).  Tables above 512
        cells get the Wald interval.
    profile_level : float or None, default=None
        Also compute profile-likelihood intervals of the cells at this level (about 10
        mixture fits per cell: a minute for a 135-cell table of 100,000 reports); they are
        then what :meth:`AssociationResult.confidence_interval` returns at this level.
        See :mod:`rappor.analysis.association._profile`.
    shrinkage : {"conditionals", "boolean-split", "none"}, default="conditionals"
        For one string and one boolean variable, the reported table shrinks each string
        category's split between TRUE and FALSE towards the categories' mean split by the
        empirical-Bayes factor ``tau^2 / (tau^2 + v_i)`` (Efron and Morris 1975; see
        :mod:`rappor.analysis.association._shrinkage`), keeping the categories' shares; for
        two string variables and a boolean, each pair's split is shrunk towards its parent
        category's shrunk split (the string variable around whose splits the pairs' spread less)
        plus the other string's shrunk effect
        (:func:`~rappor.analysis.association._shrinkage.nested_split_posterior`).
        ``"conditionals"`` also estimates the two string variables' shares under one
        nonparametric prior of the rows' conditional values, fitted to the table (empirical
        Bayes), by the Bayes rule for total variation: the cells (with a boolean, the three-way
        cells, each pair's draws split by draws of its split) at one common posterior quantile (an
        Other that pools strings outside the candidates, by its marginal decode, at its posterior
        mean; :mod:`rappor.analysis.association._conditionals`);
        ``"boolean-split"`` keeps their
        maximum-likelihood shares.  The maximum-likelihood table stays in
        :attr:`AssociationResult.maximum_likelihood` and sets the intervals (widened where
        needed to hold the estimate).  ``"none"``: report the maximum-likelihood table.
    other_share : {"marginal", "fit"}, default="marginal"
        With ``candidates="detected"`` and ``other="undetected"``: the reported table's Other total for each string
        variable is its marginal decode's (1 minus its categories' shares), the rest of the
        table moved from the maximum-likelihood table as the likelihood's quadratic
        approximation says (:func:`~rappor.analysis.association._selection.marginal_other_table`;
        the maximum-likelihood table stays in :attr:`AssociationResult.maximum_likelihood`; the
        move needs the inverse information, so not with ``std_errors=False`` or above 2,048 cells).
        The joint fit's Other is too low when the categories are chosen by the same reports
        (the winner's curse; :mod:`rappor.analysis.association._selection`).  ``"fit"``: the
        joint fit's own table.  With ``shrinkage="conditionals"`` the two string variables'
        shares come from the conditionals' prior fitted to the maximum-likelihood table, which
        replaces the move there (it acts on one string variable's tables).
    rng : numpy.random.Generator, int or None, default=None
        Seeds the SQP's Hessian subsample (seed 0 when None: deterministic).

    Examples
    --------
    >>> import numpy as np, rappor
    >>> from rappor.analysis.association import AssociationDecoder, Variable, simulate_association
    >>> params = rappor.Params(num_bloombits=16, num_hashes=2, num_cohorts=16,
    ...                        prob_p=0.25, prob_q=0.75, prob_f=0.0)
    >>> joint = np.array([[0.3, 0.1], [0.1, 0.2], [0.2, 0.1]])     # (string, boolean)
    >>> sim = simulate_association(params, joint, [["a", "b", "c"], None], 20_000, rng=0)
    >>> res = AssociationDecoder().decode(sim.reports, sim.variables)
    >>> res.categories
    (('a', 'b', 'c', 'Other'), ('TRUE', 'FALSE'))
    >>> res.converged, res.iterations < 20
    (True, True)
    """

    _parameter_constraints: ClassVar[dict[str, ParameterCheck]] = {
        "candidates": options_check(("detected", "all")),
        "other": options_check(("undetected", "shrunk", "reference", "none")),
        "method": options_check(("sqp", "em")),
        "max_iterations": lambda value, name, owner: check_int(value, name, owner, low=0),
        "tolerance": lambda value, name, owner: check_real(value, name, owner, low=0.0),
        "std_errors": check_bool,
        "independence_test": check_bool,
        "decoder": _check_marginal_decoder,
        "intervals": options_check(("signed", "projected", "wald")),
        "profile_level": _check_profile_level,
        "shrinkage": options_check(("conditionals", "boolean-split", "none")),
        "other_share": options_check(("marginal", "fit")),
        "rng": check_rng_parameter,
    }

    def __init__(self, *, candidates: Literal["detected", "all"] = "detected",
                 other: Literal["undetected", "shrunk", "reference", "none"] = "undetected", method: Literal["sqp", "em"] = "sqp",
                 max_iterations: int = 1000, tolerance: float = 1e-3, std_errors: bool = True,
                 independence_test: bool = True, decoder: Decoder | None = None,
                 intervals: Literal["signed", "projected", "wald"] = "signed", profile_level: float | None = None,
                 shrinkage: Literal["conditionals", "boolean-split", "none"] = "conditionals",
                 other_share: Literal["marginal", "fit"] = "marginal", rng: RngLike = None) -> None:
        self.candidates = candidates
        self.other = other
        self.method = method
        self.max_iterations = max_iterations
        self.tolerance = tolerance
        self.std_errors = std_errors
        self.independence_test = independence_test
        self.decoder = decoder
        self.intervals = intervals
        self.profile_level = profile_level
        self.shrinkage = shrinkage
        self.other_share = other_share
        self.rng = rng

    def decode(self, reports: Sequence[ReportBatch], variables: Sequence[Variable], *,
               clients: npt.ArrayLike | None = None, progress: Callable[[str], None] | None = None,
               ) -> AssociationResult:
        """Estimate the joint distribution.

        Parameters
        ----------
        reports : sequence of ReportBatch
            One batch per variable, row ``i`` of every batch from the same client: same
            length and the same cohort in every row.
        variables : sequence of Variable
            The variables, in the same order (two or three; one gives its marginal).
        clients : array-like of shape (n_reports,), optional
            Each report's client id; by default every report is its own client.  Where a client
            reported more than once (under one permanent response) the likelihood is that of each
            client's reports together (:mod:`~rappor.analysis.association._repeats`), or, with
            too many clients for its factors, that of the reports with the covariance clustered
            by client (:mod:`~rappor.analysis.association._clusters`).
        progress : callable or None, default=None
            Called with the name of each stage as it starts (:data:`STAGES`), e.g. to
            advance a progress bar (``rappor decode-assoc`` draws one on a terminal).

        Returns
        -------
        AssociationResult

        Raises
        ------
        InvalidParameterError
            If the batches differ in length or in a row's cohort, or do not match their
            variables' parameters.
        DecodeError
            If no report is left, or a string variable has no category at all.

        Warns
        -----
        ConvergenceWarning
            If the fit stops at ``max_iterations`` (or EM at its step criterion) before
            the certified gap reaches ``tolerance``.
        RapporWarning
            If some report tuples are impossible under every category (dropped).
        """
        self._check_parameters()
        batches, variables = check_inputs(reports, variables)
        codes = None if clients is None else client_codes(clients, batches[0].cohorts, "AssociationDecoder.decode")
        if self.candidates == "all":  # known before the marginal decodes: refuse at once
            check_fit_memory(len(batches[0]), [len(v.candidate_map) for v in variables], variables)
        # One BLAS thread throughout: the passes are blocks of a few thousand rows, and on a
        # busy 2-core machine the default pool oversubscribed the cores (fit 21-23 s instead of 5 s).
        # The passes' own threads are started once for the decode (_threads.shared_threads).
        with _single_thread(), shared_threads():
            return self._decode(batches, variables, progress or (lambda stage: None), codes)

    def _decode(self, batches: list[ReportBatch], variables: list[Variable], step: Callable[[str], None],
                codes: npt.NDArray[np.int64] | None) -> AssociationResult:
        """:meth:`decode` on checked inputs."""
        started = time.perf_counter()
        gen = check_rng(0 if self.rng is None else self.rng)
        step(STAGES[0])
        decoder = self.decoder
        if decoder is None:
            from ..decoder import Decoder

            decoder = Decoder()
        repeats = repeats_clients(codes)
        repeated = codes if repeats else None
        folds = report_folds(batches[0].cohorts, clients=repeated) if self.other == "undetected" else None
        chosen = [self._categories(batch, var, decoder, folds, repeated) for batch, var in zip(batches, variables)]
        selections, noises = [c[0] for c in chosen], [c[1] for c in chosen]
        if codes is None and (why := repeats_without_ids(batches, selections, [v.name for v in variables])):
            warnings.warn(why, RapporWarning, stacklevel=3)
        t_marginal = time.perf_counter()
        step(STAGES[1])
        by_fold = any(sel[3] is not None and sel[3].shape[0] > var.params.num_cohorts
                      for sel, var in zip(selections, variables))
        # Repeated reports: the exact likelihood of each client's reports (_repeats; rows are clients), where
        # its dense factors fit; else the reports' patterns and the covariance clustered by client (_clusters).
        by_client = repeats and codes is not None \
            and client_rows(int(codes.max()) + 1, int(codes.size), selections, variables, MAX_CLIENT_FACTOR_BYTES)
        patterns = None if by_client else group_reports(batches, folds if by_fold else None, index_reports=repeats)
        factors: list[Factor]
        if patterns is None:
            assert codes is not None
            check_fit_memory(int(codes.max()) + 1, [len(sel[0]) for sel in selections], variables,  # the fit's arrays
                             client_factor_bytes(int(codes.max()) + 1, selections))
            per_client = client_reports(batches, codes, folds if by_fold else None)
            dense, impossible = client_factors(variables, selections, per_client)
            factors = list(dense)
            if all(n is None for n in noises):  # kept (C x k floats a variable) only for the outside rates' noise
                del per_client
            weights = np.ones(impossible.size)
            reports_of = np.bincount(codes, minlength=impossible.size).astype(np.float64)
        else:
            check_fit_memory(len(patterns), [len(sel[0]) for sel in selections], variables)
            factors, impossible = likelihood_factors(patterns, variables, selections)
            weights = reports_of = patterns.counts.astype(np.float64)
        dropped = int(reports_of[impossible].sum())
        if dropped:
            warnings.warn(f"{dropped} report tuple(s) are impossible under every category (a probability of 0 "
                          f"for each) and were left out", RapporWarning, stacklevel=3)
            patterns = None if patterns is None else patterns.select(~impossible)
            factors = [f.select(~impossible) if isinstance(f, CodedLikelihood) else f[~impossible] for f in factors]
            weights, reports_of = weights[~impossible], reports_of[~impossible]
        if weights.size == 0:
            raise DecodeError("No report is left to analyse.")
        # (each report's pattern, its client) where some client reported more than once (_clusters)
        clustered = None if patterns is None or patterns.reports is None or codes is None else (patterns.reports, codes)
        lik = ProductLikelihood(factors, weights)
        t_lik = time.perf_counter()
        step(STAGES[2])
        # SQP starts from the product of the marginal estimates (EM from the uniform table, as
        # association.R): measured, one or two fewer steps.
        start = None if self.method == "em" else _product_start(batches, variables, selections)
        fit = fit_mixture(lik, method=self.method, tolerance=self.tolerance, max_iterations=self.max_iterations,
                          start=start, rng=gen)
        if not fit.converged:
            why = "its iteration cap" if fit.iterations >= self.max_iterations else "its step criterion"
            warnings.warn(f"the {self.method} fit stopped at {why} after {fit.iterations} iterations, before "
                          f"converging: the log-likelihood may be up to {fit.gap:.3g} below its maximum "
                          f"(tolerance {self.tolerance:g})", ConvergenceWarning, stacklevel=3)
        t_fit = time.perf_counter()
        step(STAGES[3])
        shape, kinds = lik.shape, [v.kind for v in variables]
        cov = inverse_information = None
        effects: npt.NDArray[np.float64] | None = None  # the design effects of repeated reports at the fit
        law = signed = None
        se = np.full(shape, np.nan)
        se_method = "none"
        if self.std_errors and lik.size <= MAX_COVARIANCE_CELLS:
            cov = inverse_information = observed_covariance(lik, lik.forward(fit.table))
            # Each Newton step forms the information again (cells^2 a pattern): as the projected
            # law, only up to MAX_PROJECTED_CELLS cells.
            # The signed maximum sets the intervals and, for a string pair, the estimate (whatever the intervals).
            pair = self.shrinkage == "conditionals" and kinds.count("string") == 2 and len(kinds) <= 3
            signed = signed_maximum(lik, fit.table, cov) \
                if (self.intervals == "signed" or pair) and lik.size <= MAX_PROJECTED_CELLS else None
            if clustered is not None or any(n is not None for n in noises):  # outside strings' rates (_nuisance), repeats
                extra = None if clustered is None else cluster_score_products(lik, fit.table, *clustered)
                if patterns is None:  # rows are clients: the outside rates' noise through each client's likelihood
                    extra = client_nuisance_products(lik, fit.table, variables, selections, noises, per_client,
                                                     ~impossible)
                plain = cov
                cov, signed = with_nuisance(lik, fit.table, patterns, variables, selections, noises, cov, signed, extra)
                inverse_information = cov
                if clustered is not None and self.independence_test and np.isfinite(cov).all():  # the test's bound
                    effects = design_effects(plain, cov)
            with _single_thread():
                samples = projected_draws(fit.table, cov, gen, draws=PROJECTION_DRAWS) \
                    if lik.size <= MAX_PROJECTED_CELLS else None
                if samples is not None:
                    cov = np.cov(samples, rowvar=False)
                    se_method = f"projected normal ({PROJECTION_DRAWS} draws)"
                    if self.intervals == "projected" or (self.intervals == "signed" and signed is None):
                        law = samples.astype(np.float32)
                else:
                    se_method = "inverse information"
            se = np.sqrt(np.maximum(np.diag(cov), 0.0)).reshape(shape)
            se_method += ", clustered by client" if clustered is not None else ""
        excess = [_selection_excess(sel) for sel in selections] if self.candidates == "detected" else []
        bounds = signed if self.intervals == "signed" else None  # the signed maximum of the intervals
        shift = None if bounds is None or not any(ex is not None for ex in excess) \
            else selection_shift(bounds.covariance, shape, excess)
        profile = None
        profile_level = None if self.profile_level is None else float(self.profile_level)
        if profile_level is not None:
            low, high = profile_intervals(lik, fit.table, se, profile_level, rng=gen)
            profile = ConfidenceInterval(low=low.reshape(shape), high=high.reshape(shape))
        t_cov = time.perf_counter()
        step(STAGES[4])
        test, test_iterations = self._independence(lik, factors, fit, gen, clustered, effects) \
            if self.independence_test else (None, [])
        t_test = time.perf_counter()
        step(STAGES[5])  # the point estimate: Other's share, the splits, the prior (its sampler: seconds)
        table = fit.table.reshape(shape)
        mle = None
        clipped = None
        others = [marginal_other_share(axis, sel) for axis, sel in enumerate(selections)]
        if self.other_share == "marginal" and self.candidates == "detected" and self.other == "undetected" \
                and inverse_information is not None:
            moved = marginal_other_table(table, inverse_information, others)
            if moved is not None:
                mle, (table, clipped) = table, moved
        split = self.shrinkage in ("conditionals", "boolean-split") and cov is not None
        splits = None
        if split and sorted(kinds) == ["boolean", "string"]:
            mle = table if mle is None else mle
            table, _ = shrink_boolean_split(table, cov, kinds.index("string"))
        elif split and sorted(kinds) == ["boolean", "string", "string"]:
            mle = table if mle is None else mle
            splits = nested_split_posterior(table, cov, kinds.index("boolean"))
            table = with_splits(table, splits, kinds.index("boolean"))
        if self.shrinkage == "conditionals" and signed is not None and kinds.count("string") == 2 and len(kinds) <= 3:
            ml = table if mle is None else mle
            pooled = [other_pools_outside_strings(sel) for sel, kind in zip(selections, kinds) if kind == "string"]
            table = string_pair_estimate(table, ml, signed.table, signed.covariance,
                                         kinds.index("boolean") if len(kinds) == 3 else None,
                                         other=(pooled[0], pooled[1]), splits=splits, rng=gen)
            mle = ml
        diagnostics: dict[str, Any] = {
            "other_method": self.other,
            "std_error_method": se_method,
            "reports_dropped": dropped,
            "clients": None if codes is None else int(np.unique(codes).size),
            "likelihood_rows": "clients (their reports' exact likelihood)" if patterns is None else "report patterns",
            "marginal_seconds": round(t_marginal - started, 4),
            "likelihood_seconds": round(t_lik - t_marginal, 4),
            "em_elapsed_time": round(t_fit - t_lik, 4),
            "covariance_seconds": round(t_cov - t_fit, 4),
            "interval_method": (f"profile likelihood at {profile_level:g}" + (", repeated reports not counted"
                                                                               if clustered else "")
                                if profile_level is not None else "signed maximum" if bounds is not None
                                else "projected" if law is not None else "wald"),
            "signed_iterations": None if signed is None else signed.iterations,
            "selection_excess": [None if ex is None else round(float(ex.sum()), 6) for ex in excess],
            "marginal_other_share": [None if o is None else o[1] for o in others],
            "marginal_other_clipped": clipped,
            "independence_seconds": round(t_test - t_cov, 4),
            "shrinkage_seconds": round(time.perf_counter() - t_test, 4),
            "independence_iterations": test_iterations,
            "other_probabilities": tuple(sel[3] for sel in selections),
        }
        return AssociationResult(
            variables=tuple(v.name for v in variables),
            categories=tuple(sel[1] for sel in selections),
            proportion=table, std_error=se, covariance=cov,
            n_reports=int(reports_of.sum()), n_patterns=int(weights.size), method=self.method,
            iterations=fit.iterations, max_iterations=self.max_iterations, converged=fit.converged,
            gap=fit.gap, tolerance=self.tolerance, log_likelihood=fit.log_likelihood, independence=test,
            marginal_results=tuple(sel[2] for sel in selections), diagnostics=diagnostics,
            profile_interval=profile, profile_level=profile_level, projected_law=law, maximum_likelihood=mle,
            signed_maximum=None if bounds is None else bounds.table.reshape(shape),
            signed_std_error=None if bounds is None else np.sqrt(np.maximum(np.diag(bounds.covariance), 0.0)).reshape(shape),
            signed_covariance=None if bounds is None else bounds.covariance, selection_shift=shift)

    def _categories(self, batch: ReportBatch, var: Variable, decoder: Any, folds: npt.NDArray[np.int64] | None,
                    clients: npt.NDArray[np.int64] | None = None,
                    ) -> tuple[tuple[npt.NDArray[np.intp], tuple[str, ...], Any, npt.NDArray[np.float64] | None],
                               OutsideNoise | None]:
        """(Columns of the map to use, category labels, the marginal decode, Other's bit rates), and their noise;
        ``clients``: each report's client where some client reports more than once."""
        cmap = var.candidate_map
        if var.kind == "boolean":
            return (np.arange(len(cmap), dtype=np.intp), cmap.strings, None, None), None
        aggregate = Aggregate.from_reports(batch)
        marginal = decoder.decode(aggregate, cmap)
        if self.candidates == "all":
            columns = np.arange(len(cmap), dtype=np.intp)
        else:
            columns = np.flatnonzero(np.asarray(marginal.detected)).astype(np.intp)
        labels = tuple(cmap.strings[i] for i in columns)
        if self.other == "none":
            if columns.size == 0:
                raise DecodeError(f"Nothing was detected in the marginal decode of variable {var.name!r}: "
                                  f"no category to associate (model the other strings with other='undetected').")
            return (columns, labels, marginal, None), None
        noise = None
        if self.other == "undetected":
            # Other's composition from other reports than those it models (sample splitting, see _other).
            probs, noise = undetected_other_probabilities(batch, aggregate, cmap, columns, marginal, decoder, folds,
                                                          clients)
        else:
            shares = np.nan_to_num(np.asarray(marginal.proportion, dtype=np.float64)[columns])
            probs = other_bit_probabilities(aggregate, cmap, columns, shares, self.other)
        return (columns, labels + (OTHER,), marginal, probs), noise

    def _independence(self, lik: ProductLikelihood, factors: list[Factor], joint: FitResult, gen: np.random.Generator,
                      clustered: tuple[Any, npt.NDArray[np.int64]] | None,
                      effects_at_fit: npt.NDArray[np.float64] | None) -> tuple[IndependenceTest | None, list[int]]:
        """Likelihood-ratio test of independence, its p-value from the statistic's law at the boundary.

        The chi-square law of the statistic holds when no cell is near 0; with cells within a
        few standard errors of 0 the statistic is stochastically smaller (the boundary takes part
        of it: :func:`independence_null_draws`), so the chi-square p-value is taken as an upper bound.  When that bound is already below what
        ``INDEPENDENCE_DRAWS`` draws can resolve it is reported as is (a valid, conservative
        p-value); otherwise the p-value is the share of draws at least as large as the
        statistic, ``(1 + #{draws >= statistic}) / (1 + draws)``.  With ``clustered`` (reports,
        clients) the draws come from the clustered covariance at the null, and the bound divides
        is that of the design effects (:func:`clustered_tail_bound`): those at the fit when known
        (``effects_at_fit``; under independence the fit and the null are alike), so that a p-value
        below the draws' resolution costs no pass at the null.
        """
        if len(factors) < 2:
            return None, []
        total = 0.0
        iterations: list[int] = []
        table = joint.table.reshape(lik.shape)
        marginals = []
        for axis, f in enumerate(factors):
            single = ProductLikelihood([f], lik.weights)
            # Started from the joint fit's marginal (close to the independence fit's).
            start = table.sum(axis=tuple(a for a in range(table.ndim) if a != axis))
            start = 0.9 * start + 0.1 * (start > 0) / max(int((start > 0).sum()), 1)
            # Each log-likelihood within 0.01 of its maximum moves the statistic by at most 0.02 per variable.
            fit = fit_mixture(single, method="sqp", tolerance=max(self.tolerance, 0.01),
                              max_iterations=max(self.max_iterations, 100), start=start, rng=gen)
            total += fit.log_likelihood
            iterations.append(fit.iterations)
            marginals.append(fit.table)
        joint_ll = joint.log_likelihood
        shape = lik.shape
        df = int(np.prod(shape)) - 1 - sum(c - 1 for c in shape)
        stat = max(2.0 * (joint_ll - total), 0.0)
        if df <= 0:
            return IndependenceTest(statistic=stat, df=df, pvalue=math.nan), iterations
        null = marginals[0]
        for m in marginals[1:]:
            null = np.multiply.outer(null, m)
        cov = sampling = None
        effects, method = effects_at_fit, "likelihood-ratio, chi-square bound"
        if clustered is not None and effects is None and lik.size <= MAX_COVARIANCE_CELLS:
            cov = observed_covariance(lik, lik.forward(null.reshape(-1)))
            sampling = nuisance_covariance(cov, cluster_score_products(lik, null.reshape(-1), *clustered))
            effects = design_effects(cov, sampling)
        if effects is not None:
            method = "likelihood-ratio, bound under the clustered sample"
            pvalue = clustered_tail_bound(stat, effects, df)
        else:
            method += f" (repeated reports not counted: over {MAX_COVARIANCE_CELLS} cells)" if clustered else ""
            pvalue = float(special.chdtrc(df, stat))
        if pvalue * (INDEPENDENCE_DRAWS + 1) >= 1.0 and lik.size <= MAX_PROJECTED_CELLS:
            cov = observed_covariance(lik, lik.forward(null.reshape(-1))) if cov is None else cov
            if clustered is not None and sampling is None:
                sampling = nuisance_covariance(cov, cluster_score_products(lik, null.reshape(-1), *clustered))
            with _single_thread():
                draws = independence_null_draws(marginals, cov, gen, draws=INDEPENDENCE_DRAWS, sampling=sampling)
            if draws is not None:
                pvalue = (1.0 + float((draws >= stat).sum())) / (1.0 + draws.size)
                method = f"likelihood-ratio, boundary-aware ({draws.size} draws" \
                    + (", clustered by client)" if sampling is not None else ")")
        return IndependenceTest(statistic=stat, df=df, pvalue=pvalue, method=method), iterations


def _selection_excess(selection: tuple[Any, ...]) -> npt.NDArray[np.float64] | None:
    """A string variable's categories' expected excess given their detection (0 for Other).

    ``None`` for a boolean and for a marginal decode that does not say it
    (:meth:`rappor.DecodeResult.selection_excess`).
    """
    columns, labels, marginal, _ = selection
    if marginal is None or not hasattr(marginal, "selection_excess"):
        return None
    out = np.zeros(len(labels))
    out[:len(columns)] = marginal.selection_excess()[columns]
    return out


def _product_start(batches: Sequence[ReportBatch], variables: Sequence[Variable],
                   selections: Sequence[tuple[Any, ...]]) -> npt.NDArray[np.float64]:
    """``outer(marginal guesses)`` mixed with 10% of a uniform table: a starting point for SQP.

    A string variable's guess is its marginal decode's shares of the categories (the rest on
    "Other"); a boolean's is the debiased share of reports with the bit set.
    """
    table = np.ones(1)
    for batch, var, sel in zip(batches, variables, selections):
        columns, labels, marginal, _ = sel
        if var.kind == "boolean":
            p = var.params
            rate = float(batch.words[:, 0].mean()) if len(batch) else 0.5
            share = min(max((rate - p.p01) / (p.p11 - p.p01), 0.05), 0.95) if p.p11 != p.p01 else 0.5
            guess = np.array([share, 1.0 - share])
        else:
            shares = np.clip(np.nan_to_num(np.asarray(marginal.proportion, dtype=np.float64)[columns]), 0.0, None)
            if len(labels) > len(columns):  # "Other"
                shares = np.append(shares, max(1.0 - shares.sum(), 0.0))
            guess = shares / shares.sum() if shares.sum() > 0 else np.full(len(labels), 1.0 / len(labels))
        # 10% of the uniform table over the categories with a positive guess (and Other): a
        # candidate the marginal decode puts at 0 starts at 0, so that with every candidate of a
        # large map in the table the fit's working set starts small (see fit_mixture).
        keep = guess > 0
        if len(labels) > len(columns):
            keep[-1] = True
        guess = 0.9 * guess + 0.1 * keep / keep.sum()
        table = np.multiply.outer(table, guess).reshape(-1)
    out: npt.NDArray[np.float64] = table / table.sum()
    return out
