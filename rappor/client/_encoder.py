"""The RAPPOR client as one device runs it: the :class:`Encoder` and its :class:`EncodeTrace`.

An :class:`Encoder` holds one client's secret: from it come the client's cohort and the
permanent response of each value (:mod:`rappor.client._derivations`, specified in
``docs/client.md``), and from the OS CSPRNG a fresh instantaneous response for every
report (:mod:`rappor.client._randomizer`'s rules).  Many clients under one key are
encoded at once by :func:`rappor.client.encode_clients`.  The IRR's randomness is the
OS CSPRNG unless ``rng`` is given, for simulation and tests only (the Security section of
:mod:`rappor.client._derivations`); secrets are never shown in a repr or a message.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .._util.bits import pack_bits
from .._util.validation import RngLike, check_cohort
from ..params import Params, boolean_params
from ._derivations import (
    _FALSE,
    _TRUE,
    _check_params,
    _check_secret,
    _cohort_of_key,
    _noise,
    _normalize_rng,
    _prr_key_prefix,
    _prr_label,
    _prr_message,
    _uniforms_from_stream,
    _VariablePrrs,
)
from ._hashing import bloom_indices_of_rows, bloom_matrix, value_bytes
from ._randomizer import instantaneous_response_from_words, permanent_response_from_words
from ._reports import Report, ReportBatch

__all__ = ["EncodeTrace", "Encoder"]


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
        self._prr_xof = hashlib.shake_256(_prr_key_prefix(key, _prr_label(None, self._params)))
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
        bloom = bloom_matrix(bloom_indices_of_rows(data, np.full(n, self._cohort, dtype=np.int64), self._params), k)
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
                idx = bloom_indices_of_rows([data], np.array([self._cohort], dtype=np.int64), params)
                bloom = bloom_matrix(idx, k)
            u = _uniforms_from_stream(self._variable_xofs.digest(name, params, self._cohort, data, 4 * k), 1, k)
            prr = permanent_response_from_words(bloom, u, params.prob_f)
            out[name] = Report(cohort=self._cohort, bits=self._irr(prr)[0])
        return out
