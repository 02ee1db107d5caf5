"""The RAPPOR randomizer core: thresholds, permanent and instantaneous responses, and debiasing.

This module owns the randomizer's rules, in one place; it never draws randomness
itself.  Its callers supply the coins and keep only the job of making them:

* the secure client (:mod:`rappor.client._derivations`, :mod:`rappor.analysis.discovery`): keyed
  SHAKE-256 words for the PRR, :func:`os.urandom` words for the IRR;
* the simulator (:mod:`rappor.simulation`): numpy Generator words, 64 bits packed per
  ``uint64`` word;
* the classic mechanisms (:mod:`rappor.privacy`), google/rappor's PRR
  (:mod:`rappor.collect`) and the privacy audit (:mod:`rappor.privacy`): boolean coins.

Randomizer (Erlingsson, Pihur and Korolova 2014, arXiv:1407.6981, Section 3)
---------------------------------------------------------------------------
Permanent randomized response (PRR), step 2
    each Bloom bit is *replaced* with probability ``f`` by a fair *coin*, otherwise
    kept: ``PRR = (B & ~replace) | (coin & replace)`` (google/rappor ``get_prr_masks``).
    With one uniform 32-bit word ``u`` per bit and ``t = min(round(f 2**31), 2**31)``
    (:func:`prr_threshold`): ``u < t`` gives 1, ``t <= u < 2t`` gives 0, otherwise the
    Bloom bit is kept, i.e. ``replace = u < 2t`` and ``coin = u < t``.
Instantaneous randomized response (IRR), step 3
    each bit is 1 with probability ``q`` where the PRR is 1 and ``p`` where it is 0:
    ``IRR = (ones_if_0 & ~PRR) | (ones_if_1 & PRR)``.  With one uniform 32-bit word
    ``v`` per bit: ``ones_if_0 = v < round(p 2**32)``, ``ones_if_1 = v < round(q 2**32)``
    (:func:`irr_thresholds`).

The two bit-algebra selections, :func:`permanent_response` and
:func:`instantaneous_response`, work alike on boolean arrays, 0/1 integer arrays and
packed words (64 bits per ``uint64``), so every randomizer of the package shares them.

Per-bit channel and its inversion (Section 4; google/rappor ``decode.R``)
------------------------------------------------------------------------
A report bit is 1 with probability ``p11 = q (1 - f/2) + p f/2`` where the Bloom bit is
1 and ``p01 = p (1 - f/2) + q f/2`` where it is 0 (:func:`rappor.params.report_probabilities`).  So
``E[rate] = p01 + (p11 - p01) x`` for the share ``x`` of set Bloom bits, inverted by
:func:`debias` with the binomial variance of :func:`debiased_variance`.  Warner's
randomized response, k-ary randomized response and unary encodings are the same
affine channel with other ``p01`` and slope (:mod:`rappor.privacy`).
"""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

__all__ = [
    "WORD_SPAN",
    "debias",
    "debiased_variance",
    "instantaneous_response",
    "instantaneous_response_from_words",
    "irr_thresholds",
    "permanent_response",
    "permanent_response_from_indices",
    "permanent_response_from_words",
    "prr_threshold",
]

#: Number of values of one uniform random word (32 bits): thresholds have resolution ``1 / WORD_SPAN``.
WORD_SPAN = 2**32

_Bits = TypeVar("_Bits", bound=np.ndarray[Any, Any])


# --------------------------------------------------------------------------- thresholds


def prr_threshold(prob_f: float) -> int:
    """``t = min(round(f 2**31), 2**31)``: a 32-bit word ``u < t`` sets the PRR bit, ``t <= u < 2t`` clears it.

    So a Bloom bit is replaced with probability ``2t / 2**32`` (``f`` to ``2**-31``), by 1
    or 0 with probability ``t / 2**32`` each.  At ``f = 1``, ``2t = 2**32`` covers every
    word.  ``round`` is Python's (half to even) on the exact product (``docs/client.md``).
    """
    return min(round(prob_f * 2**31), 2**31)


def irr_thresholds(prob_p: float, prob_q: float) -> tuple[int, int]:
    """``(round(p 2**32), round(q 2**32))``: a 32-bit word below the first (second) reports 1 where the PRR is 0 (1)."""
    return round(prob_p * WORD_SPAN), round(prob_q * WORD_SPAN)


# --------------------------------------------------------------------------- the two responses


def permanent_response(bloom: _Bits, replace: _Bits, coin: _Bits) -> _Bits:
    """``(bloom & ~replace) | (coin & replace)``: each bit replaced by its coin where ``replace`` is set.

    Parameters
    ----------
    bloom, replace, coin : ndarray
        Bloom bits, the replacement mask (each bit set with probability ``f``) and fair
        coins, all boolean, all 0/1 integers, or all packed words of the same shape.

    Returns
    -------
    ndarray
        The permanent randomized response, of the inputs' kind.

    Notes
    -----
    RAPPOR step 2 (Erlingsson, Pihur and Korolova 2014, Sec. 3); google/rappor
    ``Encoder._internal_encode_bits``.  On 0/1 integers ``~`` also sets the high bits
    of each element, which the ``&`` with a 0/1 operand clears again.
    """
    out: _Bits = (bloom & ~replace) | (coin & replace)
    return out


