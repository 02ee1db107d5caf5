"""rappor: string frequencies with local differential privacy, as Chrome collected them.

Every client hides its string in a noisy Bloom filter (RAPPOR: Erlingsson, Pihur and
Korolova 2014, arXiv:1407.6981); an analyst recovers how common each candidate string
is from many such reports without learning any one client's value.

Public modules
--------------
Client
    ``rappor.params``      :class:`Params` and google/rappor's ``params.csv``
    ``rappor.hashing``     per-cohort Bloom hashing (the only user of mmh3)
    ``rappor.randomizer``  the randomizer core: PRR/IRR rules and thresholds, p11/p01, debiasing
    ``rappor.encoder``     :class:`Encoder`: cohorts, keyed PRR, CSPRNG IRR, key files
    ``rappor.reports``     :class:`Report`, :class:`ReportBatch` and report files
Collection
    ``rappor.aggregate``   :class:`Aggregate`: per-cohort bit counts (``counts.csv``)
    ``rappor.candidates``  candidate list files
    ``rappor.design``      :class:`CandidateMap`: the decoder's design matrix
    ``rappor.map_file``    google/rappor ``map.csv`` files
    ``rappor.compat``      google/rappor's own MD5 hashing and PRR, for its collections
Analysis
    ``rappor.decoder``     :class:`Decoder`, :class:`DecodeResult` and its :class:`DecodeDiagnostics`
    ``rappor.privacy``     privacy accounting: pure epsilon, RDP, zCDP, (epsilon, delta)
    ``rappor.mechanisms``  randomized response, k-RR, basic and k-RAPPOR, with estimators
    ``rappor.planner``     choosing parameters for privacy and detection targets
    ``rappor.simulation``  populations, :func:`simulate`, simulated reports and exact counts
    ``rappor.metrics``     accuracy of a decode against the truth
    ``rappor.audit``       empirical privacy audit of an encoder
    ``rappor.exceptions``  the error and warning hierarchy

Not imported here (optional dependencies): ``rappor.parquet`` (pyarrow),
``rappor.engines`` (Dask, Spark), ``rappor.plots`` and ``rappor.html_report``
(matplotlib).  Every public name of the modules above except ``rappor.randomizer``
(a low-level core, used through its module) is re-exported; ``__all__`` lists them.
"""

from __future__ import annotations

__version__ = "0.1.0"

from . import (
    aggregate,
    audit,
    candidates,
    compat,
    decoder,
    design,
    encoder,
    exceptions,
    hashing,
    map_file,
    mechanisms,
    metrics,
    params,
    planner,
    privacy,
    reports,
    simulation,
)
from .aggregate import *  # noqa: F403
from .audit import *  # noqa: F403
from .candidates import *  # noqa: F403
from .compat import *  # noqa: F403
from .decoder import *  # noqa: F403
from .design import *  # noqa: F403
from .encoder import *  # noqa: F403
from .exceptions import *  # noqa: F403
from .hashing import *  # noqa: F403
from .map_file import *  # noqa: F403
from .mechanisms import *  # noqa: F403
from .metrics import *  # noqa: F403
from .params import *  # noqa: F403
from .planner import *  # noqa: F403
from .privacy import *  # noqa: F403
from .reports import *  # noqa: F403
from .simulation import *  # noqa: F403

_PUBLIC_MODULES = [
    aggregate,
    audit,
    candidates,
    compat,
    decoder,
    design,
    encoder,
    exceptions,
    hashing,
    map_file,
    mechanisms,
    metrics,
    params,
    planner,
    privacy,
    reports,
    simulation,
]

__all__ = sorted({name for module in _PUBLIC_MODULES for name in module.__all__} | {"__version__"})
