"""Association analysis: the joint distribution of two or three RAPPOR-encoded variables.

Each client sends one report per variable, all in its cohort, each encoded with the
usual PRR + IRR (a boolean as a one-bit Bloom filter, google/rappor's convention).
:class:`AssociationDecoder` estimates the joint distribution ``pi`` of the variables'
categories by maximum likelihood (the model of google/rappor ``analysis/R/association.R``
and ``bin/decode_assoc.R``), with

* categories of a string variable from its marginal decode (:class:`rappor.Decoder`)
  plus an **"Other"** category for the strings that are not among them;
* standard errors from the observed information on the simplex, marginal and
  conditional distributions (``P(x | y)``) with delta-method errors, and a
  likelihood-ratio test of independence (:class:`AssociationResult`);
* identical ``(cohort, bits)`` report tuples grouped, likelihoods computed from packed
  bits, and a sequential-quadratic-programming maximizer that converges in a handful
  of passes (google/rappor's EM is available as ``method="em"``).

:func:`decode_collection` is what ``rappor decode-assoc`` runs: the decoder on a random
sample of the clients (:func:`sample_clients`, google/rappor's ``--reports-sample-size``).
:data:`STAGES` names the stages a decode reports to its ``progress`` callback.

The package's modules (private), in the order a decode uses them:

=================  ================================================================
``_variables``     the variables: a name, an encoding and its categories (:class:`Variable`)
``_inputs``        the decoder's inputs checked: a batch a variable, rows aligned, client ids, the fit's memory
``_other``         the "Other" category's bit rates (non-candidate strings)
``_likelihood``    per-report likelihoods of each category, from packed bits
``_pairs``         many candidates' likelihood sums from per-cohort bit and bit-pair sums
``_threads``       the threads of the passes over the data
``_mixture``       the maximum-likelihood joint table (SQP, or google/rappor's EM)
``_shrinkage``     empirical-Bayes shrinkage of a boolean's conditional distributions
``_conditionals``  empirical Bayes for two strings' table: one fitted prior of the conditionals
``_inference``     standard errors, derived distributions, the independence test
``_profile``       profile-likelihood intervals of the cells
``_signed``        the likelihood's maximum over signed tables: the default intervals' centre
``_nuisance``      the outside strings' estimated bit rates carried into the covariance
``_repeats``       clients that report more than once: the exact likelihood of a client's reports
``_clusters``      the same, where that likelihood is not used: the covariance clustered by client
``_selection``     where choosing the categories on the same reports moves the table (the intervals cover it)
``_result``        :class:`AssociationResult`
``_decoder``       :class:`AssociationDecoder`: configuration, then reports to a table
``_collection``    :func:`decode_collection`, what ``rappor decode-assoc`` runs
``_privacy``       what reporting several variables costs (:func:`multi_variable_privacy`)
``_simulation``    simulated collections with a known joint distribution
``_reference``     google/rappor's algorithm written plainly, the measurements' baseline
=================  ================================================================

Not imported by ``import rappor``.  The method, its checks and measurements are in
``docs/association.md``; the command line is ``rappor decode-assoc``.

Examples
--------
>>> import numpy as np, rappor
>>> from rappor.analysis.association import AssociationDecoder, simulate_association
>>> params = rappor.Params(num_bloombits=16, num_hashes=2, num_cohorts=16,
...                        prob_p=0.25, prob_q=0.75, prob_f=0.0)
>>> joint = np.array([[0.3, 0.1], [0.1, 0.2], [0.2, 0.1]])     # (string, boolean)
>>> sim = simulate_association(params, joint, [["a", "b", "c"], None], 20_000, rng=0)
>>> res = AssociationDecoder(candidates="all", other="none").decode(sim.reports, sim.variables)
>>> res.categories
(('a', 'b', 'c'), ('TRUE', 'FALSE'))
>>> bool(np.abs(res.proportion - joint).max() < 4 * res.std_error.max())
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._util.lazy import lazy_face

if TYPE_CHECKING:
    from ._collection import decode_collection, sample_clients
    from ._decoder import STAGES, AssociationDecoder
    from ._privacy import MultiVariablePrivacy, multi_variable_privacy
    from ._result import AssociationResult, Distribution, IndependenceTest
    from ._simulation import AssociationSimulation, example_joint, simulate_association, total_variation
    from ._variables import BOOLEAN_CATEGORIES, OTHER, Variable, boolean_params
else:
    __getattr__, __dir__ = lazy_face(__name__)
    del lazy_face, TYPE_CHECKING  # plumbing, not names of the face

__all__ = [
    "BOOLEAN_CATEGORIES",
    "OTHER",
    "STAGES",
    "AssociationDecoder",
    "AssociationResult",
    "AssociationSimulation",
    "Distribution",
    "IndependenceTest",
    "MultiVariablePrivacy",
    "Variable",
    "boolean_params",
    "decode_collection",
    "example_joint",
    "multi_variable_privacy",
    "sample_clients",
    "simulate_association",
    "total_variation",
]
