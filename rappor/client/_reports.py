"""Reports: one client's (cohort, IRR bits) as :class:`Report`, and batches of them packed as :class:`ReportBatch`.

Only the cohort and the instantaneous randomized response (IRR) ever leave a device.
Bit order is defined in :mod:`rappor._util.bits` (google/rappor bit strings: character 0 is
bit ``k - 1``; packed words: bit ``j`` is ``(w[j // 64] >> (j % 64)) & 1``).  Report
files are read and written by :mod:`rappor.formats` (CSV) and
:mod:`rappor.formats`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .._util.bits import bits_to_bitstrings, bitstrings_to_bits, pack_bits, pack_bytes, unpack_bits, unpack_bytes
from .._util.validation import check_cohorts
from ..exceptions import InvalidParameterError
from ..params import Params

__all__ = ["Report", "ReportBatch"]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Report:
    """One report as it leaves a device: the client's cohort and its IRR bits.

    Parameters
    ----------
    cohort : int
        The client's cohort, ``>= 0``.
    bits : array-like of 0/1, shape (k,)
        The instantaneous randomized response; ``bits[j]`` is bit ``j``.  Stored as a
        read-only uint8 array.
    """

    cohort: int
    bits: npt.NDArray[np.uint8]

    def __post_init__(self) -> None:
        if isinstance(self.cohort, bool) or not isinstance(self.cohort, (int, np.integer)) or self.cohort < 0:
            msg = f"The 'cohort' parameter of Report must be an int >= 0. Got {self.cohort!r} instead."
            raise InvalidParameterError(msg)
        bits = np.asarray(self.bits)
        # Numbers only: numpy < 2 compares a string array with 0 as a scalar (with a warning).
        if (bits.dtype.kind not in "biuf" or bits.ndim != 1 or bits.size == 0
                or not ((bits == 0) | (bits == 1)).all()):
            msg = "The 'bits' parameter of Report must be a non-empty 1-d array of 0 and 1."
            raise InvalidParameterError(msg)
        bits = bits.astype(np.uint8, copy=True)
        bits.flags.writeable = False
        object.__setattr__(self, "cohort", int(self.cohort))
        object.__setattr__(self, "bits", bits)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Report):
            return NotImplemented
        return self.cohort == other.cohort and np.array_equal(self.bits, other.bits)

    def __hash__(self) -> int:
        return hash((self.cohort, self.bits.tobytes()))

    @property
    def num_bloombits(self) -> int:
        """``k``, the number of bits."""
        return int(self.bits.shape[0])

    def to_bitstring(self) -> str:
        """google/rappor bit string: character 0 is bit ``k - 1``."""
        return bits_to_bitstrings(self.bits)[0]

    @classmethod
    def from_bitstring(cls, cohort: int, text: str) -> Report:
        """Inverse of :meth:`to_bitstring`."""
        try:
            bits = bitstrings_to_bits([text], len(text))[0]
        except ValueError as exc:
            raise InvalidParameterError(f"Invalid report bit string: {exc}") from None
        return cls(cohort=cohort, bits=bits)

    def to_bytes(self) -> bytes:
        """Packed form: ``ceil(k / 8)`` bytes, bit ``j`` is ``(b[j // 8] >> (j % 8)) & 1``."""
        return pack_bytes(self.bits)

    @classmethod
    def from_bytes(cls, cohort: int, data: bytes, num_bloombits: int) -> Report:
        """Inverse of :meth:`to_bytes`."""
        try:
            bits = unpack_bytes(data, num_bloombits)
        except ValueError as exc:
            raise InvalidParameterError(f"Invalid packed report: {exc}") from None
        return cls(cohort=cohort, bits=bits)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class ReportBatch:
    """Many reports in packed form.

    Parameters
    ----------
    params : Params
        The parameters the reports were made with.
    cohorts : array-like of int, shape (n,)
        Cohort of each report, in ``[0, num_cohorts)``.
    words : array-like of uint64, shape (n, ceil(k / 64))
        IRR bits packed little-endian (bit ``j`` in word ``j // 64``, position ``j % 64``);
        bits at or above ``k`` must be 0.

    Attributes are read-only arrays (``cohorts`` int64, ``words`` uint64).
    """

    params: Params
    cohorts: npt.NDArray[np.int64]
    words: npt.NDArray[np.uint64]

    def __post_init__(self) -> None:
        k, m = self.params.num_bloombits, self.params.num_cohorts
        cohorts = np.asarray(self.cohorts)
        if cohorts.ndim != 1 or (cohorts.size and not np.issubdtype(cohorts.dtype, np.integer)):
            msg = f"The 'cohorts' parameter of ReportBatch must be a 1-d integer array. Got dtype {cohorts.dtype} and shape {cohorts.shape} instead."
            raise InvalidParameterError(msg)
        cohorts = check_cohorts(cohorts.astype(np.int64, copy=True), m, "ReportBatch")
        words = np.asarray(self.words)
        w = self.params.num_words
        if words.ndim != 2 or words.shape != (cohorts.shape[0], w):
            msg = f"The 'words' parameter of ReportBatch must have shape ({cohorts.shape[0]}, {w}). Got {words.shape} instead."
            raise InvalidParameterError(msg)
        words = words.astype(np.uint64, copy=True)
        if k % 64 and words.size:
            high = ~np.uint64((1 << (k % 64)) - 1)
            if (words[:, -1] & high).any():
                msg = f"The 'words' parameter of ReportBatch has bits set at or above bit {k} (k = {k})."
                raise InvalidParameterError(msg)
        cohorts.flags.writeable = False
        words.flags.writeable = False
        object.__setattr__(self, "cohorts", cohorts)
        object.__setattr__(self, "words", words)

    def __len__(self) -> int:
        return int(self.cohorts.shape[0])

    @classmethod
    def from_bits(cls, params: Params, cohorts: npt.ArrayLike, bits: npt.ArrayLike) -> ReportBatch:
        """Build from an ``(n, k)`` 0/1 array (column ``j`` = bit ``j``)."""
        arr = np.asarray(bits)
        if arr.ndim != 2 or arr.shape[1] != params.num_bloombits:
            msg = f"The 'bits' parameter must have shape (n, {params.num_bloombits}). Got {arr.shape} instead."
            raise InvalidParameterError(msg)
        if arr.size and not np.isin(arr, (0, 1)).all():
            raise InvalidParameterError("The 'bits' parameter must hold only 0 and 1.")
        return cls(params=params, cohorts=np.asarray(cohorts), words=pack_bits(arr))

    @classmethod
    def from_bitstrings(cls, params: Params, cohorts: npt.ArrayLike, strings: Sequence[str]) -> ReportBatch:
        """Build from google/rappor bit strings (character 0 = bit ``k - 1``)."""
        return cls.from_bits(params, cohorts, bitstrings_to_bits(strings, params.num_bloombits))

    def bits(self) -> npt.NDArray[np.uint8]:
        """The reports as an ``(n, k)`` uint8 0/1 array (column ``j`` = bit ``j``)."""
        return unpack_bits(self.words, self.params.num_bloombits)

    def bitstrings(self) -> list[str]:
        """The reports as google/rappor bit strings (character 0 = bit ``k - 1``)."""
        return bits_to_bitstrings(self.bits())

    def __repr__(self) -> str:
        return f"ReportBatch(n={len(self)}, params={self.params!r})"

    @classmethod
    def from_reports(cls, params: Params, reports: Sequence[Report]) -> ReportBatch:
        """Stack single reports (each must have ``k`` bits)."""
        k = params.num_bloombits
        bits = np.zeros((len(reports), k), dtype=np.uint8)
        for i, r in enumerate(reports):
            if r.num_bloombits != k:
                msg = f"Report {i} has {r.num_bloombits} bits, expected {k}."
                raise InvalidParameterError(msg)
            bits[i] = r.bits
        return cls.from_bits(params, np.array([r.cohort for r in reports], dtype=np.int64), bits)

    def __getitem__(self, index: int) -> Report:
        bits = unpack_bits(self.words[index], self.params.num_bloombits)
        return Report(cohort=int(self.cohorts[index]), bits=bits)
