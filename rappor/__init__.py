"""rappor: string frequencies with local differential privacy, as Chrome collected them.

Every client hides its string in a noisy Bloom filter (RAPPOR: Erlingsson, Pihur and
Korolova 2014, arXiv:1407.6981); an analyst recovers how common each candidate string
is from many such reports without learning any one client's value.

The top level holds the pipeline's nouns, in the order a collection meets them
(``__all__`` lists them):

=====================================  ==================================================
:class:`Params`                        the parameters ``k, h, m, p, q, f``, validated
:class:`Encoder`, :func:`generate_key`,  the client: one report per value; a key file of
:func:`read_key_file`,                 client secrets (:mod:`rappor.formats`)
:func:`write_key_file`
:func:`encode_clients`,                many clients at once, from arrays or from a
:func:`encode_file`                    ``client,value`` file
:class:`Report`, :class:`ReportBatch`  what the collector receives
:class:`Aggregate`                     per-cohort bit counts
:func:`hash_candidates`,               candidate strings hashed into the design matrix
:class:`CandidateMap`
:class:`Decoder`, :class:`DecodeResult`  estimates, standard errors, p-values, intervals
:func:`simulate`, :class:`Population`  a simulated collection, with the truth
exceptions and warnings                the hierarchy of :mod:`rappor.exceptions`
=====================================  ==================================================

The stages are packages, each with a face that lists its public names in the order
they are used (every module inside is private, ``_name.py``).  In layer order, each
importing only from those before it:

``rappor.client``      hashing, the randomizer, the encoder, reports
``rappor.collect``     aggregation, the design matrix, google/rappor's own hashing
``rappor.simulation``  populations, fast simulated reports, whole simulated collections
``rappor.privacy``     privacy accounting, parameter planning, other mechanisms, audit
``rappor.analysis``    ``decoder/``, ``discovery/``, ``association/`` and accuracy metrics
``rappor.formats``     one module per file format, each owning its reader and writer
``rappor.engines``     the client and collection steps over files: worker processes, Dask, Spark
``rappor.report``      plots and HTML reports (matplotlib; not imported here)
``rappor.cli``         the ``rappor`` command (not imported here)

Before them: ``rappor.exceptions``, the private plumbing ``rappor._util`` and
``rappor.params``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._util.version import __version__
from ._util.lazy import lazy_face

if TYPE_CHECKING:
    from . import analysis, client, collect, engines, exceptions, formats, params, privacy, simulation  # noqa: F401
    from .analysis.decoder import DecodeResult, Decoder
    from .client import Encoder, Report, ReportBatch, encode_clients, generate_key
    from .collect import Aggregate, CandidateMap, hash_candidates
    from .engines import encode_file
    from .exceptions import (
        CountOverflowError,
        DecodeError,
        DeprecatedOptionWarning,
        IncompatibleParamsError,
        IndistinguishableCandidatesWarning,
        InsecureKeyFileWarning,
        InsecureRandomnessWarning,
        InsufficientMemoryError,
        InvalidParameterError,
        MissingDependencyError,
        RapporError,
        RapporIOError,
        RapporWarning,
        ReportFormatError,
        UnbalancedCohortsWarning,
    )
    from .formats import read_key_file, write_key_file
    from .params import Params
    from .simulation import Population, simulate
else:
    __getattr__, __dir__ = lazy_face(__name__)
    del lazy_face, TYPE_CHECKING  # plumbing, not names of the face

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
    "read_key_file",
    "simulate",
    "write_key_file",
]
