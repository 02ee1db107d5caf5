"""The client: what runs on each device, from a string to the report it sends.

In the order an encode uses them (modules private, names listed here):

``_hashing``     the string's per-cohort Bloom filter bits (the only user of mmh3), with
                 ``_murmur``, MurmurHash3 vectorised over many keys and cohorts
``_randomizer``  the randomizer core: PRR and IRR rules and thresholds, p11/p01, debiasing
``_derivations`` where a client's randomness comes from: its cohort, PRR words and secret
                 (keyed derivations, :func:`client_secret`, :func:`generate_key`), the CSPRNG,
                 with ``_hmac``, HMAC-SHA256 over hashlib's keyed states, batched
``_encoder``     :class:`Encoder`: one client's reports (Bloom filter, PRR, IRR)
``_clients``     :func:`encode_clients`: many clients under one key at once
``_reports``     :class:`Report` and :class:`ReportBatch`, what the collector receives

The client needs nothing from the later stages (collection, analysis); key files are
read and written by :mod:`rappor.formats`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._util.lazy import lazy_face

if TYPE_CHECKING:
    from ._clients import encode_clients
    from ._derivations import (
        MIN_SECRET_BYTES,
        VARIABLE_PRR_LABEL,
        client_secret,
        derive_cohort,
        generate_key,
        prr_parameter_tag,
        prr_uniforms,
        prr_uniforms_of_variable,
    )
    from ._encoder import EncodeTrace, Encoder
    from ._hashing import (
        bloom_bit_indices,
        bloom_bits,
        bloom_bits_table,
        bloom_filter,
        reduce_words,
        split_hash_words,
        value_bytes,
    )
    from ._randomizer import (
        WORD_SPAN,
        debias,
        debiased_variance,
        instantaneous_response,
        instantaneous_response_from_words,
        irr_thresholds,
        permanent_response,
        permanent_response_from_words,
        prr_threshold,
    )
    from ._reports import Report, ReportBatch
else:
    __getattr__, __dir__ = lazy_face(__name__)
    del lazy_face, TYPE_CHECKING  # plumbing, not names of the face

__all__ = [
    "MIN_SECRET_BYTES",
    "VARIABLE_PRR_LABEL",
    "WORD_SPAN",
    "EncodeTrace",
    "Encoder",
    "Report",
    "ReportBatch",
    "bloom_bit_indices",
    "bloom_bits",
    "bloom_bits_table",
    "bloom_filter",
    "client_secret",
    "debias",
    "debiased_variance",
    "derive_cohort",
    "encode_clients",
    "generate_key",
    "instantaneous_response",
    "instantaneous_response_from_words",
    "irr_thresholds",
    "permanent_response",
    "permanent_response_from_words",
    "prr_parameter_tag",
    "prr_threshold",
    "prr_uniforms",
    "prr_uniforms_of_variable",
    "reduce_words",
    "split_hash_words",
    "value_bytes",
]
