"""Discover, then decode: the values found in the discovery reports decoded beside the candidates.

:func:`discover_and_decode` is what ``rappor decode --discover`` runs: the search
(:func:`~rappor.analysis.discovery.discover`) on the discovery counts, its significant
values that are not among the candidates appended to the candidate map, and the full-string
counts decoded against the whole list (and, for comparison, against the candidates alone).
The unexplained mass of the decode should fall to about the share of the values too rare
for the discovery to confirm (:attr:`DiscoverDecode.detection_floor`; ``docs/discovery.md``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from ..._util.terminal import terminal_text
from ...collect._aggregate import Aggregate
from ...collect._design import CandidateMap, hash_candidates
from ...exceptions import InvalidParameterError
from ..decoder import DecodeResult, Decoder
from ._search import DiscoveryResult, discover
from ._spec import DiscoverySpec

__all__ = ["DiscoverDecode", "discover_and_decode", "listed_strings"]


def listed_strings(result: DiscoveryResult) -> list[str]:
    """The significant values of ``result`` a one-per-line list shows as they are (found.txt): no line
    break, not blank, and no control or bidirectional character (a list is read with ``cat``;
    :func:`rappor.formats.write_found` holds every value, and :func:`discover_and_decode` decodes them all)."""
    return [s for s in result.candidates() if s.strip() and "\n" not in s and terminal_text(s) == s]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class DiscoverDecode:
    """What :func:`discover_and_decode` returns.

    Attributes
    ----------
    result : DecodeResult
        The full-string counts decoded against :attr:`candidate_map`.
    without : DecodeResult or None
        The same counts decoded against the candidates alone: None when no candidates
        were given or the discovery added none.
    found : DiscoveryResult
        The search's result (``rappor decode --found`` writes it).
    new_strings : tuple of str
        The significant values that were not among the candidates, in the order appended.
    candidate_map : CandidateMap
        The candidates followed by :attr:`new_strings`.
    """

    result: DecodeResult
    without: DecodeResult | None
    found: DiscoveryResult
    new_strings: tuple[str, ...]
    candidate_map: CandidateMap

    @property
    def detection_floor(self) -> float:
        """Smallest share of the discovery reports a value confirmed by the last slot alone can have.

        ``z_significant`` (the Bonferroni cutoff as a normal quantile) times the null
        standard error of the confirmation slot's share: values rarer than this stay in the
        unexplained mass.  NaN when the search recorded no slot.
        """
        slots = [s for s in self.found.diagnostics.get("slots", []) if "null_std_error" in s]
        if not slots:
            return math.nan
        return float(self.found.diagnostics["z_significant"]) * float(slots[-1]["null_std_error"])


def discover_and_decode(aggregate: Aggregate, candidates: CandidateMap | None, discovery: Aggregate,
                        spec: DiscoverySpec, *, decoder: Decoder | None = None, beam: int = 1000,
                        significance_level: float = 0.05, max_false: int = 0,
                        progress: Callable[[int], None] | None = None) -> DiscoverDecode:
    """Find the frequent values of ``discovery`` and decode ``aggregate`` against them and ``candidates``.

    Parameters
    ----------
    aggregate : Aggregate
        The full-string reports' counts.
    candidates : CandidateMap or None
        The candidate list (hashed under ``aggregate.params``), or None to decode the
        discovered values alone.
    discovery : Aggregate
        The discovery reports' counts, under ``spec.wire_params``.
    spec : DiscoverySpec
        What the discovery reports carry.
    decoder : Decoder, optional
        Default ``Decoder()``.
    beam, significance_level, max_false, progress
        Passed to :func:`~rappor.analysis.discovery.discover`, with the candidates as the byte
        prior's known values (``prior_values``: they hold no report, so the search's control is
        unchanged).

    Returns
    -------
    DiscoverDecode

    Raises
    ------
    InvalidParameterError
        If no candidates were given and the search found no significant value (nothing to decode).
    """
    found = discover(discovery, spec, beam=beam, significance_level=significance_level, max_false=max_false,
                     progress=progress, prior_values=candidates.strings if candidates is not None else ())
    return _decode_with(aggregate, candidates, found.candidates(), decoder, found)


def _decode_with(aggregate: Aggregate, candidates: CandidateMap | None, significant: list[str],
                 decoder: Decoder | None, found: DiscoveryResult) -> DiscoverDecode:
    """Append the ``significant`` values that are not candidates, decode with and without them."""
    decoder = Decoder() if decoder is None else decoder
    params = aggregate.params
    known = set(candidates.strings) if candidates is not None else set()
    new = tuple(s for s in dict.fromkeys(significant) if s not in known)
    if candidates is None:
        if not new:
            msg = "the discovery found no significant value and no candidates were given: nothing to decode."
            raise InvalidParameterError(msg)
        cmap = hash_candidates(list(new), params)
    elif new:
        from scipy import sparse

        extra = hash_candidates(list(new), params)
        cmap = CandidateMap(params=params, strings=candidates.strings + extra.strings,
                            matrix=sparse.hstack([candidates.matrix, extra.matrix], format="csc"))
    else:
        cmap = candidates
    result = decoder.decode(aggregate, cmap)
    without = decoder.decode(aggregate, candidates) if candidates is not None and cmap is not candidates else None
    return DiscoverDecode(result=result, without=without, found=found, new_strings=new, candidate_map=cmap)
