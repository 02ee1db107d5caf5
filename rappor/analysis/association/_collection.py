"""A multi-variable collection decoded as ``rappor decode-assoc`` does it: a sample of the clients, then the decoder.

google/rappor's ``decode_assoc.R`` decodes a random sample of the reports when there are many
(``--reports-sample-size``); :func:`decode_collection` does the same, drawing whole clients (the
row of every variable) so that the variables stay paired.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from ..._util.validation import RngLike, check_int, check_rng
from ...client._reports import ReportBatch
from ._decoder import AssociationDecoder
from ._result import AssociationResult
from ._variables import Variable

__all__ = ["decode_collection", "sample_clients"]


def sample_clients(reports: Sequence[ReportBatch], size: int, *, rng: RngLike = None) -> list[ReportBatch]:
    """``size`` report tuples drawn without replacement, each with its report of every variable, in their order.

    Parameters
    ----------
    reports : sequence of ReportBatch
        One batch per variable, row ``i`` of every batch from the same client.
    size : int
        Tuples to keep (google/rappor's ``--reports-sample-size``); all of them when there are no more.
    rng : None, int or numpy.random.Generator
    """
    return _sample(reports, None, size, rng)[0]


def _sample(reports: Sequence[ReportBatch], clients: npt.ArrayLike | None, size: int,
            rng: RngLike) -> tuple[list[ReportBatch], npt.ArrayLike | None]:
    """:func:`sample_clients`, and the kept tuples' client ids when given."""
    size = check_int(size, "size", "sample_clients", low=1)
    n = len(reports[0]) if reports else 0
    if n <= size:
        return list(reports), clients
    rows = np.sort(check_rng(rng).choice(n, size, replace=False))
    kept = [ReportBatch(params=b.params, cohorts=b.cohorts[rows], words=b.words[rows]) for b in reports]
    return kept, None if clients is None else np.asarray(clients)[rows]


def decode_collection(reports: Sequence[ReportBatch], variables: Sequence[Variable], *,
                      decoder: AssociationDecoder | None = None, sample_size: int | None = None,
                      clients: npt.ArrayLike | None = None, rng: RngLike = None,
                      progress: Callable[[str], None] | None = None) -> AssociationResult:
    """Decode the joint distribution of ``variables`` from a sample of ``sample_size`` clients (all by default).

    Parameters
    ----------
    reports : sequence of ReportBatch
        One batch per variable, row ``i`` of every batch from the same client.
    variables : sequence of Variable
        The variables, in the same order.
    decoder : AssociationDecoder, optional
        Default ``AssociationDecoder()``.
    sample_size : int, optional
        Decode this many report tuples drawn at random (:func:`sample_clients`); None keeps all.
    clients : array-like of shape (n_reports,), optional
        Each tuple's client id (a ``client`` column): where a client reported more than once,
        the covariance is clustered by client (:meth:`AssociationDecoder.decode`).
    rng : None, int or numpy.random.Generator
        For the sample.
    progress : callable or None
        Passed to :meth:`AssociationDecoder.decode` (called with each stage's name).

    Returns
    -------
    AssociationResult
    """
    if sample_size is not None:
        reports, clients = _sample(reports, clients, sample_size, rng)
    return (AssociationDecoder() if decoder is None else decoder).decode(reports, variables, clients=clients,
                                                                         progress=progress)
