"""Collection: reports summed into per-cohort bit counts, candidates hashed into the design.

In the order a collection uses them (modules private, names listed here):

``_aggregate``  :class:`Aggregate`: per-cohort bit counts, a monoid (``empty``, ``merge``)
``_design``     :class:`CandidateMap` and :func:`hash_candidates`: the decoder's design matrix,
                hashed :func:`hash_block_size` candidates at a time
``_compat``     google/rappor's own MD5 hashing and PRR, for collections made by its clients

Running the aggregation over files (locally, on Dask or Spark) is :mod:`rappor.engines`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util.lazy import lazy_face

if TYPE_CHECKING:
    from ._aggregate import Aggregate, check_cohort_balance
    from ._compat import (
        GOOGLE_MAX_HASHES,
        GOOGLE_MAX_PRR_BITS,
        google_bloom_bits,
        google_bloom_bits_table,
        google_bloom_filter,
        google_effective_prob_f,
        google_prr,
        google_prr_batch,
        hash_candidates_google,
    )
    from ._design import CandidateMap, hash_block_size, hash_candidates
else:
    __getattr__, __dir__ = lazy_face(__name__)
    del lazy_face, TYPE_CHECKING  # plumbing, not names of the face

__all__ = [
    "GOOGLE_MAX_HASHES",
    "GOOGLE_MAX_PRR_BITS",
    "Aggregate",
    "CandidateMap",
    "check_cohort_balance",
    "google_bloom_bits",
    "google_bloom_bits_table",
    "google_bloom_filter",
    "google_effective_prob_f",
    "google_prr",
    "google_prr_batch",
    "hash_block_size",
    "hash_candidates",
    "hash_candidates_google",
]
