"""The RAPPOR client: its secret, cohort and random words, the :class:`Encoder`, and key files.

This module owns where a client's randomness comes from (keyed derivations and the OS
CSPRNG); the rules that turn it into a permanent and an instantaneous response
(thresholds, bit algebra) are :mod:`rappor.client._randomizer`'s.

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
    ``X = SHAKE256(b"rappor/prr/v2" || uint32_be(len(secret)) || secret || uint32_be(c)
    || value)`` (FIPS 202, a keyed sponge used as a PRF), read ``4k`` bytes; bit ``j``
    uses the big-endian uint32 ``u`` at bytes ``4j .. 4j + 3`` of ``X``.  With
    ``t = min(round(f 2**31), 2**31)``: ``u < t`` gives 1, ``t <= u < 2t`` gives 0 and
    otherwise the Bloom bit is kept (:func:`rappor.client.permanent_response_from_words`).
``PRR of one of several variables`` (association analysis; see ``docs/client.md``)
    the same with the label ``b"rappor/prr/v2/var" || uint32_be(len(name)) || utf8(name)``
    in place of ``b"rappor/prr/v2"``; a boolean's value bytes are ``b"TRUE"`` or ``b"FALSE"``.
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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .._util.bits import pack_bits
from .._util.keyfile import MIN_KEY_BYTES
from .._util.memory import check_encode
from .._util.validation import RngLike, check_cohort, check_rng
from ..exceptions import InvalidParameterError
from ._hashing import bloom_bit_indices, bloom_bits_table, utf8_problem, value_bytes
from ._hmac import keyed_hmac_sha256
from ..params import Params, boolean_params
from ._randomizer import (
    WORD_SPAN,
    instantaneous_response_from_words,
    permanent_response_from_words,
)
from ._reports import Report, ReportBatch

__all__ = [
    "MIN_SECRET_BYTES",
    "VARIABLE_PRR_LABEL",
    "EncodeTrace",
    "Encoder",
    "client_secret",
    "derive_cohort",
    "encode_clients",
    "generate_key",
    "prr_uniforms",
    "prr_uniforms_of_variable",
]

#: Shortest accepted client secret or key, in bytes.
MIN_SECRET_BYTES = MIN_KEY_BYTES

_COHORT_LABEL = b"rappor/cohort"
_PRR_LABEL = b"rappor/prr/v2"
#: Label of the PRRs of a named variable (several variables per client); differs from
#: ``_PRR_LABEL || uint32_be(len(secret))`` at byte 14 (``/`` against a length byte < 0x2f).
VARIABLE_PRR_LABEL = b"rappor/prr/v2/var"
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


def _check_params(params: Any, owner: str) -> Params:
    if not isinstance(params, Params):
        msg = f"The 'params' parameter of {owner} must be a Params. Got a {type(params).__name__} instead."
        raise InvalidParameterError(msg)
    return params


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


def _prr_label(variable: str | None) -> bytes:
    """The PRR label of one of several variables: ``VARIABLE_PRR_LABEL || uint32_be(len(name)) || utf8(name)``
    (independent PRRs per variable; ``None`` gives the one-variable label, unchanged)."""
    if variable is None:
        return _PRR_LABEL
    if not isinstance(variable, str) or not variable:
        msg = f"The 'variable' parameter must be a non-empty str or None. Got {variable!r} instead."
        raise InvalidParameterError(msg)
    name = variable.encode("utf-8")
    return VARIABLE_PRR_LABEL + struct.pack(">I", len(name)) + name


def _prr_key_prefix(secret: bytes, label: bytes = _PRR_LABEL) -> bytes:
    """``label || uint32_be(len(secret)) || secret``: the keyed part of the PRR's SHAKE-256 input.

    ``label`` is ``b"rappor/prr/v2"`` for full-string reports; discovery reports use
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


