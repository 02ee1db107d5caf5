"""rappor: string frequencies with local differential privacy, as Chrome collected them.

Every client hides its string in a noisy Bloom filter (RAPPOR: Erlingsson, Pihur and
Korolova 2014, arXiv:1407.6981); an analyst recovers how common each candidate string
is from many such reports without learning any one client's value.

The top level holds the pipeline's nouns (``__all__`` lists them): :class:`Params`;
the client, :class:`Encoder` (and :func:`encode_clients`, :func:`encode_file` for
many clients); :class:`Report` and :class:`ReportBatch`; :class:`Aggregate`;
:func:`hash_candidates` and :class:`CandidateMap`; :class:`Decoder` and
:class:`DecodeResult`; :func:`simulate` and :class:`Population`; the readers and
writers of every file format (``read_*``, ``write_*``, ``iter_*``); and the
exceptions.  Everything else is in its module, e.g. ``rappor.privacy.loss``.

Public modules
--------------
Client
    ``rappor.params``       :class:`Params`, validated, and the quantities derived from them
    ``rappor.hashing``      per-cohort Bloom hashing (the only user of mmh3)
    ``rappor.randomizer``   the randomizer core: PRR/IRR rules and thresholds, p11/p01, debiasing
    ``rappor.encoder``      :class:`Encoder`: cohorts, keyed PRR, CSPRNG IRR, key files
    ``rappor.file_encoder`` :func:`encode_file`: a ``client,value`` file into reports (``rappor encode``)
    ``rappor.reports``      :class:`Report` and :class:`ReportBatch`
Files
    ``rappor.formats``      one module per file format, each with its reader and writer
Collection
    ``rappor.aggregate``    :class:`Aggregate`: per-cohort bit counts
    ``rappor.design``       :class:`CandidateMap`: the decoder's design matrix
    ``rappor.compat``       google/rappor's own MD5 hashing and PRR, for its collections
Analysis
    ``rappor.decoder``      :class:`Decoder`, :class:`DecodeResult` and its :class:`DecodeDiagnostics`
    ``rappor.privacy``      privacy accounting: pure epsilon, RDP, zCDP, (epsilon, delta)
    ``rappor.mechanisms``   randomized response, k-RR, basic and k-RAPPOR, with estimators
    ``rappor.planner``      choosing parameters for privacy and detection targets
    ``rappor.simulation``   populations, :func:`simulate`, simulated reports and exact counts
    ``rappor.metrics``      accuracy of a decode against the truth
    ``rappor.audit``        empirical privacy audit of an encoder
    ``rappor.exceptions``   the error and warning hierarchy

Not imported here: ``rappor.association`` (joint distributions of several variables,
docs/association.md); and, for their optional dependencies, ``rappor.engines`` (Dask, Spark),
``rappor.plots`` and ``rappor.html_report`` (matplotlib).  Parquet
(:mod:`rappor.formats.parquet`) needs pyarrow only when a file is read or written.
Names that were at the top level before the API was curated (issue 15) still resolve,
with a :class:`DeprecationWarning` naming their module.
"""

from __future__ import annotations

import warnings
from typing import Any

__version__ = "0.1.0"

from . import (  # noqa: F401 - the public modules, as attributes of the package
    aggregate,
    audit,
    candidates,
    compat,
    decoder,
    design,
    encoder,
    exceptions,
    file_encoder,
    formats,
    hashing,
    map_file,
    mechanisms,
    metrics,
    params,
    planner,
    privacy,
    randomizer,
    reports,
    simulation,
)
from .aggregate import Aggregate
from .decoder import DecodeResult, Decoder
from .design import CandidateMap, hash_candidates
from .encoder import Encoder, encode_clients, generate_key, read_key_file, write_key_file
from .exceptions import (
    CountOverflowError,
    DecodeError,
    IncompatibleParamsError,
    IndistinguishableCandidatesWarning,
    InsecureKeyFileWarning,
    InsecureRandomnessWarning,
    DeprecatedOptionWarning,
    InsufficientMemoryError,
    InvalidParameterError,
    MissingDependencyError,
    RapporError,
    RapporIOError,
    RapporWarning,
    ReportFormatError,
    UnbalancedCohortsWarning,
)
from .file_encoder import encode_file
from .formats import (
    iter_client_values,
    iter_reports,
    read_candidates,
    read_client_values,
    read_counts,
    read_map,
    read_params,
    read_parquet_reports,
    read_reports,
    write_candidates,
    write_client_values,
    write_counts,
    write_map,
    write_params,
    write_parquet_reports,
    write_reports,
)
from .params import Params
from .reports import Report, ReportBatch
from .simulation import Population, simulate

