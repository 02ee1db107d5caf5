"""The public :class:`Decoder` (private module; public through :mod:`rappor.analysis.decoder`).

This module owns the decoder's options (their defaults, documentation and validation)
and :meth:`Decoder.decode`, which checks its inputs, runs :func:`._estimate.estimate`
and wraps the arrays in a :class:`~._result.DecodeResult`.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, Literal

import numpy as np
import numpy.typing as npt

from ..._util.lazy import lazy_module
from ..._util.memory import check_decode
from ..._util.validation import (
    CheckedParameters,
    ParameterCheck,
    RngLike,
    check_bool,
    check_int,
    check_probability,
    check_real,
    check_rng_parameter,
    options_check,
)
from ...collect._aggregate import Aggregate
from ...collect._design import CandidateMap
from ...exceptions import (
    DecodeError,
    IncompatibleParamsError,
    IndistinguishableCandidatesWarning,
    InvalidParameterError,
)
from ._adjust import CORRECTIONS
from ._estimate import DecodeOptions, estimate
from ._fit import _DENSE_GRAM_MAX
from ._null import NULLS
from ._result import DecodeResult

if TYPE_CHECKING:
    import threadpoolctl
else:  # imported on first use
    threadpoolctl = lazy_module("threadpoolctl")

_SCREENING = ("auto", "lasso", "none")
_ESTIMATORS = ("least-squares",)
_SHARES = ("all", "detected")
#: Smallest usable |p11 - p01|: a bit's debiased share has standard error at least
#: 0.5 / (|p11 - p01| sqrt(N)), above 1 for every int64 number of reports N below this.
_MIN_SIGNAL = 0.5 / math.sqrt(2.0**63)


#: Option combinations that are refused, with why (measured in ``docs/notes/decoder-rounds.md``, "Option
#: combinations"): an empirical-Bayes prior fitted to z-scores whose null is not N(0, 1).
#: Keys are ``(null, correction)``.
UNSOUND_COMBINATIONS: dict[tuple[str, str], str] = {
    ("normal", "lfdr"): (
        "the local fdr fits its prior to z-scores that must be N(0, 1) for an absent candidate, and the normal "
        "null's are not when strings outside the list leave structure in the residuals: on 1,000 candidates "
        "(100 real, 900 decoys; 20 seeds) it reported all 900 decoys on one seed and 458-870 on two others"),
}


def check_combination(null: str, correction: str, *, cli: bool = False) -> None:
    """Refuse a ``null`` x ``correction`` combination that is not sound.

    ``cli``: name the options as ``rappor decode``'s flags (``--null normal``) rather than
    as the :class:`Decoder`'s parameters (``null='normal'``).

    Raises
    ------
    InvalidParameterError
        Naming the combination and why (:data:`UNSOUND_COMBINATIONS`); every other
        combination is accepted (``tests/analysis/decoder/test_decoder_options.py`` checks the whole grid).
    """
    why = UNSOUND_COMBINATIONS.get((null, correction))
    if why is None:
        return
    if cli:
        combination, default = f"--null {null} with --correction {correction}", "--null random-strings (the default)"
    else:
        combination, default = f"Decoder: null={null!r}, correction={correction!r}", "null='random-strings' (the default)"
    raise InvalidParameterError(f"{combination} is not sound: {why}. Use {default}, whose p-values are calibrated.")


#: Estimators that were removed, with why (``docs/notes/decoder-rounds.md``, "Empirical Bayes, removed").
REMOVED_ESTIMATORS: dict[str, str] = {
    "empirical-bayes": (
        "was removed: the set of strings it reports is not stable (its prior is not identifiable near 0). "
        "Use the default (shares='all'): every candidate's empirical-Bayes share, with 'detected' the calibrated "
        "test's list (see docs/decoder.md, 'The default shares')"),
}


def refuse_removed_estimator(value: Any, name: str = "estimator", owner: str = "Decoder", *,
                             cli: bool = False) -> None:
    """Refuse a removed estimator (:data:`REMOVED_ESTIMATORS`), saying why; accept anything else.

    ``cli``: name it as ``rappor decode``'s flag (``--estimator empirical-bayes``).  The
    :class:`Decoder` calls it at construction: a removed option fails at once, not at decode.

    Raises
    ------
    InvalidParameterError
        For a removed estimator, with the reason and the replacement.
    """
    if isinstance(value, str) and value in REMOVED_ESTIMATORS:
        named = f"--{name} {value}" if cli else f"The {name}={value!r} option of {owner}"
        raise InvalidParameterError(f"{named} {REMOVED_ESTIMATORS[value]}.")


def check_estimator(value: Any, name: str = "estimator", owner: str = "Decoder", *, cli: bool = False) -> None:
    """Refuse an estimator that is not one of :data:`_ESTIMATORS`, a removed one saying why
    (:func:`refuse_removed_estimator`); ``cli`` as there."""
    refuse_removed_estimator(value, name, owner, cli=cli)
    options_check(_ESTIMATORS)(value, name, owner)


def _check_penalty(value: Any, name: str, owner: str) -> None:
    if value is None or (isinstance(value, str) and value == "cv"):
        return
    if isinstance(value, str):
        msg = f"The {name!r} parameter of {owner} must be a float > 0, 'cv' or None. Got {value!r} instead."
        raise InvalidParameterError(msg)
    check_real(value, name, owner, low=0.0, low_open=True)


class Decoder(CheckedParameters):
    """Estimate candidate frequencies from per-cohort bit counts.

    Parameters
    ----------
    significance_level : float, default=0.05
        Level of the one-sided tests of "share > 0", after the multiple-testing correction.
    correction : {"fdr", "lfdr", "adaptive-fdr", "storey", "bonferroni", "none"}, default="fdr"
        ``"fdr"``: Benjamini-Hochberg (expected share of false detections at most
        ``significance_level``); ``"adaptive-fdr"``: the two-stage Benjamini-Krieger-Yekutieli
        procedure and ``"storey"``: BH scaled by Storey's estimate of the share of absent
        candidates -- both control the FDR too and detect more when many candidates are
        present (measured in ``docs/decoder.md``); ``"bonferroni"``: probability of any false
        detection at most ``significance_level``; ``"none"``: per-candidate level;
        ``"lfdr"``: empirical Bayes -- a nonparametric prior of the effects fitted to the
        calibrated z-scores, each candidate's local fdr (posterior probability of being
        absent), and the largest set whose estimated FDR (mean local fdr) is at most
        ``significance_level`` (``adjusted_pvalue`` is then that estimated FDR, a
        q-value).  The number of tests is the number of distinguishable candidates.
    lasso_alpha : float, "cv" or None, default=None
        Penalty of the screening Lasso on the whitened, unit-norm design (scikit-learn's
        ``alpha``).  ``None`` uses ``z_{1 - significance_level / S} / n`` (S candidates,
        n rows): the level at which pure noise lets no candidate in with probability
        ``1 - significance_level``.  ``"cv"``: 5-fold cross-validation over whole
        cohorts with the one-standard-error rule (scikit-learn's ``LassoCV`` on cohort
        folds, :func:`rappor.analysis.decoder._screen.cv_lasso_alpha`; seeded by ``rng``);
        measured, it picks about the plug-in value at 5-10 times the cost
        (``docs/penalty.md``).
    screening : {"auto", "lasso", "none"}, default="auto"
        ``"auto"`` screens when the distinguishable candidates exceed 0.8 times the
        (cohort, bit) rows (as ``decode.R``) and the design is not orthogonal.
    model_unexplained : bool, default=True
        Model the reports whose value is not a candidate with one column of evenly spread
        ones (its coefficient is the unexplained mass).  Turning it off reproduces the
        classical model, whose estimates absorb that mass.
    max_refits : int, default=5
        Rounds of adding significant left-out candidates to the model and refitting.
    null : {"random-strings", "normal"}, default="random-strings"
        Law of a candidate's test statistic when it is absent.  ``"random-strings"``:
        the law of the score of a random string (``h`` uniform bits per cohort, which
        is what any candidate outside the data looks like under a uniform hash)
        against the fitted residuals, by exact enumeration and a saddlepoint tail
        (:func:`rappor.analysis.decoder._null.random_string_null`); it keeps the false-positive
        rate at the nominal level when heavy non-candidate strings leave structure in
        the residuals.  ``"normal"``: the standard normal of the Wald/score z; refused
        with ``correction="lfdr"``, whose prior needs calibrated z-scores
        (:data:`UNSOUND_COMBINATIONS`: with decoys it reported up to every decoy).
    estimator : {"least-squares"}, default="least-squares"
        The constrained weighted least-squares fit whose tests decide
        :attr:`DecodeResult.detected` (the only estimator).  ``"empirical-bayes"`` (a
        posterior-median detection rule) was removed: its detections swung from 5 to 100
        strings over 20 seeds of the decoder benchmark's scenario; it raises
        :class:`~rappor.exceptions.InvalidParameterError` saying so.  Its stable
        empirical-Bayes replacement is ``shares="all"`` (the default).
    shares : {"all", "detected"}, default="all"
        What :attr:`DecodeResult.proportion` holds with the least-squares estimator.
        ``"all"``: a share for *every* candidate, the best estimate of the whole
        distribution -- an empirical-Bayes regression (a prior of the shares fitted jointly
        with them, bagged; :mod:`rappor.analysis.decoder._shares`) -- while :attr:`DecodeResult.detected`
        stays the test's list, with its error control; ``results.csv`` then has a row for
        every candidate with a positive share (or detected) and a ``detected`` column, so that summing
        ``proportion`` gives the distribution (total variation 0.857 of google/rappor's
        decoder's on average over 21 scenario classes, up to 3% above it on three;
        ``docs/benchmarks.md``).
        ``"detected"``: the least-squares shares of the test's fit, and ``results.csv``
        lists the detected strings only (the decoder before every candidate had a share).
    rng : numpy.random.Generator, int or None, default=None
        Draws the random-string patterns when ``k**h`` exceeds 4096 (otherwise every
        pattern is enumerated and nothing random is drawn).  ``None`` uses a fixed
        seed, so decoding is deterministic either way.

    Examples
    --------
    >>> import numpy as np, rappor
    >>> params = rappor.Params(num_bloombits=8, num_hashes=2, num_cohorts=4,
    ...                        prob_p=0.5, prob_q=0.75, prob_f=0.5)
    >>> cmap = rappor.hash_candidates(["a", "b", "c"], params)
    >>> rows = np.asarray(cmap.matrix[:, 0].todense()).reshape(4, 8)   # everybody says "a"
    >>> n = 10_000
    >>> ones = np.rint(n * (params.p01 + (params.p11 - params.p01) * rows)).astype(int)
    >>> agg = rappor.Aggregate(params=params, counts=np.column_stack([np.full(4, n), ones]))
    >>> res = rappor.Decoder().decode(agg, cmap)
    >>> t = res.table()                        # every candidate, input order
    >>> t["string"][t["detected"]].tolist()   # the test's list
    ['a']
    >>> round(float(res.fitted_proportion[0]), 2), round(float(res.proportion[0]), 2)
    (1.0, 1.0)

    ``fitted_proportion`` is the test's least-squares share; ``proportion`` (``shares="all"``)
    the empirical-Bayes share, whose prior is fitted to the candidates themselves.  A string
    this clear (z about 80) keeps its statistic; weaker ones are shrunk toward the prior.
    """

    #: Check of each parameter, run at the top of :meth:`decode` (scikit-learn's convention).
    _parameter_constraints: ClassVar[dict[str, ParameterCheck]] = {
        "significance_level": lambda value, name, owner: check_probability(value, name, owner, open_low=True,
                                                                           open_high=True),
        "correction": options_check(CORRECTIONS),
        "lasso_alpha": _check_penalty,
        "screening": options_check(_SCREENING),
        "model_unexplained": check_bool,
        "max_refits": lambda value, name, owner: check_int(value, name, owner, low=0),
        "null": options_check(NULLS),
        "estimator": check_estimator,
        "shares": options_check(_SHARES),
        "rng": check_rng_parameter,
    }

    def __init__(self, *, significance_level: float = 0.05,
                 correction: Literal["fdr", "adaptive-fdr", "storey", "lfdr", "bonferroni", "none"] = "fdr",
                 lasso_alpha: float | Literal["cv"] | None = None,
                 screening: Literal["auto", "lasso", "none"] = "auto",
                 model_unexplained: bool = True, max_refits: int = 5,
                 null: Literal["random-strings", "normal"] = "random-strings",
                 estimator: Literal["least-squares"] = "least-squares",
                 rng: RngLike = None, shares: Literal["all", "detected"] = "all") -> None:
        self.significance_level = significance_level
        self.correction = correction
        self.lasso_alpha = lasso_alpha
        self.screening = screening
        self.model_unexplained = model_unexplained
        self.max_refits = max_refits
        self.null = null
        refuse_removed_estimator(estimator)  # at once, saying why (other values are checked at decode)
        self.estimator = estimator
        self.rng = rng
        self.shares = shares

    def _validate(self) -> DecodeOptions:
        self._check_parameters()
        check_combination(self.null, self.correction)
        return DecodeOptions(significance_level=float(self.significance_level), correction=self.correction,
                             lasso_alpha=self.lasso_alpha, screening=self.screening,
                             model_unexplained=bool(self.model_unexplained), max_refits=int(self.max_refits),
                             null=self.null, rng=self.rng,
                             shares=self.shares)

    def decode(self, aggregate: Aggregate, candidate_map: CandidateMap) -> DecodeResult:
        """Estimate the share of every candidate in ``aggregate``.

        Parameters
        ----------
        aggregate : Aggregate
            Per-cohort report and bit counts.
        candidate_map : CandidateMap
            The candidates and their bits (same parameters as ``aggregate``).

        Returns
        -------
        DecodeResult

        Raises
        ------
        InvalidParameterError
            If a configuration value or an argument has the wrong type or value (a removed
            ``estimator`` says why), or the combination of ``null`` and ``correction`` is not sound
            (:func:`check_combination`).
        IncompatibleParamsError
            If the aggregate and the map were made with different parameters.
        DecodeError
            If there are no reports, or the parameters carry no information.
        InsufficientMemoryError
            Before any work, if the decode's working arrays (about twice the candidate
            map's design, :func:`rappor._util.memory.decode_bytes`) cannot fit in the memory
            available.

        Warns
        -----
        IndistinguishableCandidatesWarning
            When candidates set the same bits in every cohort with reports.

        Notes
        -----
        Debiasing follows google/rappor ``decode.R`` (``EstimateBloomCounts``) and
        Erlingsson, Pihur and Korolova 2014, Section 4: ``t = (c - p01 N) / (p11 - p01)``.
        Standard errors are those of the weighted least-squares fit on the final
        support, ``(A_P' W A_P)^-1`` scaled by the Pearson dispersion when it exceeds 1.
        P-values are one-sided: with the default ``null="random-strings"`` the tail of a
        random string's score given the fitted residuals (a saddlepoint approximation,
        :func:`rappor.analysis.decoder._null.random_string_null`); with ``null="normal"``, and for
        orthogonal designs, the standard normal tail of the Wald or score z.  See
        ``docs/decoder.md``.
        """
        start = time.perf_counter()
        options = self._validate()
        if not isinstance(aggregate, Aggregate):
            msg = f"The 'aggregate' parameter of Decoder.decode must be an Aggregate. Got {type(aggregate).__name__} instead."
            raise InvalidParameterError(msg)
        if not isinstance(candidate_map, CandidateMap):
            msg = ("The 'candidate_map' parameter of Decoder.decode must be a CandidateMap. "
                   f"Got {type(candidate_map).__name__} instead.")
            raise InvalidParameterError(msg)
        params = aggregate.params
        if candidate_map.params != params:
            msg = (f"The candidate map was made with different parameters than the counts: "
                   f"{candidate_map.params!r} and {params!r}.")
            raise IncompatibleParamsError(msg)
        gap = params.p11 - params.p01
        if not math.isfinite(gap) or abs(gap) < _MIN_SIGNAL:
            raise DecodeError(f"Information is lost (p11 - p01 = {gap:.3g}: below {_MIN_SIGNAL:.2g}, a share's "
                              "standard error exceeds 1 even with 2**63 reports). Cannot decode.")
        n_total = aggregate.total_reports
        if n_total == 0:
            raise DecodeError("The counts hold no reports. Cannot decode.")
        matrix = candidate_map.matrix
        check_decode(params, matrix.data.nbytes + matrix.indices.nbytes + matrix.indptr.nbytes, len(candidate_map),
                     dense_columns=min(len(candidate_map), _DENSE_GRAM_MAX))
        # One BLAS thread: a decode's dense products and solves are small (support-sized) and its
        # big products sparse, so more threads only spin; OpenBLAS's default (one per core) cost
        # a 10,000-candidate decode 24-44% more CPU and, on 2 busy cores, more wall time too.
        with threadpoolctl.threadpool_limits(limits=1, user_api="blas"):
            est = estimate(options, aggregate.counts, matrix, params)
        significant = (np.nan_to_num(est.adjusted_pvalue, nan=1.0) <= options.significance_level
                       if len(candidate_map) else np.zeros(0, bool))
        _warn_groups(est.group, candidate_map.strings)
        return DecodeResult(
            strings=candidate_map.strings,
            estimate=est.proportion * n_total,
            std_error=est.prop_std_error * n_total,
            proportion=est.proportion,
            prop_std_error=est.prop_std_error,
            pvalue=est.pvalue,
            adjusted_pvalue=est.adjusted_pvalue,
            significant=significant,
            group=est.group,
            n_reports=n_total,
            params=params,
            significance_level=options.significance_level,
            correction=self.correction,
            diagnostics=replace(est.diagnostics, seconds=time.perf_counter() - start),
            detected=significant,
            estimator=self.estimator,
            shares=self.shares,
            fitted_proportion=est.proportion if est.fitted_proportion is None else est.fitted_proportion,
        )


def _warn_groups(group: npt.NDArray[np.int64], strings: Sequence[str]) -> None:
    shared = np.flatnonzero(group != np.arange(len(group)))  # members that are not their group's first
    if not len(shared):
        return
    members: dict[int, list[str]] = {}
    for i in np.unique(np.concatenate([shared, group[shared]])).tolist():  # every member of a group
        members.setdefault(int(group[i]), []).append(strings[i])
    groups = [v for v in members.values() if len(v) > 1]
    if groups:
        shown = "; ".join(", ".join(repr(s) for s in g[:4]) + (", ..." if len(g) > 4 else "") for g in groups[:5])
        more = f" (and {len(groups) - 5} more groups)" if len(groups) > 5 else ""
        msg = (f"{len(groups)} groups of candidates set the same bits in every cohort and cannot be told apart; "
               f"each member is given the estimate of its whole group: {shown}{more}.")
        warnings.warn(msg, IndistinguishableCandidatesWarning, stacklevel=3)


