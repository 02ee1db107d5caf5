"""The discovery client: one report of a prefix fragment, in a slot fixed by the client secret.

Specification (additions to ``docs/client.md``; the full-string report is unchanged):

``D``
    ``HMAC-SHA256(secret, b"rappor/discovery/client")``, computed once per client; ``U_j``
    is its bytes ``8j .. 8j + 7`` read big-endian (three independent 64-bit words).
``slot``
    ``floor(U_0 * L / 2**64)`` (``L = spec.levels``), or with slot weights ``w_s`` the
    ``s`` with ``w_0 + ... + w_{s-1} <= floor(U_0 W / 2**64) < w_0 + ... + w_s``
    (:meth:`DiscoverySpec.slot_of_word`).
``cohort``
    ``floor(U_1 * m / 2**64)`` over the slot's ``m`` cohorts; the report carries the wire
    cohort ``slot * m + cohort``.
``role``
    with the client split (``split="clients"``), the client sends a discovery report
    instead of its full-string report iff ``U_2 < round(share * 2**64)``.
``Bloom filter``
    of the fragment (:meth:`DiscoverySpec.bloom_bits`, the split head/tail hash).
``PRR``
    as the full-string PRR (``docs/client.md``) with the label
    ``b"rappor/prr/discovery/v2:" || T`` (``T`` the wire parameters'
    :func:`~rappor.client.prr_parameter_tag`) instead of ``b"rappor/prr/v3:" || T`` and the
    fragment bytes ``marker || prefix`` (:meth:`DiscoverySpec.fragment`) as the value, with
    the wire cohort.  The different label makes the discovery PRR independent of every
    full-string PRR of the same client, which the privacy accounting assumes; the tag, of
    PRRs of the same client under other discovery parameters.
``IRR``
    as for full strings, from the operating system's CSPRNG by default.
"""

from __future__ import annotations

import hashlib
import hmac
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np

import numpy.typing as npt

from ..._util.bits import num_words, pack_bits
from ..._util.memory import check_encode
from ..._util.validation import RngLike, check_probability
from ...client._derivations import (
    _check_secret,
    _noise,
    _normalize_rng,
    _prr_key_prefix,
    _prr_message,
    _uniforms_from_stream,
    client_secrets,
    prr_parameter_tag,
)
from ...exceptions import InvalidParameterError
from ...client._hashing import raise_not_utf8, split_bit_indices, value_bytes
from ...client._hmac import hmac_sha256_many
from ...client._randomizer import (
    instantaneous_response_from_words,
    permanent_response_from_indices,
    permanent_response_from_words,
)
from ...client._reports import Report, ReportBatch
from ._spec import COMPLETE, PARTIAL, DiscoverySpec, scale_words

__all__ = ["DiscoveryEncoder", "discovery_cohort", "discovery_role", "discovery_roles", "discovery_slot",
           "encode_discovery_clients"]

_CLIENT_LABEL = b"rappor/discovery/client"
#: Reports whose SHAKE-256 outputs (4k bytes each) are turned into PRRs at once.
_BLOCK_ROWS = 1024
_DISCOVERY_PRR_LABEL = b"rappor/prr/discovery/v2:"


def _discovery_label(spec: DiscoverySpec) -> bytes:
    """The discovery PRR's label: ``_DISCOVERY_PRR_LABEL || T`` of the wire parameters."""
    return _DISCOVERY_PRR_LABEL + prr_parameter_tag(spec.wire_params)


def _client_words(secret: bytes) -> tuple[int, int, int]:
    """``(U_0, U_1, U_2)`` of the module docstring: the slot's, the cohort's and the role's words."""
    d = hmac.digest(secret, _CLIENT_LABEL, "sha256")
    return int.from_bytes(d[:8], "big"), int.from_bytes(d[8:16], "big"), int.from_bytes(d[16:24], "big")


def _client_word_array(secrets: Sequence[bytes]) -> npt.NDArray[np.uint64]:
    """:func:`_client_words` of every 32-byte secret: an ``(n, 3)`` uint64 array (``U_0, U_1, U_2``)."""
    digests = b"".join(hmac_sha256_many(secrets, _CLIENT_LABEL))
    out: npt.NDArray[np.uint64] = np.frombuffer(digests, dtype=">u8").reshape(len(secrets), 4)[:, :3].astype(np.uint64)
    return out


def _roles_of_words(words: npt.NDArray[np.uint64], share: float) -> npt.NDArray[np.bool_]:
    """``U_2 < round(share 2**64)`` per row (:func:`discovery_role`): a share of 1 takes every client."""
    cut = round(share * 2**64)
    if cut >= 2**64:
        return np.ones(words.shape[0], dtype=bool)
    out: npt.NDArray[np.bool_] = words[:, 2] < np.uint64(cut)
    return out


def _check_levels(levels: Any, owner: str) -> int:
    if isinstance(levels, bool) or not isinstance(levels, (int, np.integer)) or levels < 1:
        raise InvalidParameterError(f"The 'levels' parameter of {owner} must be an int >= 1. Got {levels!r}.")
    return int(levels)


