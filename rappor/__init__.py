"""rappor: string frequencies with local differential privacy, as Chrome collected them.

Every client hides its string in a noisy Bloom filter (RAPPOR: Erlingsson, Pihur and
Korolova 2014, arXiv:1407.6981); an analyst recovers how common each candidate string
is from many such reports without learning any one client's value.

Public modules
--------------
``rappor.params``      :class:`Params` and google/rappor's ``params.csv``
``rappor.hashing``     per-cohort Bloom hashing (the only user of mmh3)
``rappor.exceptions``  the error and warning hierarchy
``rappor.reports``     :class:`ReportBatch`, packed reports
``rappor.aggregate``   :class:`Aggregate`, per-cohort bit counts (``counts.csv``)
``rappor.encoder``     :class:`Encoder`, the client (cohorts, PRR, IRR, key files)
``rappor.design``      :class:`CandidateMap`, the decoder's design matrix
``rappor.map_file``    google/rappor ``map.csv`` files
``rappor.candidates``  candidate list files
``rappor.audit``       empirical privacy audit of encoders

Every public name of those modules is re-exported here; ``__all__`` lists them.
Importing :mod:`rappor` is light: no scikit-learn, matplotlib, pyarrow or engines.
"""

from __future__ import annotations

__version__ = "0.1.0"

from . import aggregate, design, exceptions, hashing, params, reports
from .aggregate import *  # noqa: F403
from .design import *  # noqa: F403
from . import encoder
from .encoder import *  # noqa: F403
from .exceptions import *  # noqa: F403
from .hashing import *  # noqa: F403
from .params import *  # noqa: F403
from .reports import *  # noqa: F403
from . import candidates, map_file
from .candidates import *  # noqa: F403
from .map_file import *  # noqa: F403
from . import metrics, simulation
from .metrics import *  # noqa: F403
from .simulation import *  # noqa: F403
from . import mechanisms, planner, privacy
from .mechanisms import *  # noqa: F403
from .planner import *  # noqa: F403
from .privacy import *  # noqa: F403
from . import audit
from .audit import *  # noqa: F403

_PUBLIC_MODULES = [aggregate, audit, candidates, design, encoder, exceptions, hashing, map_file, mechanisms, metrics, params, planner, privacy, reports, simulation]

__all__ = sorted({name for module in _PUBLIC_MODULES for name in module.__all__} | {"__version__"})
