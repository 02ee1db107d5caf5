"""The decoder: estimate how common each candidate string is from aggregated reports.

:class:`Decoder` is configured once and applied with :meth:`Decoder.decode` to an
:class:`~rappor.collect.Aggregate` and a :class:`~rappor.collect.CandidateMap`; it
returns a :class:`DecodeResult` with estimates, standard errors, p-values, confidence
intervals, a table, google/rappor's ``results.csv`` and a summary, and its
:class:`DecodeDiagnostics`.  The method, with the measurements behind each choice, is
in ``docs/decoder.md``.

The package's modules (private), in the order a decode uses them:

============================  ==============================================================
``_decoder.py``               :class:`Decoder`: options, their validation, ``decode()``;
                              :func:`check_estimator` and :func:`check_combination`, the checks
                              of two options a command makes before it reads its files
``_estimate.py``              the steps of one decode, in order (:func:`estimate`)
``_problem.py``               the weighted problem: debiased, whitened rows; candidate groups;
                              the non-candidate column
``_screen.py``                Lasso screening of long candidate lists and its penalty
``_lasso.py``                 the screening's non-negative Lasso, solved exactly (working set,
                              Lawson-Hanson active set on the Gram matrix)
``_fit.py``                   the constrained fit (shares >= 0, sum <= 1), standard errors,
                              Wald and score statistics; the closed form of orthogonal designs
``_null.py``                  p-values: the random-string null and the normal one
``_adjust.py``                multiple-testing adjustment (Benjamini-Hochberg, Storey, two-stage,
                              Bonferroni, local fdr)
``_bayes.py``                 empirical Bayes: the NPMLE prior and the local fdr (correction="lfdr")
``_shares.py``                every candidate's share, the default ``proportion``: empirical-Bayes
                              regression (fixed unexplained mass, coordinate ascent with a fitted
                              prior, bagged NPMLE priors)
``_intervals.py``             marginal, FCR-adjusted and selective confidence intervals
``_result.py``                :class:`DecodeResult` and :class:`DecodeDiagnostics`
``_dispersion.py``            what a residual dispersion well above 1 points to (repeated reports,
                              missing strings, parameters that do not match the counts); the
                              residual skewness (also read by the shares' unexplained mass)
============================  ==============================================================
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._util.lazy import lazy_face

if TYPE_CHECKING:
    from ..._util.results import ConfidenceInterval
    from ._decoder import Decoder, check_combination, check_estimator
    from ._dispersion import explain_dispersion
    from ._result import DecodeDiagnostics, DecodeResult
else:
    __getattr__, __dir__ = lazy_face(__name__)
    del lazy_face, TYPE_CHECKING  # plumbing, not names of the face

__all__ = ["ConfidenceInterval", "DecodeDiagnostics", "DecodeResult", "Decoder", "check_combination", "check_estimator",
           "explain_dispersion"]