def discovery_slot(secret: bytes, levels: int) -> int:
    """The slot of the client holding ``secret``: uniform over ``[0, levels)``, fixed for its lifetime."""
    size = _check_levels(levels, "discovery_slot")
    return (_client_words(_check_secret(secret, "secret", "discovery_slot"))[0] * size) >> 64


def discovery_cohort(secret: bytes, num_cohorts: int) -> int:
    """The cohort of the client holding ``secret`` within its slot: uniform over ``[0, num_cohorts)``."""
    size = _check_levels(num_cohorts, "discovery_cohort")
    return (_client_words(_check_secret(secret, "secret", "discovery_cohort"))[1] * size) >> 64


def discovery_role(secret: bytes, share: float) -> bool:
    """Whether the client sends a discovery report (instead of its full-string one) under a client split."""
    s = check_probability(share, "share", "discovery_role")
    return _client_words(_check_secret(secret, "secret", "discovery_role"))[2] < round(s * 2**64)


class DiscoveryEncoder:
    """A client's discovery reports (see the module docstring for the exact derivations).

    Parameters
    ----------
    spec : DiscoverySpec
    secret : bytes
        The client secret (at least 16 bytes), the same as for its full-string reports.
    rng : numpy.random.Generator, int or None, default=None
        IRR randomness; None uses :func:`os.urandom` (numpy's generator is not a CSPRNG:
        for simulation and tests only).

    Examples
    --------
    >>> from rappor import Params
    >>> spec = DiscoverySpec(params=Params(num_bloombits=32, num_hashes=1, num_cohorts=4,
    ...                                    prob_p=0.0, prob_q=1.0, prob_f=0.25), max_length=8)
    >>> enc = DiscoveryEncoder(spec, b"0123456789abcdef", rng=0)
    >>> report = enc.encode("example.com")
    >>> report.cohort == enc.slot * 4 + enc.cohort
    True
    """

    __slots__ = ("_spec", "_slot", "_cohort", "_prr_xof", "_rng")

    def __init__(self, spec: DiscoverySpec, secret: bytes, *, rng: RngLike = None) -> None:
        if not isinstance(spec, DiscoverySpec):
            raise InvalidParameterError(f"The 'spec' parameter of DiscoveryEncoder must be a DiscoverySpec. Got {spec!r}.")
        key = _check_secret(secret, "secret", "DiscoveryEncoder")
        self._spec = spec
        slot_word, cohort_word, _ = _client_words(key)
        self._slot = spec.slot_of_word(slot_word)
        self._cohort = (cohort_word * spec.params.num_cohorts) >> 64
        self._prr_xof = hashlib.shake_256(_prr_key_prefix(key, _discovery_label(spec)))
        self._rng = _normalize_rng(rng)

    def __repr__(self) -> str:
        source = "os.urandom" if self._rng is None else "numpy"
        return f"DiscoveryEncoder(levels={self._spec.levels}, slot={self._slot}, secret=<hidden>, rng={source})"

    def __reduce__(self) -> Any:
        raise TypeError("DiscoveryEncoder objects hold a secret and cannot be pickled.")

    @property
    def slot(self) -> int:
        """The client's slot (fixed)."""
        return self._slot

    @property
    def cohort(self) -> int:
        """The client's cohort within its slot (fixed)."""
        return self._cohort

    def _prr(self, value: str | bytes) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        params = self._spec.params
        k = params.num_bloombits
        data = value_bytes(value)
        bloom = np.zeros((1, k), dtype=np.uint8)
        bloom[0, self._spec.bloom_bits([data], self._slot)[0, self._cohort]] = 1
        wire = self._spec.wire_cohort(self._slot, self._cohort)
        xof = self._prr_xof.copy()
        xof.update(_prr_message(wire, self._spec.fragment(data, self._slot)))
        u = _uniforms_from_stream(xof.digest(4 * k), 1, k)
        return bloom, permanent_response_from_words(bloom, u, params.prob_f)

    def encode(self, value: str | bytes) -> Report:
        """One discovery report of ``value`` (``str`` as UTF-8): wire cohort and IRR bits."""
        params = self._spec.params
        _, prr = self._prr(value)
        irr = instantaneous_response_from_words(prr, _noise(prr.shape, self._rng), params.prob_p, params.prob_q)
        return Report(cohort=self._spec.wire_cohort(self._slot, self._cohort), bits=irr[0])


def discovery_roles(key: bytes, client_ids: Sequence[str], share: float) -> npt.NDArray[np.bool_]:
    """Per row, whether client ``client_ids[i]`` (secret from ``key``) sends a discovery report under a client split.

    ``discovery_role(client_secret(key, client_ids[i]), share)`` for every ``i``, with the
    key schedule cached (each distinct client costs two HMACs).

    Returns
    -------
    ndarray of shape (len(client_ids),), dtype bool
    """
    s = check_probability(share, "share", "discovery_roles")
    rows, secrets = client_secrets(key, client_ids, "discovery_roles")
    out: npt.NDArray[np.bool_] = _roles_of_words(_client_word_array(secrets), s)[np.array(rows, dtype=np.intp)]
    return out


