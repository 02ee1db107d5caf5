"""Where a client's randomness comes from: keyed derivations from its secret, and the OS CSPRNG.

The rules that turn these words into a permanent and an instantaneous response
(thresholds, bit algebra) are :mod:`rappor.client._randomizer`'s; the :class:`Encoder`
(:mod:`rappor.client._encoder`) and :func:`encode_clients` (:mod:`rappor.client._clients`)
put the two together.

A client holds a secret (at least 16 bytes).  From it, and only from it, come

* its **cohort** (unless the caller assigns one), fixed for the client's lifetime;
* its **permanent randomized response** (PRR) for each value: a deterministic
  function of ``(secret, cohort, value)``, so it is "memoized" without storing
  anything (the paper's Section 3, step 2; google/rappor ``get_prr_masks``);

and from fresh randomness, for every report,

* its **instantaneous randomized response** (IRR), the only bits that leave the
  device, together with the cohort.

The exact derivations (byte strings, byte order, thresholds) are specified in
``docs/client.md`` and checked by golden vectors in ``data/golden/``:

``cohort``
    ``c = floor(U64 * m / 2**64)`` with ``U64`` the first 8 bytes, big-endian, of
    ``HMAC-SHA256(secret, b"rappor/cohort")``.
``PRR``
    ``X = SHAKE256(b"rappor/prr/v3:" || T || uint32_be(len(secret)) || secret || uint32_be(c)
    || value)`` (FIPS 202, a keyed sponge used as a PRF), read ``4k`` bytes; bit ``j``
    uses the big-endian uint32 ``u`` at bytes ``4j .. 4j + 3`` of ``X``.  With
    ``t = min(round(f 2**31), 2**31)``: ``u < t`` gives 1, ``t <= u < 2t`` gives 0 and
    otherwise the Bloom bit is kept (:func:`rappor.client.permanent_response_from_words`).
    ``T = uint64_be(k) || uint64_be(h) || uint32_be(t)`` (:func:`prr_parameter_tag`): the
    parameters that make the PRR from the words, so that one secret under two parameter
    sets draws independent words (with shared words, the two PRRs together gave away
    true Bloom bits: v2, before session 25).
``PRR of one of several variables`` (association analysis; see ``docs/client.md``)
    the same with the label ``b"rappor/prr/v3/var" || uint32_be(len(name)) || utf8(name) || T``
    (``T`` of the variable's parameters) in place of ``b"rappor/prr/v3:" || T``; a boolean's
    value bytes are ``b"TRUE"`` or ``b"FALSE"``.
``IRR``
    a fresh uniform uint32 ``v`` per bit: bit is 1 iff ``v < round(q 2**32)`` where the
    PRR bit is 1 and iff ``v < round(p 2**32)`` where it is 0.  ``round`` is Python's
    (half to even) applied to the exact product
    (:func:`rappor.client.instantaneous_response_from_words`).
``client secrets``
    ``HMAC-SHA256(key, b"rappor/client/" || utf8(client_id))`` (32 bytes), so one key
    file serves a whole simulated or server-side population.

Security
--------
By default the IRR draws its randomness from the operating system's CSPRNG
(:func:`os.urandom`).  Passing ``rng`` (a :class:`numpy.random.Generator` or a seed)
replaces it with numpy's generator, which is *not* cryptographically secure: use it
only for simulation and tests.  Secrets are never shown in a repr or a message.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import os
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .._util.keyfile import MIN_KEY_BYTES
from .._util.validation import RngLike, check_rng
from ..exceptions import InvalidParameterError
from ..params import Params
from ._hashing import raise_not_utf8, utf8_problem, value_bytes
from ._hmac import keyed_hmac_sha256
from ._randomizer import WORD_SPAN, prr_threshold

__all__ = [
    "MIN_SECRET_BYTES",
    "VARIABLE_PRR_LABEL",
    "client_secret",
    "client_secrets",
    "derive_cohort",
    "generate_key",
    "prr_parameter_tag",
    "prr_uniforms",
    "prr_uniforms_of_variable",
]

#: Shortest accepted client secret or key, in bytes.
MIN_SECRET_BYTES = MIN_KEY_BYTES

_COHORT_LABEL = b"rappor/cohort"
_PRR_LABEL = b"rappor/prr/v3:"
#: Label of the PRRs of a named variable (several variables per client); differs from
#: ``_PRR_LABEL`` at byte 13 (``/`` against ``:``).
VARIABLE_PRR_LABEL = b"rappor/prr/v3/var"
_CLIENT_LABEL = b"rappor/client/"


def _check_secret(secret: Any, name: str, owner: str) -> bytes:
    """Return ``secret`` as bytes of length >= 16; the message never shows its value."""
    if isinstance(secret, (bytes, bytearray, memoryview)):
        data = bytes(secret)
        if len(data) >= MIN_SECRET_BYTES:
            return data
        got = f"{len(data)} bytes"
    else:
        got = f"a {type(secret).__name__}"
    msg = f"The {name!r} parameter of {owner} must be bytes of length >= {MIN_SECRET_BYTES}. Got {got} instead."
    raise InvalidParameterError(msg)


def _keyed_word(key: bytes, label: bytes) -> int:
    """``U64``: the first 8 bytes, big-endian, of ``HMAC-SHA256(key, label)``."""
    return int.from_bytes(hmac.digest(key, label, "sha256")[:8], "big")


def _keyed_index(key: bytes, label: bytes, size: int) -> int:
    """``floor(U64 * size / 2**64)`` for ``U64 = _keyed_word(key, label)``: uniform over ``[0, size)`` (Lemire 2019)."""
    return (_keyed_word(key, label) * size) >> 64


def _cohort_of_key(key: bytes, num_cohorts: int) -> int:
    """The cohort of a secret: ``_keyed_index(secret, b"rappor/cohort", m)`` (see :func:`derive_cohort`)."""
    return _keyed_index(key, _COHORT_LABEL, num_cohorts)


def derive_cohort(secret: bytes, num_cohorts: int) -> int:
    """The cohort of the client holding ``secret``, uniform over ``[0, num_cohorts)``.

    Parameters
    ----------
    secret : bytes
        The client secret (at least 16 bytes).
    num_cohorts : int
        ``m``.

    Returns
    -------
    int
        ``floor(U * m / 2**64)`` where ``U`` is the first 8 bytes, read big-endian, of
        ``HMAC-SHA256(secret, b"rappor/cohort")``.

    Notes
    -----
    The multiply-shift reduction (Lemire 2019, "Fast random integer generation in an
    interval", ACM TOMACS 29(1)) gives each cohort ``floor(2**64 / m)`` or
    ``ceil(2**64 / m)`` of the ``2**64`` words, a relative bias below ``m / 2**64`` for
    any ``m``, not only powers of two.
    """
    key = _check_secret(secret, "secret", "derive_cohort")
    if isinstance(num_cohorts, bool) or not isinstance(num_cohorts, (int, np.integer)) or num_cohorts < 1:
        msg = f"The 'num_cohorts' parameter of derive_cohort must be an int >= 1. Got {num_cohorts!r} instead."
        raise InvalidParameterError(msg)
    return _cohort_of_key(key, int(num_cohorts))


def prr_parameter_tag(params: Params) -> bytes:
    """``uint64_be(k) || uint64_be(h) || uint32_be(t)``, ``t = min(round(f 2**31), 2**31)``.

    The parameters that turn a PRR's words into its bits (how many words, which bits the
    value sets, the thresholds), absorbed with the label so that a secret used under two
    parameter sets (a re-planned collection, two metrics of different ``k``) draws
    independent words for each: with the same words, bit ``j``'s two PRRs are functions of
    one ``u_j`` and together give away the Bloom bit (at ``f`` 0.5 and 0.25, "0 then 1"
    happens only where the bit is 1; RAPPOR's Theorem 1 bounds one PRR, not two of one
    word).  Their costs then add as the privacy accounting assumes.
    """
    return struct.pack(">QQI", params.num_bloombits, params.num_hashes, prr_threshold(params.prob_f))


def _prr_label(variable: str | None, params: Params) -> bytes:
    """The PRR label: ``_PRR_LABEL || T`` or, for one of several variables,
    ``VARIABLE_PRR_LABEL || uint32_be(len(name)) || utf8(name) || T`` (``T``: :func:`prr_parameter_tag`)."""
    tag = prr_parameter_tag(params)
    if variable is None:
        return _PRR_LABEL + tag
    if not isinstance(variable, str) or not variable:
        msg = f"The 'variable' parameter must be a non-empty str or None. Got {variable!r} instead."
        raise InvalidParameterError(msg)
    name = variable.encode("utf-8")
    return VARIABLE_PRR_LABEL + struct.pack(">I", len(name)) + name + tag


def _prr_key_prefix(secret: bytes, label: bytes) -> bytes:
    """``label || uint32_be(len(secret)) || secret``: the keyed part of the PRR's SHAKE-256 input.

    ``label`` is :func:`_prr_label`'s for full-string reports; discovery reports use
    their own (:mod:`rappor.analysis.discovery`), so the two PRRs of one client are
    independent.
    """
    return label + struct.pack(">I", len(secret)) + secret


def _prr_message(cohort: int, data: bytes) -> bytes:
    """``uint32_be(cohort) || value``: the part of the PRR's SHAKE-256 input after the key."""
    return struct.pack(">I", cohort) + data