def instantaneous_response(prr: _Bits, ones_if_clear: _Bits, ones_if_set: _Bits) -> _Bits:
    """``(ones_if_clear & ~prr) | (ones_if_set & prr)``: the IRR from the PRR and two Bernoulli masks.

    Parameters
    ----------
    prr : ndarray
        The permanent response (boolean, 0/1 integers or packed words).
    ones_if_clear, ones_if_set : ndarray
        Bits set with probability ``p`` and ``q`` respectively, of the same kind and shape.

    Notes
    -----
    RAPPOR step 3 (Erlingsson, Pihur and Korolova 2014, Sec. 3); google/rappor
    ``Encoder._internal_encode_bits``.
    """
    out: _Bits = (ones_if_clear & ~prr) | (ones_if_set & prr)
    return out


def permanent_response_from_words(bloom: npt.NDArray[np.integer[Any]], words: npt.NDArray[np.uint32],
                                  prob_f: float) -> npt.NDArray[np.uint8]:
    """The PRR of 0/1 Bloom bits from one uniform 32-bit word per bit (the client's rule).

    ``u < t`` gives 1, ``t <= u < 2t`` gives 0, otherwise the Bloom bit (``t`` of
    :func:`prr_threshold`): :func:`permanent_response` with ``replace = u < 2t`` and
    ``coin = u < t``.

    Returns
    -------
    ndarray of uint8 (0/1), the shape of ``bloom``
    """
    t = prr_threshold(prob_f)
    # Python-int thresholds compare exactly with uint32 (2t = 2**32 at f = 1 is above every word).
    prr = permanent_response(bloom.astype(bool), words < 2 * t, words < t)
    return prr.view(np.uint8)


def permanent_response_from_indices(indices: npt.NDArray[np.int64], words: npt.NDArray[np.uint32],
                                    prob_f: float) -> npt.NDArray[np.uint8]:
    """The PRR of Bloom filters given by their bit ``indices`` (``(n, h)``), from one word per bit.

    :func:`permanent_response_from_words` without the Bloom matrix: a clear bit is ``u < t``
    and a set bit is ``u < t or u >= 2t`` (``t`` of :func:`prr_threshold`), so one comparison
    covers the ``k - h`` clear bits of a row (the discovery client's batch).
    """
    t = prr_threshold(prob_f)
    prr = words < t
    rows = np.arange(words.shape[0])[:, np.newaxis]
    chosen = words[rows, indices]
    # Python-int thresholds compare exactly with uint32 (2t = 2**32 at f = 1 is above every word).
    prr[rows, indices] = (chosen < t) | (chosen >= 2 * t)
    return prr.view(np.uint8)


def instantaneous_response_from_words(prr: npt.NDArray[np.integer[Any]], words: npt.NDArray[np.uint32],
                                      prob_p: float, prob_q: float) -> npt.NDArray[np.uint8]:
    """The IRR of 0/1 PRR bits from one fresh uniform 32-bit word per bit (:func:`irr_thresholds`).

    Returns
    -------
    ndarray of uint8 (0/1), the shape of ``prr``
    """
    tp, tq = irr_thresholds(prob_p, prob_q)
    irr = instantaneous_response(prr.astype(bool), words < tp, words < tq)
    return irr.view(np.uint8)


# --------------------------------------------------------------------------- the per-bit channel


def debias(observed: Any, p01: Any, gap: float) -> Any:
    """Invert ``E[observed] = p01 + gap * x``: the unbiased ``x = (observed - p01) / gap``.

    Parameters
    ----------
    observed : float or ndarray
        A rate of reported ones (or a count, with ``p01`` multiplied by the reports).
    p01 : float or ndarray
        Its expectation when nothing is set: P(report 1 | bit 0), times the reports for a count.
    gap : float
        The slope ``p11 - p01``.

    Notes
    -----
    Erlingsson, Pihur and Korolova (2014), Sec. 4: ``t = (c - p01 N) / (p11 - p01)``
    estimates the clients whose Bloom bit is set (google/rappor ``decode.R``,
    ``EstimateBloomCounts``); Warner (1965), eq. 4, for randomized response.
    """
    return (observed - p01) / gap


def debiased_variance(rate: Any, n: Any, gap: float) -> Any:
    """``rate (1 - rate) / (gap**2 n)``: the variance of :func:`debias` of a rate of ``n`` reports.

    The binomial variance of the observed rate divided by the squared slope (Warner
    1965, eq. 5; google/rappor ``decode.R``); pass a clamped or smoothed estimate of
    the rate so that it stays in ``[0, 1]``.
    """
    return rate * (1.0 - rate) / gap**2 / n
