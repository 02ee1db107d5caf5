"""Many clients at once: :func:`encode_clients`, each client's secret derived from one key.

The fast path of ``rappor encode`` and of the simulations' "client" method: the same
reports as an :class:`~rappor.client.Encoder` per client (same cohorts and permanent
responses, :mod:`rappor.client._derivations`), with the key schedule, Bloom filters and
cohorts cached and all instantaneous-response noise drawn in one call.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._util.bits import pack_bits
from .._util.memory import check_encode
from .._util.validation import RngLike
from ..exceptions import InvalidParameterError
from ..params import Params
from ._derivations import (
    _FALSE,
    _TRUE,
    _check_params,
    _cohort_of_key,
    _noise,
    _normalize_rng,
    _prr_label,
    _uniforms_from_stream,
    client_secrets,
)
from ._hashing import bloom_indices_of_rows, bloom_matrix, raise_not_utf8, value_bytes
from ._randomizer import instantaneous_response_from_words, permanent_response_from_words
from ._reports import ReportBatch

__all__ = ["encode_clients"]


def _boolean_values(values: Sequence[Any], params: Params) -> list[bytes]:
    """``b"TRUE"``/``b"FALSE"`` for boolean values (bool, or the texts 1/0/true/false)."""
    if params.num_bloombits != 1 or params.num_hashes != 1:
        msg = f"Boolean values need parameters with one bit and one hash. Got {params!r} instead."
        raise InvalidParameterError(msg)
    out = []
    for i, v in enumerate(values):
        text = v.strip().lower() if isinstance(v, str) else v
        if text is True or text in ("1", "true"):
            out.append(_TRUE)
        elif text is False or text in ("0", "false"):
            out.append(_FALSE)
        else:
            msg = f"Expected a boolean (1, 0, true or false) at index {i}. Got {v!r} instead."
            raise InvalidParameterError(msg)
    return out


def encode_clients(params: Params, key: bytes, client_ids: Sequence[str], values: Sequence[str | bytes], *,
                   rng: RngLike = None, variable: str | None = None, boolean: bool = False) -> ReportBatch:
    """One report per ``(client_ids[i], values[i])``, each client's secret derived from ``key``.

    Equivalent to ``Encoder(params, client_secret(key, client_ids[i])).encode(values[i])``
    for every ``i`` (same cohorts and PRRs), but with the key schedule, Bloom filters
    and cohorts cached and all IRR noise drawn in one call: the fast path of
    ``rappor encode``.

    Parameters
    ----------
    params : Params
    key : bytes
        At least 16 bytes.
    client_ids : sequence of str
        A client may appear several times (one report each time).
    values : sequence of str or bytes
        Same length as ``client_ids``.
    rng : numpy.random.Generator, int or None, default=None
        ``None`` uses :func:`os.urandom`; otherwise numpy's (non-cryptographic)
        generator, for simulation and tests.
    variable : str or None, default=None
        The variable these values belong to, when a client reports several
        (:meth:`Encoder.encode_variables`): its PRRs use the variable's label.
    boolean : bool, default=False
        The values are booleans (``TRUE``/``FALSE``): a one-bit Bloom filter holding the
        value; ``params`` must then have one bit and one hash.

    Returns
    -------
    ReportBatch
        Reports in input order.

    Raises
    ------
    InsufficientMemoryError
        If the batch cannot fit in memory (about 16 bytes per report bit,
        :func:`rappor._util.memory.encode_bytes`), before anything is allocated.
    """
    _check_params(params, "encode_clients")
    check_encode(params, len(client_ids))
    generator = _normalize_rng(rng)
    n = len(client_ids)
    if len(values) != n:
        msg = f"The 'values' parameter of encode_clients must have the length of client_ids ({n}). Got {len(values)} instead."
        raise InvalidParameterError(msg)
    k, m = params.num_bloombits, params.num_cohorts
    # Hash-bound: each distinct client costs one HMAC for its secret and one for its
    # cohort, each report one SHAKE-256 call.  The passes below are list comprehensions
    # over C hash calls, with the derivations of client_secret and prr_uniforms inlined
    # (about 20% faster than one loop with the same calls).
    rows, secrets = client_secrets(key, client_ids, "encode_clients")
    client_cohorts = [_cohort_of_key(s, m) for s in secrets]
    pack = struct.Struct(">I").pack
    head = _prr_label(variable, params) + pack(32)  # _prr_key_prefix of a 32-byte secret is head || secret
    prefixes = [head + s + pack(c) for s, c in zip(secrets, client_cohorts)]
    if boolean:
        datas = _boolean_values(values, params)
    else:
        try:
            datas = [v.encode("utf-8") if type(v) is str else value_bytes(v) for v in values]
        except (UnicodeEncodeError, InvalidParameterError):
            raise_not_utf8(values, "values", "encode_clients")
            raise
    shake_256, out_bytes = hashlib.shake_256, 4 * k
    stream = b"".join([shake_256(prefixes[r] + d).digest(out_bytes) for r, d in zip(rows, datas)])
    cohorts = np.array(client_cohorts, dtype=np.int64)[np.array(rows, dtype=np.intp)]
    if boolean:
        bloom = np.array([[d == _TRUE] for d in datas], dtype=np.uint8).reshape(n, 1)
    else:
        bloom = bloom_matrix(bloom_indices_of_rows(datas, cohorts, params), k)
    prr = permanent_response_from_words(bloom, _uniforms_from_stream(stream, n, k), params.prob_f)
    irr = instantaneous_response_from_words(prr, _noise(prr.shape, generator), params.prob_p, params.prob_q)
    return ReportBatch(params=params, cohorts=cohorts, words=pack_bits(irr))