def _uniforms_from_stream(raw: bytes, n: int, num_bloombits: int) -> npt.NDArray[np.uint32]:
    """Concatenated ``4k``-byte SHAKE-256 outputs of ``n`` reports -> ``(n, k)`` uint32 (big-endian words)."""
    return np.frombuffer(raw, dtype=">u4").reshape(n, num_bloombits).astype(np.uint32)


def prr_uniforms(secret: bytes, cohort: int, value: str | bytes, params: Params) -> npt.NDArray[np.uint32]:
    """The ``k`` uniform 32-bit words that decide the permanent response of ``value`` under ``params``.

    Word ``j`` is the big-endian uint32 at bytes ``4j`` to ``4j + 3`` of the SHAKE-256
    output of ``b"rappor/prr/v3:" || T || uint32_be(len(secret)) || secret ||
    uint32_be(cohort) || value``, ``T`` = :func:`prr_parameter_tag` of ``params``;
    ``value`` is UTF-8 for ``str``.  See ``docs/client.md``.

    Returns
    -------
    ndarray of shape (num_bloombits,), dtype uint32

    Notes
    -----
    SHAKE-256 (NIST FIPS 202) with the key absorbed first is a keyed sponge, a PRF as
    long as the key has enough entropy (Bertoni, Daemen, Peeters and Van Assche, "On the
    security of the keyed sponge construction", SKEW 2011); KMAC (NIST SP 800-185)
    rests on the same argument.  The length prefix makes the input an injective
    encoding of ``(secret, cohort, value)``.
    """
    key = _check_secret(secret, "secret", "prr_uniforms")
    params = _check_params(params, "prr_uniforms")
    k = params.num_bloombits
    message = _prr_key_prefix(key, _prr_label(None, params)) + _prr_message(int(cohort), value_bytes(value))
    uniforms: npt.NDArray[np.uint32] = _uniforms_from_stream(hashlib.shake_256(message).digest(4 * k), 1, k)[0]
    return uniforms