def prr_uniforms(secret: bytes, cohort: int, value: str | bytes, num_bloombits: int) -> npt.NDArray[np.uint32]:
    """The ``k`` uniform 32-bit words that decide the permanent response of ``value``.

    Word ``j`` is the big-endian uint32 at bytes ``4j`` to ``4j + 3`` of the SHAKE-256
    output of ``b"rappor/prr/v2" || uint32_be(len(secret)) || secret ||
    uint32_be(cohort) || value``; ``value`` is UTF-8 for ``str``.  See ``docs/client.md``.

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
    message = _prr_key_prefix(key) + _prr_message(int(cohort), value_bytes(value))
    uniforms: npt.NDArray[np.uint32] = _uniforms_from_stream(
        hashlib.shake_256(message).digest(4 * num_bloombits), 1, num_bloombits)[0]
    return uniforms


def _noise(shape: tuple[int, ...], rng: np.random.Generator | None) -> npt.NDArray[np.uint32]:
    """Uniform uint32 words: from :func:`os.urandom` when ``rng`` is None, else from ``rng``."""
    size = math.prod(shape)
    if rng is None:
        return np.frombuffer(os.urandom(4 * size), dtype="<u4").astype(np.uint32, copy=False).reshape(shape)
    return rng.integers(0, WORD_SPAN, size=shape, dtype=np.uint32)


def _normalize_rng(rng: RngLike) -> np.random.Generator | None:
    return None if rng is None else check_rng(rng)


def _bloom_matrix(indices: npt.NDArray[np.int64], num_bloombits: int) -> npt.NDArray[np.uint8]:
    """``(n, h)`` Bloom bit indices -> ``(n, k)`` 0/1 Bloom filters."""
    n = indices.shape[0]
    bloom = np.zeros((n, num_bloombits), dtype=np.uint8)
    bloom[np.arange(n)[:, np.newaxis], indices] = 1
    return bloom


def _readonly(arr: npt.NDArray[Any]) -> npt.NDArray[Any]:
    arr = np.array(arr, dtype=np.uint8, copy=True)
    arr.flags.writeable = False
    return arr


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class EncodeTrace:
    """The three stages of encoding one value, for tests, debugging and simulation.

    **Only the cohort and** :attr:`irr` **may leave the device.**  The Bloom filter
    reveals the value outright and the PRR is the same for every report of the value,
    so sending either loses the privacy guarantee (google/rappor ``_internal_encode``:
    "The first two values should never be sent over the network").

    Attributes
    ----------
    bloom : ndarray of shape (k,), dtype uint8
        The Bloom filter of the value in the client's cohort.
    prr : ndarray of shape (k,), dtype uint8
        The permanent randomized response (identical on every call).
    irr : ndarray of shape (k,), dtype uint8
        The instantaneous randomized response (fresh on every call).
    """

    bloom: npt.NDArray[np.uint8]
    prr: npt.NDArray[np.uint8]
    irr: npt.NDArray[np.uint8]

    def __post_init__(self) -> None:
        for name in ("bloom", "prr", "irr"):
            object.__setattr__(self, name, _readonly(getattr(self, name)))


class Encoder:
    """A RAPPOR client: turns values into reports that are safe to send.

    Parameters
    ----------
    params : Params
        The collection's parameters.
    secret : bytes
        The client's secret, at least 16 bytes (e.g. ``os.urandom(32)`` kept on the
        device, or :func:`client_secret` of a key and a client id).  It fixes the cohort
        (unless given) and every permanent response; it is never shown.
    cohort : int or None, default=None
        The client's cohort in ``[0, num_cohorts)``; by default derived from the secret
        with :func:`derive_cohort`.
    rng : numpy.random.Generator, int or None, default=None
        Randomness of the instantaneous response.  ``None`` (the default) uses the
        operating system's CSPRNG (:func:`os.urandom`) for every report.  A generator or
        seed uses numpy's generator instead, which is **not** cryptographically secure:
        for simulation and tests only.

    Notes
    -----
    Encoding follows Erlingsson, Pihur and Korolova (2014), arXiv:1407.6981, Section 3:

    1. Bloom filter ``B`` of the value in the cohort (:mod:`rappor.client._hashing`).
    2. Permanent response ``B'``: bit ``j`` is 1 with probability ``f/2``, 0 with
       probability ``f/2``, and ``B_j`` otherwise.  The coin is the keyed PRF of
       :func:`prr_uniforms`, so it is memoized without storage; thresholds have 32-bit
       resolution (google/rappor uses 1/128).
    3. Instantaneous response ``S``: bit ``j`` is 1 with probability ``q`` if ``B'_j = 1``
       and ``p`` if ``B'_j = 0``, fresh for every report.

    Hence P(S_j = 1 | B_j = 1) = ``params.p11`` and P(S_j = 1 | B_j = 0) = ``params.p01``.
    The derivations are specified byte by byte in ``docs/client.md``.

    Examples
    --------
    >>> from rappor import Params
    >>> params = Params(num_bloombits=16, num_hashes=2, num_cohorts=8,
    ...                 prob_p=0.5, prob_q=0.75, prob_f=0.5)
    >>> enc = Encoder(params, b"0123456789abcdef", rng=0)
    >>> enc
    Encoder(params=Params(num_bloombits=16, ...), cohort=..., secret=<hidden>, rng=numpy)
    >>> report = enc.encode("v1")
    >>> report.num_bloombits
    16
    """

    __slots__ = ("_params", "_cohort", "_prr_xof", "_rng", "_variable_xofs")

    def __init__(self, params: Params, secret: bytes, *, cohort: int | None = None, rng: RngLike = None) -> None:
        self._params = _check_params(params, "Encoder")
        key = _check_secret(secret, "secret", "Encoder")
        # The PRR's SHAKE-256 with the key already absorbed; copied for each value.
        self._prr_xof = hashlib.shake_256(_prr_key_prefix(key))
        self._variable_xofs = _VariablePrrs(key)
        m = params.num_cohorts
        if cohort is None:
            self._cohort = _cohort_of_key(key, m)
        else:
            self._cohort = check_cohort(cohort, m, "Encoder")
        self._rng = _normalize_rng(rng)

    def __repr__(self) -> str:
        source = "os.urandom" if self._rng is None else "numpy"
        return f"Encoder(params={self._params!r}, cohort={self._cohort}, secret=<hidden>, rng={source})"

    def __reduce__(self) -> Any:
        msg = "Encoder objects hold a secret and cannot be pickled."
        raise TypeError(msg)

    @property
    def params(self) -> Params:
        """The collection's parameters."""
        return self._params

    @property
    def cohort(self) -> int:
        """The client's cohort (fixed)."""
        return self._cohort

    def _prr(self, values: Sequence[str | bytes]) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.uint8]]:
        """Bloom filters and PRRs of ``values``, each of shape ``(n, k)``."""
        k = self._params.num_bloombits
        data = [value_bytes(v) for v in values]
        n = len(data)
        bloom = _bloom_matrix(_bloom_indices_of_rows(data, np.full(n, self._cohort, dtype=np.int64), self._params), k)
        chunks = []
        for d in data:
            xof = self._prr_xof.copy()
            xof.update(_prr_message(self._cohort, d))
            chunks.append(xof.digest(4 * k))
        u = _uniforms_from_stream(b"".join(chunks), n, k)
        return bloom, permanent_response_from_words(bloom, u, self._params.prob_f)

    def _irr(self, prr: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
        return instantaneous_response_from_words(prr, _noise(prr.shape, self._rng), self._params.prob_p,
                                                 self._params.prob_q)

    def trace(self, value: str | bytes) -> EncodeTrace:
        """Encode ``value`` and return every stage: Bloom filter, PRR and IRR.

        For tests and debugging: only the cohort and the IRR may leave the device.
        """
        bloom, prr = self._prr([value])
        return EncodeTrace(bloom=bloom[0], prr=prr[0], irr=self._irr(prr)[0])

    def encode(self, value: str | bytes) -> Report:
        """One fresh report of ``value`` (``str`` is hashed as UTF-8, ``bytes`` as given).

        Returns
        -------
        Report
            The cohort and the IRR bits: the only things to send.
        """
        _, prr = self._prr([value])
        return Report(cohort=self._cohort, bits=self._irr(prr)[0])

    def encode_batch(self, values: Iterable[str | bytes]) -> ReportBatch:
        """One fresh report per element of ``values`` (repeats give independent IRRs).

        Returns
        -------
        ReportBatch
            ``len(values)`` reports, all in this client's cohort.
        """
        items = list(values)
        _, prr = self._prr(items)
        irr = self._irr(prr)
        cohorts = np.full(len(items), self._cohort, dtype=np.int64)
        return ReportBatch(params=self._params, cohorts=cohorts, words=pack_bits(irr))


    def encode_variables(self, values: Mapping[str, str | bytes | bool]) -> dict[str, Report]:
        """One fresh report of each variable's value: the client's reports for an association analysis.

        Parameters
        ----------
        values : mapping of str to str, bytes or bool
            Variable name -> value.  A ``bool`` is a boolean variable, reported as a
            one-bit Bloom filter holding the value (``params`` with ``k = 1``, ``h = 1``,
            as google/rappor); ``str``/``bytes`` is a string variable.

        Returns
        -------
        dict of str to Report
            Same keys; all reports in the client's cohort.

        Notes
        -----
        Every variable gets its own permanent response, keyed by the client's secret and
        domain-separated by the variable's name (``docs/client.md``), so the PRRs of two
        variables are independent even for equal values; the privacy costs add
        (:func:`rappor.analysis.association.multi_variable_privacy`).
        """
        out: dict[str, Report] = {}
        for name, value in values.items():
            boolean = isinstance(value, (bool, np.bool_))
            params = boolean_params(self._params) if boolean else self._params
            k = params.num_bloombits
            if boolean:
                data = _TRUE if value else _FALSE
                bloom = np.array([[1 if value else 0]], dtype=np.uint8)
            else:
                data = value_bytes(value)  # type: ignore[arg-type]
                idx = _bloom_indices_of_rows([data], np.array([self._cohort], dtype=np.int64), params)
                bloom = _bloom_matrix(idx, k)
            u = _uniforms_from_stream(self._variable_xofs.digest(name, self._cohort, data, 4 * k), 1, k)
            prr = permanent_response_from_words(bloom, u, params.prob_f)
            out[name] = Report(cohort=self._cohort, bits=self._irr(prr)[0])
        return out


# ---------------------------------------------------------------- several variables per client
# (association analysis: rappor.analysis.association; the PRR's label names the variable)

_TRUE, _FALSE = b"TRUE", b"FALSE"


class _VariablePrrs:
    """SHAKE-256 states with ``secret`` and one variable's label absorbed, made on first use."""

    __slots__ = ("_secret", "_states")

    def __init__(self, secret: bytes) -> None:
        self._secret = secret
        self._states: dict[str, Any] = {}

    def digest(self, variable: str, cohort: int, data: bytes, size: int) -> bytes:
        state = self._states.get(variable)
        if state is None:
            state = self._states[variable] = hashlib.shake_256(_prr_key_prefix(self._secret, _prr_label(variable)))
        xof = state.copy()
        xof.update(_prr_message(cohort, data))
        return xof.digest(size)

    def __repr__(self) -> str:
        return "_VariablePrrs(<secret hidden>)"


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


def prr_uniforms_of_variable(secret: bytes, variable: str, cohort: int, value: str | bytes | bool,
                             num_bloombits: int) -> npt.NDArray[np.uint32]:
    """:func:`prr_uniforms` of one of several variables (label ``b"rappor/prr/v2/var"`` and the name).

    A boolean value's bytes are ``b"TRUE"`` or ``b"FALSE"``.
    """
    key = _check_secret(secret, "secret", "prr_uniforms_of_variable")
    data = (_TRUE if value else _FALSE) if isinstance(value, (bool, np.bool_)) else value_bytes(value)
    message = _prr_key_prefix(key, _prr_label(variable)) + _prr_message(int(cohort), data)
    uniforms: npt.NDArray[np.uint32] = _uniforms_from_stream(
        hashlib.shake_256(message).digest(4 * num_bloombits), 1, num_bloombits)[0]
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
        _raise_not_utf8(client_ids, "client_ids", owner)
        raise


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
    head = _prr_label(variable) + pack(32)  # _prr_key_prefix of a 32-byte secret is head || secret
    prefixes = [head + s + pack(c) for s, c in zip(secrets, client_cohorts)]
    if boolean:
        datas = _boolean_values(values, params)
    else:
        try:
            datas = [v.encode("utf-8") if type(v) is str else value_bytes(v) for v in values]
        except (UnicodeEncodeError, InvalidParameterError):
            _raise_not_utf8(values, "values")
            raise
    shake_256, out_bytes = hashlib.shake_256, 4 * k
    stream = b"".join([shake_256(prefixes[r] + d).digest(out_bytes) for r, d in zip(rows, datas)])
    cohorts = np.array(client_cohorts, dtype=np.int64)[np.array(rows, dtype=np.intp)]
    if boolean:
        bloom = np.array([[d == _TRUE] for d in datas], dtype=np.uint8).reshape(n, 1)
    else:
        bloom = _bloom_matrix(_bloom_indices_of_rows(datas, cohorts, params), k)
    prr = permanent_response_from_words(bloom, _uniforms_from_stream(stream, n, k), params.prob_f)
    irr = instantaneous_response_from_words(prr, _noise(prr.shape, generator), params.prob_p, params.prob_q)
    return ReportBatch(params=params, cohorts=cohorts, words=pack_bits(irr))


def _raise_not_utf8(items: Sequence[Any], name: str, owner: str = "encode_clients") -> None:
    """Raise the error of the first str in ``items`` that UTF-8 cannot encode (if any)."""
    for position, item in enumerate(items):
        problem = utf8_problem(item) if isinstance(item, str) else ""
        if problem:
            msg = (f"The {name!r} parameter of {owner} must hold str encodable as UTF-8. "
                   f"Got {name}[{position}], {problem}, instead.")
            raise InvalidParameterError(msg)


def _bloom_indices_of_rows(datas: list[bytes], cohorts: npt.NDArray[np.int64], params: Params) -> npt.NDArray[np.int64]:
    """Bloom bit indices, shape ``(n, h)``, of ``datas[i]`` in cohort ``cohorts[i]``.

    When the distinct values times the cohorts are few compared with the rows, one
    vectorized :func:`~rappor.client.bloom_bits_table` call hashes every pair;
    otherwise each distinct ``(value, cohort)`` pair is hashed once.
    """
    k, h, m = params.num_bloombits, params.num_hashes, params.num_cohorts
    n = len(datas)
    unique: dict[bytes, int] = {}
    rows = np.array([unique.setdefault(d, len(unique)) for d in datas], dtype=np.int64)
    if n and len(unique) * m <= 4 * n:
        table = bloom_bits_table(list(unique), params)
        return table[rows, cohorts].astype(np.int64)
    cache: dict[tuple[bytes, int], tuple[int, ...]] = {}
    out: list[tuple[int, ...]] = []
    for key in zip(datas, cohorts.tolist()):
        bits = cache.get(key)
        if bits is None:
            bits = cache[key] = bloom_bit_indices(key[0], key[1], num_bloombits=k, num_hashes=h)
        out.append(bits)
    return np.array(out, dtype=np.int64).reshape(n, h)


def generate_key() -> bytes:
    """A new 32-byte key from the operating system's CSPRNG (:func:`os.urandom`)."""
    return os.urandom(32)