def encode_discovery_clients(spec: DiscoverySpec, key: bytes, client_ids: Sequence[str],
                             values: Sequence[str | bytes], *, rng: RngLike = None) -> ReportBatch:
    """One discovery report per ``(client_ids[i], values[i])``, each client's secret derived from ``key``.

    Equivalent to ``DiscoveryEncoder(spec, client_secret(key, client_ids[i])).encode(values[i])``
    for every ``i`` (same slots, cohorts and PRRs; with a numpy generator, the same IRR
    noise as encoding the rows one after the other with it), with the key schedule
    cached, one MurmurHash3 call per part and report, and the randomized responses of
    the whole batch computed at once: the fast path of ``rappor encode --discovery-params``.

    Parameters
    ----------
    spec : DiscoverySpec
    key : bytes
        At least 16 bytes (:func:`rappor.encoder.read_key_file`).
    client_ids : sequence of str
    values : sequence of str or bytes
        Same length as ``client_ids``; ``str`` as UTF-8.
    rng : numpy.random.Generator, int or None, default=None
        ``None`` uses :func:`os.urandom`; otherwise numpy's (non-cryptographic)
        generator, for simulation and tests.

    Returns
    -------
    ReportBatch
        Under ``spec.wire_params`` (wire cohorts), in input order.
    """
    if not isinstance(spec, DiscoverySpec):
        msg = f"The 'spec' parameter of encode_discovery_clients must be a DiscoverySpec. Got {spec!r}."
        raise InvalidParameterError(msg)
    wire = spec.wire_params
    n = len(client_ids)
    check_encode(wire, n)
    generator = _normalize_rng(rng)
    if len(values) != n:
        msg = (f"The 'values' parameter of encode_discovery_clients must have the length of client_ids ({n}). "
               f"Got {len(values)} instead.")
        raise InvalidParameterError(msg)
    rows, secrets = client_secrets(key, client_ids, "encode_discovery_clients")
    m, k = spec.params.num_cohorts, wire.num_bloombits
    words = _client_word_array(secrets)
    slots = spec.slots_of_words(words[:, 0])
    wires = (slots * m + scale_words(words[:, 1], m)).tolist()
    row_index = np.array(rows, dtype=np.intp)
    pack = struct.Struct(">I").pack
    head = _discovery_label(spec) + pack(32)  # _prr_key_prefix of a 32-byte secret is head || secret
    prefixes = [head + secret + pack(w) for secret, w in zip(secrets, wires)]
    try:
        datas = [v.encode("utf-8") if type(v) is str else value_bytes(v) for v in values]
    except (UnicodeEncodeError, InvalidParameterError):
        raise_not_utf8(values, "values", "encode_discovery_clients")
        raise
    # DiscoverySpec.split and .fragment inlined: head v[:a], tail marker || v[a:b], fragment marker || v[:b].
    bounds = [(spec.prefix_length(s - 1) if s else 0, spec.prefix_length(s)) for s in range(spec.levels)]
    row_bounds = [bounds[s] for s in slots[row_index].tolist()]
    markers = [COMPLETE if len(d) <= b else PARTIAL for d, (_, b) in zip(datas, row_bounds)]
    messages = [prefixes[r] + c + d[:b] for r, c, d, (_, b) in zip(rows, markers, datas, row_bounds)]
    row_wires = [wires[r] for r in rows]
    bits = split_bit_indices([d[:a] for d, (a, _) in zip(datas, row_bounds)],
                             [c + d[a:b] for c, d, (a, b) in zip(markers, datas, row_bounds)], row_wires,
                             num_bloombits=k, num_hashes=wire.num_hashes)
    shake_256, out_bytes = hashlib.shake_256, 4 * k
    no_irr = wire.prob_p == 0.0 and wire.prob_q == 1.0  # then the IRR is the PRR, whatever the words
    prr = np.empty((n, k), dtype=np.uint8)
    packed = np.empty((n, num_words(k)), dtype=np.uint64)
    # The SHAKE outputs (4k bytes a report) in blocks small enough to stay in the cache.
    for lo in range(0, n, _BLOCK_ROWS):
        hi = min(n, lo + _BLOCK_ROWS)
        stream = b"".join([shake_256(m).digest(out_bytes) for m in messages[lo:hi]])
        block = permanent_response_from_indices(bits[lo:hi], np.frombuffer(stream, dtype=">u4").reshape(hi - lo, k),
                                                wire.prob_f)
        if no_irr:
            packed[lo:hi] = pack_bits(block)
        else:
            prr[lo:hi] = block
    if not no_irr:
        irr = instantaneous_response_from_words(prr, _noise(prr.shape, generator), wire.prob_p, wire.prob_q)
        packed = pack_bits(irr)
    return ReportBatch(params=wire, cohorts=np.array(row_wires, dtype=np.int64), words=packed)