def _check_params(params: Any, owner: str) -> Params:
    if not isinstance(params, Params):
        msg = f"The 'params' parameter of {owner} must be a Params. Got a {type(params).__name__} instead."
        raise InvalidParameterError(msg)
    return params


def _noise(shape: tuple[int, ...], rng: np.random.Generator | None) -> npt.NDArray[np.uint32]:
    """Uniform uint32 words: from :func:`os.urandom` when ``rng`` is None, else from ``rng``."""
    size = math.prod(shape)
    if rng is None:
        return np.frombuffer(os.urandom(4 * size), dtype="<u4").astype(np.uint32, copy=False).reshape(shape)
    return rng.integers(0, WORD_SPAN, size=shape, dtype=np.uint32)


def _normalize_rng(rng: RngLike) -> np.random.Generator | None:
    return None if rng is None else check_rng(rng)


# ---------------------------------------------------------------- several variables per client
# (association analysis: rappor.analysis.association; the PRR's label names the variable)

_TRUE, _FALSE = b"TRUE", b"FALSE"


class _VariablePrrs:
    """SHAKE-256 states with ``secret`` and one variable's label absorbed, made on first use."""

    __slots__ = ("_secret", "_states")

    def __init__(self, secret: bytes) -> None:
        self._secret = secret
        self._states: dict[tuple[str, Params], Any] = {}

    def digest(self, variable: str, params: Params, cohort: int, data: bytes, size: int) -> bytes:
        state = self._states.get((variable, params))
        if state is None:  # the label (name and parameter tag) is built once per variable and Params
            label = _prr_label(variable, params)
            state = self._states[(variable, params)] = hashlib.shake_256(_prr_key_prefix(self._secret, label))
        xof = state.copy()
        xof.update(_prr_message(cohort, data))
        return xof.digest(size)

    def __repr__(self) -> str:
        return "_VariablePrrs(<secret hidden>)"