__all__ = [
    "Aggregate",
    "CandidateMap",
    "CountOverflowError",
    "DecodeError",
    "DecodeResult",
    "Decoder",
    "DeprecatedOptionWarning",
    "Encoder",
    "IncompatibleParamsError",
    "IndistinguishableCandidatesWarning",
    "InsecureKeyFileWarning",
    "InsecureRandomnessWarning",
    "InsufficientMemoryError",
    "InvalidParameterError",
    "MissingDependencyError",
    "Params",
    "Population",
    "RapporError",
    "RapporIOError",
    "RapporWarning",
    "Report",
    "ReportBatch",
    "ReportFormatError",
    "UnbalancedCohortsWarning",
    "__version__",
    "encode_clients",
    "encode_file",
    "generate_key",
    "hash_candidates",
    "iter_client_values",
    "iter_reports",
    "read_candidates",
    "read_client_values",
    "read_counts",
    "read_key_file",
    "read_map",
    "read_params",
    "read_parquet_reports",
    "read_reports",
    "simulate",
    "write_candidates",
    "write_client_values",
    "write_counts",
    "write_key_file",
    "write_map",
    "write_params",
    "write_parquet_reports",
    "write_reports",
]

#: Names that were at the top level before the API was curated (issue 15), and the
#: module each lives in now: ``rappor.NAME`` still works, with a DeprecationWarning.
_MOVED: dict[str, str] = {
    **dict.fromkeys(("AuditResult", "AuditRow", "AuditSample", "ConvergenceCheck", "audit_encoder", "batch_sampler",
                     "client_sampler", "never_clearing_sampler"), "audit"),
    "check_cohort_balance": "aggregate",
    **dict.fromkeys(("GOOGLE_MAX_HASHES", "GOOGLE_MAX_PRR_BITS", "google_bloom_bits", "google_bloom_bits_table",
                     "google_bloom_filter", "google_effective_prob_f", "google_prr", "google_prr_batch",
                     "hash_candidates_google"), "compat"),
    **dict.fromkeys(("ConfidenceInterval", "DecodeDiagnostics"), "decoder"),
    **dict.fromkeys(("MIN_SECRET_BYTES", "EncodeTrace", "client_secret", "derive_cohort", "prr_uniforms"),
                    "encoder"),
    **dict.fromkeys(("bloom_bit_indices", "bloom_bits", "bloom_bits_table", "bloom_filter", "reduce_words",
                     "split_hash_words", "value_bytes"), "hashing"),
    **dict.fromkeys(("BasicRappor", "BinaryRandomizedResponse", "FrequencyEstimate", "KRappor",
                     "KaryRandomizedResponse", "TwoStageRappor", "epsilon_from_lying_probability",
                     "lying_probability_from_epsilon", "two_stage_rate"), "mechanisms"),
    **dict.fromkeys(("Metrics", "bit_residuals", "evaluate", "evaluate_result"), "metrics"),
    **dict.fromkeys(("MAX_COHORTS", "check_same_params"), "params"),
    **dict.fromkeys(("DEFAULT_EPSILON_RATIO", "DetectionPrediction", "Plan", "PlanResult", "design_inflation",
                     "detection_frequency", "plan", "simulate_detection"), "planner"),
    **dict.fromkeys(("DEFAULT_ORDERS", "PrivacyLoss", "advanced_composition", "basic_composition", "bernoulli_rdp",
                     "binary_rr_rdp", "epsilon_from_rdp", "epsilon_from_zcdp", "loss", "pure_dp_to_zcdp", "rdp",
                     "renyi_divergence", "rho_zcdp", "tight_rho"), "privacy"),
    **dict.fromkeys(("DISTRIBUTIONS", "Scenario", "Simulation", "candidate_strings", "read_population",
                     "simulate_counts", "simulate_reports", "true_ones", "zipf_scenario"), "simulation"),
}


def __getattr__(name: str) -> Any:
    """``rappor.NAME`` for a name that moved to its module: warn, then return it from there."""
    module = _MOVED.get(name)
    if module is None:
        msg = f"module 'rappor' has no attribute {name!r}"
        raise AttributeError(msg)
    warnings.warn(f"rappor.{name} is deprecated: use rappor.{module}.{name}", DeprecationWarning, stacklevel=2)
    return getattr(globals()[module], name)
