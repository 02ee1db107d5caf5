"""The discovery client: one report of a prefix fragment, in a slot fixed by the client secret.

Specification (additions to ``docs/client.md``; the full-string report is unchanged):

``slot``
    ``floor(U64 * L / 2**64)`` with ``U64`` the first 8 bytes, big-endian, of
    ``HMAC-SHA256(secret, b"rappor/discovery/slot")`` (``L = spec.levels``).
``role``
    with the client split (``split="clients"``), the client sends a discovery report
    instead of its full-string report iff ``U64 < round(share * 2**64)`` for ``U64`` the
    first 8 bytes of ``HMAC-SHA256(secret, b"rappor/discovery/role")``.
``cohort``
    :func:`rappor.client.derive_cohort` of the secret over the slot's ``m`` cohorts; the
    report carries the wire cohort ``slot * m + cohort``.
``Bloom filter``
    of the fragment (:meth:`DiscoverySpec.bloom_bits`, the split head/tail hash).
``PRR``
    as the full-string PRR (``docs/client.md``) with the label
    ``b"rappor/prr/discovery/v1"`` instead of ``b"rappor/prr/v2"`` and the fragment bytes
    ``marker || prefix`` (:meth:`DiscoverySpec.fragment`) as the value, with the wire
    cohort.  The different label makes the discovery PRR independent of every
    full-string PRR of the same client, which the privacy accounting assumes; full-string
    PRRs are unchanged (``data/golden`` still passes).
``IRR``
    as for full strings, from the operating system's CSPRNG by default.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from ..._util.validation import RngLike, check_probability
from ...client._encoder import (
    _check_secret,
    _cohort_of_key,
    _keyed_index,
    _keyed_word,
    _noise,
    _normalize_rng,
    _prr_key_prefix,
    _prr_message,
    _uniforms_from_stream,
)
from ...exceptions import InvalidParameterError
from ...client._hashing import value_bytes
from ...client._randomizer import (
    instantaneous_response_from_words,
    permanent_response_from_words,
)
from ...client._reports import Report
from ._spec import DiscoverySpec

__all__ = ["DiscoveryEncoder", "discovery_role", "discovery_slot"]

_SLOT_LABEL = b"rappor/discovery/slot"
_ROLE_LABEL = b"rappor/discovery/role"
_DISCOVERY_PRR_LABEL = b"rappor/prr/discovery/v1"


def discovery_slot(secret: bytes, levels: int) -> int:
    """The slot of the client holding ``secret``: uniform over ``[0, levels)``, fixed for its lifetime."""
    if isinstance(levels, bool) or not isinstance(levels, (int, np.integer)) or levels < 1:
        raise InvalidParameterError(f"The 'levels' parameter of discovery_slot must be an int >= 1. Got {levels!r}.")
    return _keyed_index(_check_secret(secret, "secret", "discovery_slot"), _SLOT_LABEL, int(levels))


def discovery_role(secret: bytes, share: float) -> bool:
    """Whether the client sends a discovery report (instead of its full-string one) under a client split."""
    s = check_probability(share, "share", "discovery_role")
    return _keyed_word(_check_secret(secret, "secret", "discovery_role"), _ROLE_LABEL) < round(s * 2**64)


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
        self._slot = discovery_slot(key, spec.levels)
        self._cohort = _cohort_of_key(key, spec.params.num_cohorts)
        self._prr_xof = hashlib.shake_256(_prr_key_prefix(key, _DISCOVERY_PRR_LABEL))
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