def prr_uniforms_of_variable(secret: bytes, variable: str, cohort: int, value: str | bytes | bool,
                             params: Params) -> npt.NDArray[np.uint32]:
    """:func:`prr_uniforms` of one of several variables (label ``b"rappor/prr/v3/var"``, the name, the tag).

    ``params`` are the variable's (a boolean's: ``boolean_params``); a boolean value's bytes
    are ``b"TRUE"`` or ``b"FALSE"``.
    """
    key = _check_secret(secret, "secret", "prr_uniforms_of_variable")
    params = _check_params(params, "prr_uniforms_of_variable")
    k = params.num_bloombits
    data = (_TRUE if value else _FALSE) if isinstance(value, (bool, np.bool_)) else value_bytes(value)
    message = _prr_key_prefix(key, _prr_label(variable, params)) + _prr_message(int(cohort), data)
    uniforms: npt.NDArray[np.uint32] = _uniforms_from_stream(hashlib.shake_256(message).digest(4 * k), 1, k)[0]
    return uniforms


def client_secret(key: bytes, client_id: str) -> bytes:
    """The secret of client ``client_id`` under ``key``: ``HMAC-SHA256(key, b"rappor/client/" || utf8(id))``.

    Parameters
    ----------
    key : bytes
        The key (at least 16 bytes; see :func:`read_key_file`).
    client_id : str
        Any client identifier; encoded as UTF-8.

    Returns
    -------
    bytes
        32 bytes.
    """
    k = _check_secret(key, "key", "client_secret")
    if not isinstance(client_id, str):
        msg = f"The 'client_id' parameter of client_secret must be a str. Got a {type(client_id).__name__} instead."
        raise InvalidParameterError(msg)
    try:
        data = client_id.encode("utf-8")
    except UnicodeEncodeError:
        msg = (f"The 'client_id' parameter of client_secret must be a str encodable as UTF-8. "
               f"Got {utf8_problem(client_id)} instead.")
        raise InvalidParameterError(msg) from None
    return hmac.digest(k, _CLIENT_LABEL + data, "sha256")


def client_secrets(key: bytes, client_ids: Sequence[str], owner: str) -> tuple[list[int], list[bytes]]:
    """Each row's distinct-client index and each distinct client's :func:`client_secret`, in first-seen order.

    The key's HMAC states are computed once and copied per client (the fast path of
    :func:`encode_clients` and of the discovery client's batch).
    """
    secret_of = keyed_hmac_sha256(_check_secret(key, "key", owner), _CLIENT_LABEL)  # client_secret of UTF-8 ids
    index: dict[str, int] = {}
    rows = [index.setdefault(cid, len(index)) for cid in client_ids]
    for cid in index:
        if not isinstance(cid, str):
            msg = (f"The 'client_ids' parameter of {owner} must hold str. "
                   f"Got a {type(cid).__name__} at index {rows.index(index[cid])}.")
            raise InvalidParameterError(msg)

    # RFC 2104 over hashlib's keyed states (rappor.client._hmac): 0.65 us a client against
    # 1.16 us for the standard library's HMAC state copied per client (65,536 distinct
    # clients, 2 shared cores, best of 5); tested equal to hmac.digest.
    try:
        return rows, list(map(secret_of, [cid.encode("utf-8") for cid in index]))
    except UnicodeEncodeError:
        raise_not_utf8(client_ids, "client_ids", owner)
        raise


def generate_key() -> bytes:
    """A new 32-byte key from the operating system's CSPRNG (:func:`os.urandom`)."""
    return os.urandom(32)
